// Writes llama.cpp's greedy goldens in the format of ../shared/golden/*-greedy.jsonl: per prompt its token ids and
// N greedy steps, each with the top-5 (token id, logit) pairs, best first. Built against llama.cpp's public API
// (include/llama.h) from the goldens' commit, never linked into pagoda; bench/llama_golden/make_goldens.sh builds
// and runs it.
//
// Settings are those of every golden in ../shared: CPU, 1 thread, F32 K and V cache, flash attention off, the whole
// prompt decoded as one batch, then one token per step (the greedy choice, EOS included: the steps go on after it).
//
// Usage: llama_golden MODEL.gguf PROMPTS.jsonl OUT.jsonl [STEPS=64]
//   PROMPTS.jsonl: one {"prompt": "..."} per line, tokenized with the model's add-BOS setting and special tokens
//   parsed (so ChatML's <|im_start|> is one token).
//        llama_golden MODEL.gguf --tokenize TEXTS.inp OUT.out
//   llama.cpp's tokenizer test vectors for this model: TEXTS.inp holds texts separated by lines
//   "__ggml_vocab_test__" (../shared/vocab/*.inp); OUT gets one line of ids per text, no BOS, special-token text
//   not parsed (as llama.cpp's test-tokenizer-0 writes its .out files).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "llama.h"
#include "nlohmann/json.hpp"

static void die(const std::string& what) {
  std::fprintf(stderr, "llama_golden: %s\n", what.c_str());
  std::exit(1);
}

int main(int argc, char** argv) {
  if (argc < 4) die("usage: llama_golden MODEL.gguf PROMPTS.jsonl OUT.jsonl [STEPS=64]");
  const int steps = argc > 4 ? std::atoi(argv[4]) : 64;
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) die(std::string("cannot load ") + argv[1]);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int32_t n_vocab = llama_vocab_n_tokens(vocab);
  if (std::string(argv[2]) == "--tokenize") {
    std::ifstream in(argv[3], std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::ofstream out(argv[4]);
    size_t pos = 0;
    int texts = 0;
    while (pos < all.size()) {
      size_t end = all.find(sep, pos);
      if (end == std::string::npos) end = all.size();
      const std::string text = all.substr(pos, end - pos);
      pos = end + sep.size();
      std::vector<llama_token> ids(text.size() * 4 + 16);
      const int32_t n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                                       static_cast<int32_t>(ids.size()), /*add_special=*/false, /*parse_special=*/false);
      if (n < 0) die("tokenize failed");
      for (int32_t i = 0; i < n; ++i) out << (i ? " " : "") << ids[i];
      out << "\n";
      ++texts;
    }
    std::fprintf(stderr, "llama_golden: %d texts tokenized\n", texts);
    return 0;
  }

  std::ifstream in(argv[2]);
  std::ofstream out(argv[3]);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::string prompt = nlohmann::json::parse(line).at("prompt").get<std::string>();
    std::vector<llama_token> ids(prompt.size() + 8);
    const int32_t n = llama_tokenize(vocab, prompt.data(), static_cast<int32_t>(prompt.size()), ids.data(),
                                     static_cast<int32_t>(ids.size()), /*add_special=*/true, /*parse_special=*/true);
    if (n < 0) die("tokenize failed");
    ids.resize(n);

    // A fresh context per prompt: nothing carries over.
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = 2048;
    cp.n_ubatch = 2048;
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    // LLAMA_GOLDEN_KV=f16: the calibration run (llama.cpp against its own F32-KV goldens, tests/golden/data/README.md)
    const char* kv = std::getenv("LLAMA_GOLDEN_KV");
    cp.type_k = cp.type_v = kv && std::string(kv) == "f16" ? GGML_TYPE_F16 : GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) die("cannot create a context");

    nlohmann::json record;
    record["prompt"] = prompt;
    record["prompt_ids"] = ids;
    nlohmann::json records = nlohmann::json::array();
    std::vector<llama_token> feed = ids;
    for (int s = 0; s < steps; ++s) {
      if (llama_decode(ctx, llama_batch_get_one(feed.data(), static_cast<int32_t>(feed.size()))) != 0)
        die("decode failed");
      const float* logits = llama_get_logits_ith(ctx, -1);
      std::vector<int32_t> order(n_vocab);
      for (int32_t i = 0; i < n_vocab; ++i) order[i] = i;
      // Best first; equal logits by lower id (what an argmax scanning upwards picks).
      std::partial_sort(order.begin(), order.begin() + 5, order.end(), [&](int32_t a, int32_t b) {
        return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
      });
      nlohmann::json top = nlohmann::json::array();
      for (int k = 0; k < 5; ++k) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.6f", logits[order[k]]);
        top.push_back({order[k], nlohmann::json::parse(buf)});
      }
      records.push_back({{"top", top}});
      feed.assign(1, order[0]);
    }
    record["steps"] = records;
    out << record.dump() << "\n";
    llama_free(ctx);
    std::fprintf(stderr, "llama_golden: prompt %zu tokens, %d steps\n", ids.size(), steps);
  }
  llama_model_free(model);
  return 0;
}
