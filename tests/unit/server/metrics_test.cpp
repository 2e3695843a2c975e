#include "server/metrics.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(Histogram, BucketsAreCumulativeAndBoundsInclusive) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.1);  // le="0.1" includes its bound
  h.observe(0.5);
  h.observe(7.0);
  std::string out;
  h.render(out, "x", "help", "a=\"b\"");
  EXPECT_TRUE(has_line(out, "# TYPE x histogram"));
  EXPECT_TRUE(has_line(out, "x_bucket{a=\"b\",le=\"0.1\"} 2")) << out;
  EXPECT_TRUE(has_line(out, "x_bucket{a=\"b\",le=\"1\"} 3")) << out;
  EXPECT_TRUE(has_line(out, "x_bucket{a=\"b\",le=\"+Inf\"} 4")) << out;
  EXPECT_TRUE(has_line(out, "x_sum{a=\"b\"} 7.65")) << out;
  EXPECT_TRUE(has_line(out, "x_count{a=\"b\"} 4")) << out;
}

TEST(Metrics, PageHasTheRequiredFamiliesAndValues) {
  ServerMetrics m;
  m.prompt_tokens = 42;
  m.time_to_first_token.observe(0.02);
  EngineStats e;
  e.running = 3;
  e.waiting = 2;
  e.blocks.num_blocks = 100;
  e.blocks.used_blocks = 25;
  e.blocks.prefix_query_tokens = 64;
  e.blocks.prefix_hit_tokens = 48;
  e.preemptions = 5;
  e.generated_tokens = 1000;
  const std::string page = render_metrics(m, e, MetricsContext{"tiny\"model", 16, 100});
  const std::string label = "{model_name=\"tiny\\\"model\"}";
  EXPECT_TRUE(has_line(page, "pagoda:num_requests_running" + label + " 3")) << page;
  EXPECT_TRUE(has_line(page, "pagoda:num_requests_waiting" + label + " 2"));
  EXPECT_TRUE(has_line(page, "pagoda:kv_cache_usage_perc" + label + " 0.25"));
  EXPECT_TRUE(has_line(page, "pagoda:prefix_cache_queries_total" + label + " 64"));
  EXPECT_TRUE(has_line(page, "pagoda:prefix_cache_hits_total" + label + " 48"));
  EXPECT_TRUE(has_line(page, "pagoda:num_preemptions_total" + label + " 5"));
  EXPECT_TRUE(has_line(page, "pagoda:prompt_tokens_total" + label + " 42"));
  EXPECT_TRUE(has_line(page, "pagoda:generation_tokens_total" + label + " 1000"));
  EXPECT_TRUE(has_line(page, "# TYPE pagoda:num_preemptions_total counter"));
  EXPECT_TRUE(has_line(page, "pagoda:time_to_first_token_seconds_count" + label + " 1"));
  EXPECT_TRUE(has_line(page, "pagoda:cache_config_info{block_size=\"16\",num_gpu_blocks=\"100\"} 1"));
  EXPECT_NE(page.find("# TYPE pagoda:inter_token_latency_seconds histogram"), std::string::npos);
  EXPECT_NE(page.find("# TYPE pagoda:e2e_request_latency_seconds histogram"), std::string::npos);
}

}  // namespace
}  // namespace pagoda
