// A loaded model: the mapped GGUF file (or a Hugging Face folder presented as one, model/hf_folder.h), its
// hyperparameters, weight views and tokenizer.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "io/gguf_file.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"
#include "util/result.h"

namespace pagoda {

class Model {
 public:
  // A .gguf file, or a directory holding a Hugging Face model.
  static Result<std::unique_ptr<Model>> load(const std::string& path);

  const GgufFile& file() const { return file_; }
  const ModelHParams& hparams() const { return hparams_; }
  const ModelWeights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::string& format() const { return format_; }  // "gguf" or "huggingface"

 private:
  Model(GgufFile file) : file_(std::move(file)) {}
  GgufFile file_;
  std::string format_;
  ModelHParams hparams_;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace pagoda
