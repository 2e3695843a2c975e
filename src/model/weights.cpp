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

// Rows [begin, begin + count) of a matrix: a view, since rows are stored (and quantized) independently.
WeightMatrix row_range(const WeightMatrix& m, int64_t begin, int64_t count) {
  WeightMatrix v = m;
  v.data = m.row(begin);
  v.rows = count;
  return v;
}

Result<std::vector<float>> vector_f32(const GgufFile& f, const std::string& name, int64_t n) {
  auto m = matrix(f, name, n, 1);
  if (!m.ok()) return m.error();
  std::vector<float> out(n);
  dequantize_row(*m, 0, out.data());
  return out;
}

// Splits a fused vector into consecutive parts of the given sizes.
std::vector<std::vector<float>> split(const std::vector<float>& v, std::initializer_list<int64_t> sizes) {
  std::vector<std::vector<float>> parts;
  size_t at = 0;
  for (int64_t n : sizes) {
    parts.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(at), v.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += static_cast<size_t>(n);
  }
  return parts;
}

}  // namespace

Result<ModelWeights> load_weights(const GgufFile& f, const ModelHParams& hp) {
  const ArchSpec& spec = *hp.spec;
  const bool layer_norm = spec.norm == NormKind::kLayer;
  const int64_t E = hp.n_embd, QD = hp.q_dim(), KVD = hp.kv_dim(), FF = hp.n_ff;
  ModelWeights w;
#define PAGODA_ASSIGN(dst, expr)   \
  {                                \
    auto r = (expr);               \
    if (!r.ok()) return r.error(); \
    dst = std::move(*r);           \
  }
  PAGODA_ASSIGN(w.token_embd, matrix(f, "token_embd.weight", E, hp.n_vocab));
  if (spec.positions == PositionKind::kLearned) {
    const GgufTensorInfo* pos = f.find_tensor("position_embd.weight");
    if (!pos) return make_error("tensor 'position_embd.weight' is missing");
    if (static_cast<int64_t>(pos->ne[1]) < hp.n_ctx_train)
      return make_error("tensor 'position_embd.weight' has " + std::to_string(pos->ne[1]) +
                        " positions, fewer than the context length " + std::to_string(hp.n_ctx_train));
    PAGODA_ASSIGN(w.position_embd, matrix(f, "position_embd.weight", E, static_cast<int64_t>(pos->ne[1])));
  }
  PAGODA_ASSIGN(w.output_norm, vector_f32(f, "output_norm.weight", E));
  if (layer_norm) PAGODA_ASSIGN(w.output_norm_b, vector_f32(f, "output_norm.bias", E));
  if (f.find_tensor("output.weight")) {
    PAGODA_ASSIGN(w.output, matrix(f, "output.weight", E, hp.n_vocab));
  } else {
    w.output = w.token_embd;
    w.tied_output = true;
  }
  w.layers.resize(hp.n_layer);
  for (int64_t i = 0; i < hp.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[i];
    PAGODA_ASSIGN(l.attn_norm, vector_f32(f, p + "attn_norm.weight", E));
    if (layer_norm) PAGODA_ASSIGN(l.attn_norm_b, vector_f32(f, p + "attn_norm.bias", E));
    if (spec.fused_qkv) {
      WeightMatrix qkv;
      PAGODA_ASSIGN(qkv, matrix(f, p + "attn_qkv.weight", E, QD + 2 * KVD));
      l.wq = row_range(qkv, 0, QD);
      l.wk = row_range(qkv, QD, KVD);
      l.wv = row_range(qkv, QD + KVD, KVD);
      if (spec.qkv_bias) {
        std::vector<float> b;
        PAGODA_ASSIGN(b, vector_f32(f, p + "attn_qkv.bias", QD + 2 * KVD));
        auto parts = split(b, {QD, KVD, KVD});
        l.bq = std::move(parts[0]);
        l.bk = std::move(parts[1]);
        l.bv = std::move(parts[2]);
      }
    } else {
      PAGODA_ASSIGN(l.wq, matrix(f, p + "attn_q.weight", E, QD));
      PAGODA_ASSIGN(l.wk, matrix(f, p + "attn_k.weight", E, KVD));
      PAGODA_ASSIGN(l.wv, matrix(f, p + "attn_v.weight", E, KVD));
      if (spec.qkv_bias) {
        PAGODA_ASSIGN(l.bq, vector_f32(f, p + "attn_q.bias", QD));
        PAGODA_ASSIGN(l.bk, vector_f32(f, p + "attn_k.bias", KVD));
        PAGODA_ASSIGN(l.bv, vector_f32(f, p + "attn_v.bias", KVD));
      }
    }
    if (spec.qk_norm) {
      PAGODA_ASSIGN(l.q_norm, vector_f32(f, p + "attn_q_norm.weight", hp.head_dim));
      PAGODA_ASSIGN(l.k_norm, vector_f32(f, p + "attn_k_norm.weight", hp.head_dim));
    }
    PAGODA_ASSIGN(l.wo, matrix(f, p + "attn_output.weight", QD, E));
    if (spec.out_bias) PAGODA_ASSIGN(l.bo, vector_f32(f, p + "attn_output.bias", E));
    PAGODA_ASSIGN(l.ffn_norm, vector_f32(f, p + "ffn_norm.weight", E));
    if (layer_norm) PAGODA_ASSIGN(l.ffn_norm_b, vector_f32(f, p + "ffn_norm.bias", E));
    if (spec.mlp == MlpKind::kSwiGlu && spec.fused_gate_up) {
      WeightMatrix gate_up;
      PAGODA_ASSIGN(gate_up, matrix(f, p + "ffn_up.weight", E, 2 * FF));
      l.w_gate = row_range(gate_up, 0, FF);
      l.w_up = row_range(gate_up, FF, FF);
    } else {
      if (spec.mlp == MlpKind::kSwiGlu) PAGODA_ASSIGN(l.w_gate, matrix(f, p + "ffn_gate.weight", E, FF));
      PAGODA_ASSIGN(l.w_up, matrix(f, p + "ffn_up.weight", E, FF));
    }
    PAGODA_ASSIGN(l.w_down, matrix(f, p + "ffn_down.weight", FF, E));
    if (spec.mlp_bias) {
      PAGODA_ASSIGN(l.b_up, vector_f32(f, p + "ffn_up.bias", FF));
      PAGODA_ASSIGN(l.b_down, vector_f32(f, p + "ffn_down.bias", E));
    }
  }
#undef PAGODA_ASSIGN
  w.packed = std::make_shared<PackedWeights>();
  auto pack = [&](WeightMatrix& m, bool release) {
    if (m.data == nullptr) return;
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
