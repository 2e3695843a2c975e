// Tokenizer load time and encoding speed on one core: pagoda_tokenizer_speed VOCAB.gguf|MODEL_DIR TEXT_FILE [rounds]
// Prints the median load time and the median encode throughput (MB/s of UTF-8 input) over the rounds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/hf_folder.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s VOCAB.gguf|MODEL_DIR TEXT_FILE [rounds]\n", argv[0]);
    return 2;
  }
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  std::ifstream in(argv[2], std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) {
    std::fprintf(stderr, "empty text file\n");
    return 2;
  }
  using clock = std::chrono::steady_clock;
  std::vector<double> load_s, encode_mb_s;
  size_t tokens = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = clock::now();
    auto file = pagoda::open_model_file(argv[1]);
    if (!file.ok()) {
      std::fprintf(stderr, "%s\n", file.error().message.c_str());
      return 1;
    }
    auto tok = pagoda::Tokenizer::from_gguf(*file);
    if (!tok.ok()) {
      std::fprintf(stderr, "%s\n", tok.error().message.c_str());
      return 1;
    }
    const auto t1 = clock::now();
    tokens = (*tok)->encode(text, false, false).size();
    const auto t2 = clock::now();
    load_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    encode_mb_s.push_back(static_cast<double>(text.size()) / 1e6 / std::chrono::duration<double>(t2 - t1).count());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("{\"vocab\":\"%s\",\"text_bytes\":%zu,\"tokens\":%zu,\"load_s\":%.4f,\"encode_mb_s\":%.2f,\"rounds\":%d}\n",
              argv[1], text.size(), tokens, median(load_s), median(encode_mb_s), rounds);
  return 0;
}
