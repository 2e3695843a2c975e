#include "server/kv_events_publisher.h"

#define MSGPACK_NO_BOOST 1
#include <msgpack.hpp>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <chrono>

namespace pagoda {
namespace {

using json = nlohmann::json;

std::string be64(int64_t v) {
  std::string out(8, '\0');
  const auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((u >> (56 - 8 * i)) & 0xff);
  return out;
}

int64_t from_be64(const zmq::message_t& m) {
  if (m.size() != 8) return -2;
  uint64_t u = 0;
  const auto* p = static_cast<const unsigned char*>(m.data());
  for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];
  return static_cast<int64_t>(u);
}

void pack_str(msgpack::packer<msgpack::sbuffer>& pk, const std::string& s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

void pack_hashes(msgpack::packer<msgpack::sbuffer>& pk, const std::vector<uint64_t>& hashes) {
  pk.pack_array(static_cast<uint32_t>(hashes.size()));
  for (uint64_t h : hashes) pk.pack_uint64(h);
}

// An event's head: {"type": TYPE, ...} with `fields` more keys (map form) or [TYPE, ...] (positional form).
void pack_head(msgpack::packer<msgpack::sbuffer>& pk, bool map, uint32_t fields, const char* type) {
  if (map) {
    pk.pack_map(fields + 1);
    pack_str(pk, "type");
  } else {
    pk.pack_array(fields + 1);
  }
  pack_str(pk, type);
}

// A field's key (map form only: the positional form has the values alone, in order).
void pack_key(msgpack::packer<msgpack::sbuffer>& pk, bool map, const char* key) {
  if (map) pack_str(pk, key);
}

void pack_event(msgpack::packer<msgpack::sbuffer>& pk, const KvCacheEvent& e, const KvEventsConfig& c) {
  const bool map = !c.legacy_array_form;
  switch (e.kind) {
    case KvCacheEvent::Kind::kStored:
      pack_head(pk, map, 7, "BlockStored");
      pack_key(pk, map, "block_hashes");
      pack_hashes(pk, e.block_hashes);
      pack_key(pk, map, "parent_block_hash");
      if (e.parent_hash) pk.pack_uint64(*e.parent_hash);
      else pk.pack_nil();
      pack_key(pk, map, "token_ids");
      pk.pack_array(static_cast<uint32_t>(e.token_ids.size()));
      for (int32_t t : e.token_ids) pk.pack_int32(t);
      pack_key(pk, map, "block_size");
      pk.pack_int32(e.block_size);
      pack_key(pk, map, "lora_id");
      pk.pack_nil();
      pack_key(pk, map, "medium");
      pack_str(pk, c.medium);
      pack_key(pk, map, "lora_name");
      pk.pack_nil();
      return;
    case KvCacheEvent::Kind::kRemoved:
      pack_head(pk, map, 2, "BlockRemoved");
      pack_key(pk, map, "block_hashes");
      pack_hashes(pk, e.block_hashes);
      pack_key(pk, map, "medium");
      pack_str(pk, c.medium);
      return;
    case KvCacheEvent::Kind::kCleared:
      pack_head(pk, map, 0, "AllBlocksCleared");
      return;
  }
}

void open_socket(zmq::socket_t& s, const std::string& endpoint) {
  if (kv_endpoint_binds(endpoint)) s.bind(endpoint);
  else s.connect(endpoint);
}

}  // namespace

bool kv_endpoint_binds(const std::string& e) {
  return e.find('*') != std::string::npos || e.find("::") != std::string::npos || e.rfind("ipc://", 0) == 0 ||
         e.rfind("inproc://", 0) == 0;
}

Result<KvEventsConfig> KvEventsConfig::parse(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return make_error("--kv-events-config must be a JSON object");
  KvEventsConfig c;
  auto field_error = [](const std::string& key, const std::string& what) {
    return make_error("--kv-events-config: '" + key + "' " + what);
  };
  for (const auto& [key, v] : j.items()) {
    if (v.is_null()) continue;
    if (key == "enable_kv_cache_events") {
      if (!v.is_boolean()) return field_error(key, "must be true or false");
      c.enable_kv_cache_events = v.get<bool>();
    } else if (key == "publisher") {
      if (!v.is_string() || (v != "zmq" && v != "null")) return field_error(key, "must be \"zmq\" or \"null\"");
      c.publisher = v.get<std::string>();
    } else if (key == "endpoint" || key == "replay_endpoint" || key == "topic" || key == "medium") {
      if (!v.is_string()) return field_error(key, "must be a string");
      (key == "endpoint" ? c.endpoint : key == "replay_endpoint" ? c.replay_endpoint : key == "topic" ? c.topic : c.medium) =
          v.get<std::string>();
    } else if (key == "buffer_steps" || key == "hwm" || key == "max_queue_size") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (int64_t{1} << 30))
        return field_error(key, "must be an integer from 1 to 2^30");
      const int64_t n = v.get<int64_t>();
      if (key == "buffer_steps") c.buffer_steps = n;
      else if (key == "hwm") c.hwm = static_cast<int32_t>(n);
      else c.max_queue_size = n;
    } else if (key == "event_form") {
      if (!v.is_string() || (v != "map" && v != "array")) return field_error(key, "must be \"map\" or \"array\"");
      c.legacy_array_form = v == "array";
    } else {
      return field_error(key, "is not a field pagoda knows (enable_kv_cache_events, publisher, endpoint, "
                              "replay_endpoint, buffer_steps, hwm, max_queue_size, topic, medium, event_form)");
    }
  }
  if (c.endpoint.empty()) return field_error("endpoint", "must not be empty");
  if (c.medium.empty()) return field_error("medium", "must not be empty");
  return c;
}

