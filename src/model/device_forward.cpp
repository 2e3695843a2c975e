#include "model/device_forward.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#ifdef PAGODA_WITH_CUDA
#include "cuda/cuda_forward.h"
#endif

namespace pagoda {

Result<Device> parse_device(const std::string& text) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "cpu") return Device::kCpu;
  if (t == "cuda" || t == "gpu") return Device::kCuda;
  return make_error("unknown device '" + text + "' (choose cpu or cuda)");
}

const char* device_name(Device d) { return d == Device::kCuda ? "cuda" : "cpu"; }

bool device_built(Device d) {
#ifdef PAGODA_WITH_CUDA
  (void)d;
  return true;
#else
  return d == Device::kCpu;
#endif
}

#ifdef PAGODA_WITH_CUDA
namespace {

Result<cuda::CudaMatrixDesc> matrix(const WeightMatrix& w, const char* name) {
  cuda::CudaMatrixDesc d;
  switch (w.type) {
    case GgmlType::F32: d.type = cuda::CudaWeightType::kF32; break;
    case GgmlType::F16: d.type = cuda::CudaWeightType::kF16; break;
    case GgmlType::BF16: d.type = cuda::CudaWeightType::kBF16; break;
    default:
      return make_error(std::string("--device cuda runs F32, F16 and BF16 weights; ") + name + " is " +
                        ggml_type_name(static_cast<uint32_t>(w.type)) + " (use --device cpu for quantized models)");
  }
  d.data = w.data, d.rows = w.rows, d.cols = w.cols, d.row_bytes = w.row_bytes;
  return d;
}

cuda::CudaVectorDesc vec(const std::vector<float>& v) { return {v.empty() ? nullptr : v.data(), static_cast<int64_t>(v.size())}; }

class KvOnGpu final : public KvDeviceMemory {
 public:
  KvOnGpu(std::unique_ptr<cuda::CudaKvMemory> m, std::string where) : m_(std::move(m)), where_(std::move(where)) {}
  uint8_t* k() override { return m_->k(); }
  uint8_t* v() override { return m_->v(); }
  Status copy(int64_t src, int64_t dst, int64_t bytes, int64_t count, int64_t stride) override {
    return m_->copy(src, dst, bytes, count, stride);
  }
  std::string where() const override { return where_; }

 private:
  std::unique_ptr<cuda::CudaKvMemory> m_;
  std::string where_;
};

class CudaDeviceForward final : public DeviceForward {
 public:
  CudaDeviceForward(std::unique_ptr<cuda::CudaForwardPass> pass, int64_t n_vocab)
      : pass_(std::move(pass)), n_vocab_(n_vocab) {}

  Result<std::unique_ptr<KvDeviceMemory>> allocate_kv(const KvPoolShape& shape) override {
    PAGODA_RETURN_IF_ERROR(KvPool::check_shape(shape));
    if (shape.dtype == KvDtype::kQ8_0)
      return make_error("--device cuda stores K/V as f32, f16 or bf16, not q8_0 (--kv-cache-dtype)");
    const size_t bytes = static_cast<size_t>(shape.n_layer * shape.layer_bytes());
    auto m = cuda::CudaKvMemory::allocate(bytes, bytes);
    if (!m.ok()) return m.error();
    return std::unique_ptr<KvDeviceMemory>(
        new KvOnGpu(std::move(*m), std::string("GPU memory of ") + pass_->device_name()));
  }

  Status forward(const ForwardBatch& b, const KvStorage& kv, std::vector<float>& logits) override {
    if (b.probe_mass != nullptr || b.query_capture != nullptr || b.attention_override != nullptr ||
        !b.hidden_prefix.empty())
      return make_error("--device cuda does not run the instrumented attention paths (anchor layer masks, the "
                        "attention probe, warm start's captures): use --device cpu");
    PAGODA_RETURN_IF_ERROR(check_batch(b, kv));
    cuda::CudaBatchDesc d;
    d.tokens = b.tokens.data();
    d.positions = b.positions.data();
    d.slot_mapping = b.slot_mapping.data();
    d.cu_seqlens_q = b.cu_seqlens_q.data();
    d.seq_lens_kv = b.seq_lens_kv.data();
    d.block_table = b.block_table.data();
    d.logit_rows = b.logit_rows.data();
    d.num_tokens = static_cast<int32_t>(b.tokens.size());
    d.num_seqs = static_cast<int32_t>(b.seq_lens_kv.size());
    d.max_blocks = b.max_blocks;
    d.num_logit_rows = static_cast<int32_t>(b.logit_rows.size());
    cuda::CudaKvView v;
    v.k_base = kv.k_base, v.v_base = kv.v_base, v.dtype = kv.dtype, v.layer_stride = kv.layer_stride;
    v.num_slots = kv.num_slots, v.block_size = kv.block_size;
    return pass_->forward(d, v, logits);
  }

