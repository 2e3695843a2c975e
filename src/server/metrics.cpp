#include "server/metrics.h"

#include <algorithm>
#include <charconv>

namespace pagoda {
namespace {

// The shortest text that reads back as the same double (0.3, not 0.29999999999999999).
std::string number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}


void metric(std::string& out, const char* type, const std::string& name, const std::string& help,
            const std::string& labels, double value) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  out += name + "{" + labels + "} " + number(value) + "\n";
}

}  // namespace

std::string prometheus_label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double value) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();  // value <= bound
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help,
                       const std::string& labels) const {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += name + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  // _count is the +Inf bucket, so the page is self-consistent even while observations race with the scrape.
  out += name + "_sum{" + labels + "} " + number(sum_.load(std::memory_order_relaxed)) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(cumulative) + "\n";
}

// Bucket bounds as in vLLM, so dashboards built for it read pagoda's histograms the same way.
ServerMetrics::ServerMetrics()
    : time_to_first_token({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                           20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}),
      inter_token_latency({0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                           20.0, 40.0, 80.0}),
      e2e_request_latency({0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
                           240.0, 480.0, 960.0, 1920.0, 7680.0}) {}

std::string render_metrics(const ServerMetrics& m, const EngineStats& e, const MetricsContext& ctx) {
  const std::string model = "model_name=\"" + prometheus_label_value(ctx.model_name) + "\"";
  std::string out;
  out.reserve(8192);
  metric(out, "gauge", "pagoda:num_requests_running", "Sequences in the running batch.", model, e.running);
  metric(out, "gauge", "pagoda:num_requests_waiting", "Sequences waiting to be scheduled.", model, e.waiting);
  metric(out, "gauge", "pagoda:kv_cache_usage_perc", "Fraction of KV blocks in use (1 = all).", model,
         e.blocks.usage());
  metric(out, "counter", "pagoda:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", model,
         static_cast<double>(e.blocks.prefix_query_tokens));
  metric(out, "counter", "pagoda:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", model,
         static_cast<double>(e.blocks.prefix_hit_tokens));
  metric(out, "counter", "pagoda:num_preemptions_total", "Sequences preempted (recomputed later).", model,
         static_cast<double>(e.preemptions));
  metric(out, "counter", "pagoda:prompt_tokens_total", "Prompt tokens of the requests the engine accepted.", model,
         static_cast<double>(m.prompt_tokens.load(std::memory_order_relaxed)));
  metric(out, "counter", "pagoda:generation_tokens_total", "Tokens generated.", model,
         static_cast<double>(e.generated_tokens));
  // Warm start (zero when it is off): lookups that hit or missed, and the time the hits' parts took.
  metric(out, "counter", "pagoda:warm_start_hits_total", "Requests whose first token came from warm start.", model,
         static_cast<double>(e.warm_start.hits));
  metric(out, "gauge", "pagoda:warm_start_pending", "Requests waiting for their warm-start decision (worker thread).",
         model, static_cast<double>(e.warm_start_pending));
  metric(out, "counter", "pagoda:warm_start_misses_total", "Warm-start lookups that fell back to a cold start.", model,
         static_cast<double>(e.warm_start.misses));
  metric(out, "counter", "pagoda:warm_start_search_seconds_total", "Warm start: embedding and library search time.",
         model, e.warm_start.search_s);
  metric(out, "counter", "pagoda:warm_start_projection_seconds_total", "Warm start: summary projection time.", model,
         e.warm_start.projection_s);
  metric(out, "counter", "pagoda:warm_start_forward_seconds_total", "Warm start: slot forward time.", model,
         e.warm_start.forward_s);
  out += "# HELP pagoda:request_success_total Requests finished, by finish reason.\n"
         "# TYPE pagoda:request_success_total counter\n";
  const std::pair<const char*, const std::atomic<int64_t>*> reasons[] = {
      {"stop", &m.finished_stop}, {"length", &m.finished_length}, {"abort", &m.finished_abort}};
  for (const auto& [reason, count] : reasons)
    out += "pagoda:request_success_total{" + model + ",finished_reason=\"" + reason + "\"} " +
           std::to_string(count->load(std::memory_order_relaxed)) + "\n";
  metric(out, "counter", "pagoda:request_failure_total", "Requests that ended with an engine error.", model,
         static_cast<double>(m.finished_error.load(std::memory_order_relaxed)));
  metric(out, "counter", "pagoda:request_rejected_queue_full_total", "Requests answered 429 (queue full).", model,
         static_cast<double>(m.rejected_queue_full.load(std::memory_order_relaxed)));
  m.time_to_first_token.render(out, "pagoda:time_to_first_token_seconds", "Time to first token in seconds.", model);
  m.inter_token_latency.render(out, "pagoda:inter_token_latency_seconds", "Time between tokens in seconds.", model);
  m.e2e_request_latency.render(out, "pagoda:e2e_request_latency_seconds",
                               "End-to-end latency of finished requests in seconds.", model);
  out += "# HELP pagoda:cache_config_info Information of the KV cache configuration.\n"
         "# TYPE pagoda:cache_config_info gauge\n"
         "pagoda:cache_config_info{block_size=\"" +
         std::to_string(ctx.block_size) + "\",num_gpu_blocks=\"" + std::to_string(ctx.num_blocks) + "\"} 1\n";
  if (ctx.vllm_names) {
    // What llm-d's endpoint picker and other routers configured for vLLM read, the same values as above.
    metric(out, "gauge", "vllm:num_requests_running", "Sequences in the running batch.", model, e.running);
    metric(out, "gauge", "vllm:num_requests_waiting", "Sequences waiting to be scheduled.", model, e.waiting);
    metric(out, "gauge", "vllm:kv_cache_usage_perc", "Fraction of KV blocks in use (1 = all).", model,
           e.blocks.usage());
    out += "# HELP vllm:cache_config_info Information of the KV cache configuration.\n"
           "# TYPE vllm:cache_config_info gauge\n"
           "vllm:cache_config_info{block_size=\"" +
           std::to_string(ctx.block_size) + "\",num_gpu_blocks=\"" + std::to_string(ctx.num_blocks) + "\"} 1\n";
  }
  return out;
}

}  // namespace pagoda