std::string encode_kv_event_batch(const std::vector<KvCacheEvent>& events, double ts, const KvEventsConfig& config) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(&buf);
  pk.pack_array(3);
  pk.pack_double(ts);
  pk.pack_array(static_cast<uint32_t>(events.size()));
  for (const KvCacheEvent& e : events) pack_event(pk, e, config);
  pk.pack_int32(0);  // data_parallel_rank
  return std::string(buf.data(), buf.size());
}

struct KvEventsPublisher::Sockets {
  zmq::context_t context{1};
  zmq::socket_t pub{context, zmq::socket_type::pub};
  std::optional<zmq::socket_t> replay;
};

KvEventsPublisher::KvEventsPublisher(const KvEventsConfig& config) : config_(config) {}

Result<std::unique_ptr<KvEventsPublisher>> KvEventsPublisher::start(const KvEventsConfig& config) {
  std::unique_ptr<KvEventsPublisher> p(new KvEventsPublisher(config));
  if (config.publisher == "zmq") {
    p->sockets_ = std::make_unique<Sockets>();
    try {
      p->sockets_->pub.set(zmq::sockopt::sndhwm, config.hwm);
      p->sockets_->pub.set(zmq::sockopt::linger, 0);
      open_socket(p->sockets_->pub, config.endpoint);
    } catch (const zmq::error_t& e) {
      return make_error("--kv-events-config: cannot open the event endpoint '" + config.endpoint + "': " + e.what());
    }
    if (!config.replay_endpoint.empty()) {
      try {
        p->sockets_->replay.emplace(p->sockets_->context, zmq::socket_type::router);
        p->sockets_->replay->set(zmq::sockopt::linger, 0);
        open_socket(*p->sockets_->replay, config.replay_endpoint);
      } catch (const zmq::error_t& e) {
        return make_error("--kv-events-config: cannot open the replay endpoint '" + config.replay_endpoint +
                          "': " + e.what());
      }
    }
  }
  p->thread_ = std::thread([raw = p.get()] { raw->run(); });
  return p;
}

KvEventsPublisher::~KvEventsPublisher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void KvEventsPublisher::publish(std::vector<KvCacheEvent>&& events) {
  {
    std::lock_guard lock(mu_);
    if (static_cast<int64_t>(queue_.size()) >= config_.max_queue_size) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // Stamped here, when the engine hands over the step's events (its blocks are committed), as vLLM stamps its
    // EventBatch in the scheduler: a subscriber's receive time minus ts is the whole delay, queue included.
    const double ts = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    queue_.push_back({ts, std::move(events)});
  }
  cv_.notify_one();
}

void KvEventsPublisher::run() {
  std::deque<std::pair<int64_t, std::string>> buffered;  // (seq, payload), the last buffer_steps batches
  int64_t seq = 0;
  for (;;) {
    StampedBatch batch;
    bool have = false;
    {
      std::unique_lock lock(mu_);
      // With a replay socket the loop also wakes to answer requests.
      cv_.wait_for(lock, std::chrono::milliseconds(10), [this] { return stop_ || !queue_.empty(); });
      if (!queue_.empty()) {
        batch = std::move(queue_.front());
        queue_.pop_front();
        have = true;
      } else if (stop_) {
        return;
      }
    }
    if (have) {
      std::string payload = encode_kv_event_batch(batch.events, batch.ts, config_);
      if (sockets_) {
        try {
          sockets_->pub.send(zmq::buffer(config_.topic), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
          sockets_->pub.send(zmq::buffer(be64(seq)), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
          sockets_->pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
        } catch (const zmq::error_t&) {
          // A PUB socket drops what it cannot send; nothing to do on the engine's behalf.
        }
      }
      buffered.emplace_back(seq, std::move(payload));
      while (static_cast<int64_t>(buffered.size()) > config_.buffer_steps) buffered.pop_front();
      ++seq;
      published_.fetch_add(1, std::memory_order_relaxed);
    }
    if (!sockets_ || !sockets_->replay) continue;
    zmq::socket_t& router = *sockets_->replay;
    for (;;) {  // every pending replay request
      std::vector<zmq::message_t> frames;
      zmq::message_t m;
      try {
        if (!router.recv(m, zmq::recv_flags::dontwait)) break;
        frames.push_back(std::move(m));
        while (router.get(zmq::sockopt::rcvmore)) {
          zmq::message_t more;
          (void)router.recv(more, zmq::recv_flags::none);
          frames.push_back(std::move(more));
        }
      } catch (const zmq::error_t&) {
        break;
      }
      if (frames.size() != 3) continue;  // [identity, "", seq]; anything else is ignored
      const int64_t from = from_be64(frames[2]);
      if (from < 0) continue;
      const std::string identity(static_cast<const char*>(frames[0].data()), frames[0].size());
      auto reply = [&](int64_t s, const std::string& payload) {
        router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        router.send(zmq::buffer(std::string()), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        router.send(zmq::buffer(be64(s)), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        router.send(zmq::buffer(payload), zmq::send_flags::dontwait);
      };
      try {
        for (const auto& [s, payload] : buffered)
          if (s >= from) reply(s, payload);
        reply(-1, std::string());  // the end marker
      } catch (const zmq::error_t&) {
      }
    }
  }
}

}  // namespace pagoda
