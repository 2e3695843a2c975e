// llama.cpp's tokenizer test vectors (../shared/vocab/ggml-vocab-*.gguf.inp/.out), read as its test does.
#pragma once

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/vocab.h"

namespace pagoda {

inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct VectorCase {
  std::string text;
  std::vector<TokenId> ids;
};

// Mirrors read_tests() in llama.cpp's tests/test-tokenizer-0.cpp: texts from inp_path, ids from out_path.
inline std::vector<VectorCase> read_vectors(const std::string& inp_path, const std::string& out_path) {
  const std::string raw = read_text_file(inp_path);
  std::vector<std::string> texts;
  const std::string sep = "\n__ggml_vocab_test__\n";
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(raw.substr(pos));
      break;
    }
    texts.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::ifstream out(out_path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(out, line);) lines.push_back(line);
  if (texts.size() != lines.size()) return {};

  std::vector<VectorCase> cases;
  for (size_t i = 0; i < texts.size(); ++i) {
    VectorCase c{texts[i], {}};
    std::istringstream ids(lines[i]);
    for (long id; ids >> id;) c.ids.push_back(static_cast<TokenId>(id));
    cases.push_back(std::move(c));
  }
  return cases;
}
inline std::vector<VectorCase> read_vectors(const std::string& vocab_path) {
  return read_vectors(vocab_path + ".inp", vocab_path + ".out");
}

}  // namespace pagoda
