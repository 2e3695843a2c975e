#include "model/weights.h"

#include "kernels/cpu/matmul.h"

namespace pagoda {
namespace {

std::string supported_types_list() { return supported_type_names(); }

Result<const GgufTensorInfo*> find_checked(const GgufFile& f, const std::string& name, uint64_t ne0, uint64_t ne1) {
  const GgufTensorInfo* t = f.find_tensor(name);
  if (!t) return make_error("tensor '" + name + "' is missing");
  const auto& traits = ggml_type_traits(t->type);
  if (!traits.supported)
    return make_error("tensor '" + name + "' has type " + traits.name +
                      ", which pagoda does not support yet (supported: " + supported_types_list() + ")");
  const bool shape_ok = t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == 1 && t->ne[3] == 1;
  if (!shape_ok)
    return make_error("tensor '" + name + "' has shape " + t->shape_string() + ", expected [" + std::to_string(ne0) +
                      (ne1 != 1 ? ", " + std::to_string(ne1) : std::string()) + "]");
  return t;
}

Result<WeightMatrix> matrix(const GgufFile& f, const std::string& name, int64_t cols, int64_t rows) {
  auto t = find_checked(f, name, cols, rows);
  if (!t.ok()) return t.error();
  WeightMatrix w;
  w.data = (*t)->data;
  w.type = (*t)->type;
  w.cols = cols;
  w.rows = rows;
  w.row_bytes = ggml_row_bytes(ggml_type_traits(w.type), cols);
  return w;
}

Result<std::vector<float>> vector_f32(const GgufFile& f, const std::string& name, int64_t n) {
  auto m = matrix(f, name, n, 1);
  if (!m.ok()) return m.error();
  std::vector<float> out(n);
  dequantize_row(*m, 0, out.data());
  return out;
}

}  // namespace

Result<ModelWeights> load_weights(const GgufFile& f, const ModelHParams& hp) {
  ModelWeights w;
#define PAGODA_ASSIGN(dst, expr)   \
  {                                \
    auto r = (expr);               \
    if (!r.ok()) return r.error(); \
    dst = std::move(*r);           \
  }
  PAGODA_ASSIGN(w.token_embd, matrix(f, "token_embd.weight", hp.n_embd, hp.n_vocab));
  PAGODA_ASSIGN(w.output_norm, vector_f32(f, "output_norm.weight", hp.n_embd));
  if (f.find_tensor("output.weight")) {
    PAGODA_ASSIGN(w.output, matrix(f, "output.weight", hp.n_embd, hp.n_vocab));
  } else {
    w.output = w.token_embd;
    w.tied_output = true;
  }
  w.layers.resize(hp.n_layer);
  for (int64_t i = 0; i < hp.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[i];
    PAGODA_ASSIGN(l.attn_norm, vector_f32(f, p + "attn_norm.weight", hp.n_embd));
    PAGODA_ASSIGN(l.wq, matrix(f, p + "attn_q.weight", hp.n_embd, hp.q_dim()));
    PAGODA_ASSIGN(l.wk, matrix(f, p + "attn_k.weight", hp.n_embd, hp.kv_dim()));
    PAGODA_ASSIGN(l.wv, matrix(f, p + "attn_v.weight", hp.n_embd, hp.kv_dim()));
    PAGODA_ASSIGN(l.wo, matrix(f, p + "attn_output.weight", hp.q_dim(), hp.n_embd));
    PAGODA_ASSIGN(l.ffn_norm, vector_f32(f, p + "ffn_norm.weight", hp.n_embd));
    PAGODA_ASSIGN(l.w_gate, matrix(f, p + "ffn_gate.weight", hp.n_embd, hp.n_ff));
    PAGODA_ASSIGN(l.w_up, matrix(f, p + "ffn_up.weight", hp.n_embd, hp.n_ff));
    PAGODA_ASSIGN(l.w_down, matrix(f, p + "ffn_down.weight", hp.n_ff, hp.n_embd));
  }
#undef PAGODA_ASSIGN
  w.packed = std::make_shared<PackedWeights>();
  auto pack = [&](WeightMatrix& m, bool release) {
    w.packed->pack(m);
    if (m.packed && release) f.release_pages(m.data, static_cast<size_t>(m.rows) * m.row_bytes);
  };
  // A tied head is token_embd, whose rows embedding lookups still read.
  pack(w.output, !w.tied_output);
  for (LayerWeights& l : w.layers)
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) pack(*m, true);
  return w;
}

}  // namespace pagoda