  // What the kernels index with, checked on the host (a bad id would read or write outside device buffers).
  Status check_batch(const ForwardBatch& b, const KvStorage& kv) const {
    const int64_t T = static_cast<int64_t>(b.tokens.size());
    if (T == 0) return make_error("forward called with no tokens");
    if (b.positions.size() != b.tokens.size() || b.slot_mapping.size() != b.tokens.size())
      return make_error("forward batch: positions and slot_mapping must have one entry per token");
    const size_t num_seqs = b.seq_lens_kv.size();
    if (num_seqs == 0 || b.cu_seqlens_q.size() != num_seqs + 1 || b.cu_seqlens_q.front() != 0 ||
        b.cu_seqlens_q.back() != T || b.block_table.size() != num_seqs * static_cast<size_t>(b.max_blocks))
      return make_error("forward batch: inconsistent attention metadata");
    for (int64_t t = 0; t < T; ++t) {
      if (b.tokens[t] < 0 || b.tokens[t] >= n_vocab_)
        return make_error("token id " + std::to_string(b.tokens[t]) + " is outside the vocabulary");
      if (b.slot_mapping[t] < 0 || b.slot_mapping[t] >= kv.num_slots || b.positions[t] < 0)
        return make_error("forward batch: token " + std::to_string(t) + " has an invalid slot or position");
    }
    const int64_t num_blocks = kv.num_slots / kv.block_size;
    for (size_t s = 0; s < num_seqs; ++s) {
      const int32_t q_len = b.cu_seqlens_q[s + 1] - b.cu_seqlens_q[s];
      if (q_len < 1 || b.seq_lens_kv[s] < q_len ||
          static_cast<int64_t>(b.seq_lens_kv[s]) > static_cast<int64_t>(b.max_blocks) * kv.block_size)
        return make_error("forward batch: sequence " + std::to_string(s) + " has inconsistent lengths");
      const int64_t used = (b.seq_lens_kv[s] + kv.block_size - 1) / kv.block_size;
      for (int64_t i = 0; i < used; ++i) {
        const int32_t block = b.block_table[s * b.max_blocks + i];
        if (block < 0 || block >= num_blocks)
          return make_error("forward batch: sequence " + std::to_string(s) + " names block " + std::to_string(block) +
                            ", outside the pool");
      }
    }
    for (int32_t row : b.logit_rows)
      if (row < 0 || row >= T) return make_error("forward batch: logit row out of range");
    return Status::success();
  }

  std::string describe() const override {
    char buf[200];
    std::snprintf(buf, sizeof buf, "cuda: %s, weights %.1f MiB", pass_->device_name(), pass_->weight_bytes() / 1048576.0);
    return buf;
  }

 private:
  std::unique_ptr<cuda::CudaForwardPass> pass_;
  int64_t n_vocab_;
};

}  // namespace
#endif

Result<std::unique_ptr<DeviceForward>> create_device_forward(Device device, const Model& model) {
  if (device == Device::kCpu) return make_error("the CPU forward pass is not a device forward (internal)");
#ifndef PAGODA_WITH_CUDA
  (void)model;
  return make_error("--device cuda: this pagoda was built without CUDA (configure with -DPAGODA_CUDA=ON on a machine "
                    "with the CUDA toolkit)");
#else
  const ModelHParams& hp = model.hparams();
  const ArchSpec& spec = *hp.spec;
  if (spec.norm != NormKind::kRms || spec.positions != PositionKind::kRope || spec.mlp != MlpKind::kSwiGlu ||
      hp.parallel_residual)
    return make_error(std::string("--device cuda runs Llama-family models (RMSNorm, RoPE, SwiGLU, sequential "
                                  "residual); ") + spec.name + " is not one of them");
  const ModelWeights& w = model.weights();
  cuda::CudaModelDesc d;
  d.n_embd = hp.n_embd, d.n_head = hp.n_head, d.n_head_kv = hp.n_head_kv, d.head_dim = hp.head_dim;
  d.n_ff = hp.n_ff, d.n_vocab = hp.n_vocab, d.norm_eps = hp.norm_eps;
  d.rope_neox = hp.rope.type == RopeType::kNeox;
  d.n_rot = hp.rope.n_rot;
  d.rope_freq_base = hp.rope.freq_base, d.rope_freq_scale = hp.rope.freq_scale;
  auto assign = [](cuda::CudaMatrixDesc& dst, Result<cuda::CudaMatrixDesc> src) -> Status {
    if (!src.ok()) return src.error();
    dst = *src;
    return Status::success();
  };
  PAGODA_RETURN_IF_ERROR(assign(d.token_embd, matrix(w.token_embd, "token_embd")));
  PAGODA_RETURN_IF_ERROR(assign(d.output, matrix(w.output, "output")));
  d.output_norm = vec(w.output_norm);
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& l = w.layers[i];
    cuda::CudaLayerDesc c;
    const std::string at = "layer " + std::to_string(i) + " ";
    PAGODA_RETURN_IF_ERROR(assign(c.wq, matrix(l.wq, (at + "attn_q").c_str())));
    PAGODA_RETURN_IF_ERROR(assign(c.wk, matrix(l.wk, (at + "attn_k").c_str())));
    PAGODA_RETURN_IF_ERROR(assign(c.wv, matrix(l.wv, (at + "attn_v").c_str())));
    PAGODA_RETURN_IF_ERROR(assign(c.wo, matrix(l.wo, (at + "attn_output").c_str())));
    PAGODA_RETURN_IF_ERROR(assign(c.w_gate, matrix(l.w_gate, (at + "ffn_gate").c_str())));
    PAGODA_RETURN_IF_ERROR(assign(c.w_up, matrix(l.w_up, (at + "ffn_up").c_str())));
    PAGODA_RETURN_IF_ERROR(assign(c.w_down, matrix(l.w_down, (at + "ffn_down").c_str())));
    c.attn_norm = vec(l.attn_norm), c.ffn_norm = vec(l.ffn_norm);
    c.bq = vec(l.bq), c.bk = vec(l.bk), c.bv = vec(l.bv), c.bo = vec(l.bo);
    c.q_norm = vec(l.q_norm), c.k_norm = vec(l.k_norm);
    if (!l.b_up.empty() || !l.b_down.empty()) return make_error("--device cuda: MLP biases are not supported");
    d.layers.push_back(c);
  }
  auto pass = cuda::CudaForwardPass::create(d);
  if (!pass.ok()) return pass.error();
  return std::unique_ptr<DeviceForward>(new CudaDeviceForward(std::move(*pass), hp.n_vocab));
#endif
}

}  // namespace pagoda
