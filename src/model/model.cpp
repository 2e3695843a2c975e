#include "model/model.h"

#include "model/hf_folder.h"

namespace pagoda {

Result<std::unique_ptr<Model>> Model::load(const std::string& path) {
  std::unique_ptr<Model> m;
  std::optional<HfFolder> hf;
  if (is_directory(path)) {
    auto folder = open_hf_folder(path);
    if (!folder.ok()) return folder.error();
    m.reset(new Model(std::move(folder->gguf)));
    m->format_ = "huggingface";
    hf = std::move(*folder);
  } else {
    auto file = GgufFile::open(path);
    if (!file.ok()) return file.error();
    m.reset(new Model(std::move(*file)));
    m->format_ = "gguf";
  }
  auto hp = read_hparams(m->file_);
  if (!hp.ok()) return make_error(path + ": " + hp.error().message);
  m->hparams_ = std::move(*hp);
  if (hf) {  // what GGUF metadata cannot say: the stored Q/K pairing and the configured GELU
    m->hparams_.rope.type = hf->rope;
    m->hparams_.gelu = hf->gelu;
  }
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
