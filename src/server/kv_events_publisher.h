// KV-cache events on the wire, as vLLM replicas publish them, so that KV-aware routers (llm-d's KV-cache indexer,
// SGLang Model Gateway) index a pagoda replica unchanged (`pagoda serve --kv-events-config JSON`).
//
// ZMQ PUB, three frames per batch: topic, sequence number (8 bytes big-endian, from 0, +1 per batch), and the
// msgpack payload [ts (float seconds), [events...], data_parallel_rank (0)]. One batch per engine step that
// stored or dropped blocks. Events in the map form, keyed by "type" (the default, as the issue names it):
//   {"type": "BlockStored", "block_hashes": [u64...], "parent_block_hash": u64|nil, "token_ids": [...],
//    "block_size": n, "lora_id": nil, "medium": "CPU", "lora_name": nil}
//   {"type": "BlockRemoved", "block_hashes": [u64...], "medium": "CPU"}
//   {"type": "AllBlocksCleared"}
// or, with "event_form": "array", the tagged positional form: ["BlockStored", hashes, parent, tokens, block_size,
// lora_id, medium, lora_name], ["BlockRemoved", hashes, medium], ["AllBlocksCleared"]. That is what vLLM's msgspec
// structs (array_like, tagged) put on the wire, and the only form llm-d's indexer (v0.5.0) decodes: configure it
// for llm-d (docs/scale-out.md).
// Replay (replay_endpoint): a ROUTER socket answers [identity, "", seq (8 bytes big-endian)] with every buffered
// batch from seq on, as [identity, "", seq, payload], then the end marker [identity, "", -1, ""], as vLLM does;
// the last buffer_steps batches are kept.
// The engine thread only queues (never blocks, never touches a socket); the publisher's own thread encodes and
// sends. A full queue (max_queue_size batches) drops the batch and counts it; a slow subscriber is ZMQ's concern
// (PUB drops beyond its high-water mark `hwm`).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kv/kv_cache_events.h"
#include "util/result.h"

namespace pagoda {

// vLLM's KVEventsConfig fields, plus pagoda's `medium` and `event_form`.
struct KvEventsConfig {
  bool enable_kv_cache_events = false;
  std::string publisher = "zmq";           // "zmq" or "null" (events computed, nothing sent)
  std::string endpoint = "tcp://*:5557";   // bound when it holds '*', '::', ipc:// or inproc://, else connected
  std::string replay_endpoint;             // "" : no replay socket
  int64_t buffer_steps = 10000;            // batches kept for replay
  int32_t hwm = 100000;                    // the PUB socket's send high-water mark
  int64_t max_queue_size = 100000;         // batches waiting for the publisher thread; beyond: dropped
  std::string topic;                       // the first frame ("" by default, as vLLM)
  std::string medium = "CPU";
  bool legacy_array_form = false;          // "event_form": "array"

  // Errors name the field (an unknown one too).
  static Result<KvEventsConfig> parse(const std::string& json_text);
};

// Whether a ZMQ endpoint is bound (vLLM's rule) rather than connected.
bool kv_endpoint_binds(const std::string& endpoint);

// The msgpack payload of one batch (exposed for tests).
std::string encode_kv_event_batch(const std::vector<KvCacheEvent>& events, double ts, const KvEventsConfig& config);

class KvEventsPublisher {
 public:
  // Opens the sockets (an error names the endpoint) and starts the thread.
  static Result<std::unique_ptr<KvEventsPublisher>> start(const KvEventsConfig& config);
  ~KvEventsPublisher();
  KvEventsPublisher(const KvEventsPublisher&) = delete;
  KvEventsPublisher& operator=(const KvEventsPublisher&) = delete;

  // Any thread, never blocks: queues one step's events.
  void publish(std::vector<KvCacheEvent>&& events);

  int64_t published_batches() const { return published_.load(std::memory_order_relaxed); }
  int64_t dropped_batches() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  explicit KvEventsPublisher(const KvEventsConfig& config);
  void run();

  KvEventsConfig config_;
  struct Sockets;
  std::unique_ptr<Sockets> sockets_;
  std::mutex mu_;
  std::condition_variable cv_;
  struct StampedBatch {
    double ts = 0;  // seconds since the epoch when publish() took the batch
    std::vector<KvCacheEvent> events;
  };
  std::deque<StampedBatch> queue_;
  bool stop_ = false;
  std::thread thread_;
  std::atomic<int64_t> published_{0}, dropped_{0};
};

}  // namespace pagoda
