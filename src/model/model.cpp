#include "model/model.h"

namespace pagoda {

Result<std::unique_ptr<Model>> Model::load(const std::string& path) {
  auto file = GgufFile::open(path);
  if (!file.ok()) return file.error();
  std::unique_ptr<Model> m(new Model(std::move(*file)));
  auto hp = read_hparams(m->file_);
  if (!hp.ok()) return make_error(path + ": " + hp.error().message);
  m->hparams_ = std::move(*hp);
  auto w = load_weights(m->file_, m->hparams_);
  if (!w.ok()) return make_error(path + ": " + w.error().message);
  m->weights_ = std::move(*w);
  auto tok = Tokenizer::from_gguf(m->file_);
  if (!tok.ok()) return make_error(path + ": " + tok.error().message);
  m->tokenizer_ = std::move(*tok);
  if (m->tokenizer_->n_vocab() != m->hparams_.n_vocab)
    return make_error(path + ": the tokenizer has " + std::to_string(m->tokenizer_->n_vocab()) +
                      " tokens but token_embd.weight has " + std::to_string(m->hparams_.n_vocab) + " rows");
  return m;
}

}  // namespace pagoda
