// Prometheus metrics of the server, named like vLLM's with the prefix `pagoda:`. Recording is lock-free (atomics)
// and rendering reads only these atomics and the engine's last published stats snapshot, so a scrape never waits
// for an engine step.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace pagoda {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends HELP, TYPE, the cumulative _bucket lines, _sum and _count.
  void render(std::string& out, const std::string& name, const std::string& help, const std::string& labels) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // [bounds_.size() + 1], not cumulative; the last is +Inf
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0.0};
};

struct ServerMetrics {
  ServerMetrics();
  Histogram time_to_first_token;  // seconds, request arrival -> first token
  Histogram inter_token_latency;  // seconds between successive tokens of a choice
  Histogram e2e_request_latency;  // seconds, arrival -> last event, finished requests only
  std::atomic<int64_t> prompt_tokens{0};  // of requests accepted by the engine
  std::atomic<int64_t> finished_stop{0}, finished_length{0}, finished_abort{0}, finished_error{0};
  std::atomic<int64_t> rejected_queue_full{0};
};

struct MetricsContext {
  std::string model_name;
  int32_t block_size = 0;
  int64_t num_blocks = 0;
  bool vllm_names = false;  // also the four gauges routers read, under vLLM's names
};

// The whole /metrics page in the Prometheus text exposition format (version 0.0.4).
std::string render_metrics(const ServerMetrics& m, const EngineStats& engine, const MetricsContext& ctx);

// A Prometheus label value: backslash, double quote and newline escaped.
std::string prometheus_label_value(const std::string& v);

}  // namespace pagoda
