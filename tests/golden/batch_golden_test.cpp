// Every prompt of ../shared/golden/stories260K-greedy.jsonl, all submitted at once through `pagoda batch`,
// reproduces llama.cpp's greedy tokens up to the first near-tie (the foundation's golden rule).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "golden_shared.h"

namespace pagoda {
namespace {

TEST(BatchGolden, AllPromptsAtOnceReproduceLlamaCppGreedyTokens) {
#ifdef PAGODA_NO_BINARY
  GTEST_SKIP() << "the sanitizer tree builds no pagoda binary (its engine path runs in-process in the gate tests); "
                  "the release phase runs this test";
#endif
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("pagoda_batch_golden_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ifstream golden(kShared + "/golden/stories260K-greedy.jsonl");
  ASSERT_TRUE(golden) << "missing golden file";
  std::vector<nlohmann::json> cases;
  {
    std::ofstream req(dir / "requests.jsonl");
    std::string line;
    while (std::getline(golden, line)) {
      if (line.empty()) continue;
      cases.push_back(nlohmann::json::parse(line));
      const auto& c = cases.back();
      nlohmann::json r = {{"id", static_cast<int>(cases.size() - 1)},
                          {"prompt", c.at("prompt")},
                          {"max_tokens", c.at("steps").size()},
                          {"temperature", 0}};
      req << r.dump() << "\n";
    }
  }
  ASSERT_GE(cases.size(), 10u);
  // A small step budget and block size so that the prompts are chunked and share the pool.
  const std::string cmd = std::string("'") + PAGODA_BINARY + "' batch '" + kShared +
                          "/models/stories260K.gguf' --input '" + (dir / "requests.jsonl").string() +
                          "' --output '" + (dir / "results.jsonl").string() +
                          "' --block-size 16 --max-num-batched-tokens 32 -t 2 2> '" + (dir / "stderr.txt").string() +
                          "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream res(dir / "results.jsonl");
  std::string line;
  size_t i = 0;
  while (std::getline(res, line)) {
    ASSERT_LT(i, cases.size());
    const auto r = nlohmann::json::parse(line);
    const auto& c = cases[i];
    ASSERT_EQ(r.at("id").get<size_t>(), i);
    ASSERT_FALSE(r.contains("error")) << r.dump();
    EXPECT_EQ(r.at("prompt_ids"), c.at("prompt_ids")) << c.at("prompt");
    const auto ids = r.at("ids").get<std::vector<int32_t>>();
    size_t compared = 0;
    for (size_t s = 0; s < c.at("steps").size() && s < ids.size(); ++s) {
      const auto& top = c.at("steps")[s].at("top");
      if (top[0][1].get<float>() - top[1][1].get<float>() < kNearTieMargin) break;
      ASSERT_EQ(ids[s], top[0][0].get<int32_t>()) << c.at("prompt") << " diverges at step " << s;
      ++compared;
    }
    EXPECT_GT(compared, 0u) << c.at("prompt");
    ++i;
  }
  EXPECT_EQ(i, cases.size());
  std::ifstream err(dir / "stderr.txt");
  std::string all((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("\"peak_blocks_in_use\""), std::string::npos) << all;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pagoda
