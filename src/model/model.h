// A loaded model: the mapped GGUF file, its hyperparameters, weight views and tokenizer.
#pragma once

#include <memory>
#include <string>

#include "io/gguf_file.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"
#include "util/result.h"

namespace pagoda {

class Model {
 public:
  static Result<std::unique_ptr<Model>> load(const std::string& path);

  const GgufFile& file() const { return file_; }
  const ModelHParams& hparams() const { return hparams_; }
  const ModelWeights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  Model(GgufFile file) : file_(std::move(file)) {}
  GgufFile file_;
  ModelHParams hparams_;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace pagoda
