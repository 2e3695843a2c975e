#include "loadgen/run_summary.h"

#include <gtest/gtest.h>

namespace pagoda::loadgen {
namespace {

RequestRecord ok(double ttft_s, double e2e_s, int64_t tokens) {
  RequestRecord r;
  r.input_tokens = 10;
  r.ttft_s = ttft_s;
  r.e2e_s = e2e_s;
  r.output_tokens = tokens;
  for (int64_t i = 1; i < tokens; ++i) r.itl_s.push_back((e2e_s - ttft_s) / static_cast<double>(tokens - 1));
  return r;
}

RequestRecord failed(const std::string& message) {
  RequestRecord r;
  r.input_tokens = 10;
  r.error = message;
  return r;
}

// TTFT 100/200/300 ms; TPOT 10/20/10 ms; one request of a single token (no TPOT); two failures.
std::vector<RequestRecord> sample() {
  return {ok(0.1, 0.1 + 0.01 * 10, 11), ok(0.2, 0.2 + 0.02 * 10, 11), ok(0.3, 0.3 + 0.01 * 10, 11), ok(0.05, 0.05, 1),
          failed("HTTP 400: bad"),      failed("HTTP 400: bad")};
}

TEST(RunSummary, CountsThroughputAndLatencies) {
  const RunSummary s = summarize_run(4, sample(), 2.0, Slo{});
  EXPECT_EQ(s.concurrency, 4);
  EXPECT_EQ(s.completed, 4);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.total_input_tokens, 40);
  EXPECT_EQ(s.total_output_tokens, 34);
  EXPECT_DOUBLE_EQ(s.request_throughput, 2.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 17.0);
  EXPECT_EQ(s.ttft_ms.count, 4u);
  EXPECT_NEAR(s.ttft_ms.mean, 162.5, 1e-9);
  EXPECT_EQ(s.tpot_ms.count, 3u);  // the single-token request has none
  EXPECT_NEAR(s.tpot_ms.median, 10, 1e-9);
  EXPECT_EQ(s.itl_ms.count, 30u);
  EXPECT_FALSE(s.goodput);  // no SLO given
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].message, "HTTP 400: bad");
  EXPECT_EQ(s.errors[0].count, 2);
}

TEST(RunSummary, GoodputCountsRequestsMeetingEveryGivenSlo) {
  // TTFT <= 250 ms: requests 1, 2, 4.
  EXPECT_DOUBLE_EQ(*summarize_run(1, sample(), 2.0, Slo{250.0, std::nullopt}).goodput, 1.5);
  // TPOT <= 15 ms: requests 1, 3, and 4 (no TPOT, so it meets any TPOT objective).
  EXPECT_DOUBLE_EQ(*summarize_run(1, sample(), 2.0, Slo{std::nullopt, 15.0}).goodput, 1.5);
  // Both: requests 1 and 4.
  EXPECT_DOUBLE_EQ(*summarize_run(1, sample(), 2.0, Slo{250.0, 15.0}).goodput, 1.0);
  // Nothing meets 1 ms; failures never count.
  EXPECT_DOUBLE_EQ(*summarize_run(1, sample(), 2.0, Slo{1.0, std::nullopt}).goodput, 0.0);
  EXPECT_FALSE(meets_slo(failed("x"), Slo{}));
}

TEST(RunSummary, KeepsTheFirstDistinctErrors) {
  std::vector<RequestRecord> records;
  for (int i = 0; i < 10; ++i) records.push_back(failed("error " + std::to_string(i % 7)));
  const RunSummary s = summarize_run(1, records, 1.0, Slo{});
  EXPECT_EQ(s.failed, 10);
  ASSERT_EQ(s.errors.size(), kMaxErrors);
  EXPECT_EQ(s.errors[0].message, "error 0");
  EXPECT_EQ(s.errors[0].count, 2);  // errors 0 and 7
  EXPECT_EQ(s.errors[4].count, 1);
  EXPECT_EQ(s.ttft_ms.count, 0u);
}

TEST(RunSummary, CountsWhatTheServerReportedOfItsPromptCache) {
  auto records = sample();
  records[0].cached_prompt_tokens = 0;   // reported, a miss
  records[1].cached_prompt_tokens = 32;  // a hit
  records[2].cached_prompt_tokens = 16;  // a hit
  records[4].cached_prompt_tokens = 48;  // failed: not counted
  const RunSummary s = summarize_run(1, records, 1.0, Slo{});
  EXPECT_EQ(s.cache_reported, 3);
  EXPECT_EQ(s.cache_hit_requests, 2);
  EXPECT_EQ(s.total_cached_tokens, 48);
  const auto j = to_json(s);
  EXPECT_EQ(j["cache"]["reported"], 3);
  EXPECT_EQ(j["cache"]["hit_requests"], 2);
  EXPECT_EQ(j["cache"]["cached_tokens"], 48);
}

TEST(RunSummary, JsonHasEveryKeyAndNullForEmptySamples) {
  auto j = to_json(summarize_run(2, {failed("boom")}, 1.0, Slo{100.0, std::nullopt}));
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"concurrency", "completed", "failed", "duration_s", "request_throughput",
                                            "output_throughput", "total_input_tokens", "total_output_tokens", "cache",
                                            "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "goodput", "errors"}));
  EXPECT_TRUE(j["ttft_ms"].is_null());
  EXPECT_EQ(j["errors"][0]["message"], "boom");
  auto with_data = to_json(summarize_run(2, sample(), 1.0, Slo{}));
  EXPECT_FALSE(with_data.contains("goodput"));
  EXPECT_TRUE(with_data["e2e_ms"].contains("p99"));
}

}  // namespace
}  // namespace pagoda::loadgen
