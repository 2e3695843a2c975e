#include "cuda/cuda_forward.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "cuda/layer_kernels.cuh"
#include "cuda/matmul_cuda.cuh"
#include "cuda/paged_attention_cuda.h"

namespace pagoda::cuda {
namespace {

Error cuda_error(const char* what, cudaError_t e) {
  return make_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

#define PAGODA_CUDA_TRY(what, expr)                \
  do {                                             \
    const cudaError_t e_ = (expr);                 \
    if (e_ != cudaSuccess) return cuda_error(what, e_); \
  } while (0)

// A device allocation that grows (never shrinks) and is freed with its owner.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr(o.ptr), bytes(o.bytes) {
    o.ptr = nullptr;
    o.bytes = 0;
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  cudaError_t reserve(size_t n) {
    if (n <= bytes) return cudaSuccess;
    cudaFree(ptr);
    ptr = nullptr;
    bytes = 0;
    const cudaError_t e = cudaMalloc(&ptr, n);
    if (e == cudaSuccess) bytes = n;
    return e;
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

struct DeviceMatrix {
  DeviceBuffer mem;
  CudaWeightType type = CudaWeightType::kF32;
  int64_t rows = 0, cols = 0;
  size_t row_bytes = 0;
};

struct DeviceVector {
  DeviceBuffer mem;
  int64_t size = 0;
  const float* data() const { return size ? mem.as<float>() : nullptr; }
};

struct DeviceLayer {
  DeviceVector attn_norm, ffn_norm, bq, bk, bv, bo, q_norm, k_norm;
  DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

}  // namespace

struct CudaForwardPass::Impl {
  CudaModelDesc desc;  // shapes (its host pointers are not used after create)
  DeviceMatrix token_embd, output;
  DeviceVector output_norm;
  std::vector<DeviceLayer> layers;
  size_t weight_bytes = 0;
  cudaDeviceProp prop{};
  // Scratch, grown with the batch: [T, width] f32 rows.
  DeviceBuffer x, xn, q, k, v, attn, proj, gate, up, logit_x, logits;
  DeviceBuffer meta32, slots, attn_workspace;
  std::vector<int32_t> host_meta;

  cudaError_t upload(DeviceMatrix& m, const CudaMatrixDesc& d) {
    m.type = d.type, m.rows = d.rows, m.cols = d.cols, m.row_bytes = d.row_bytes;
    const size_t n = d.row_bytes * static_cast<size_t>(d.rows);
    cudaError_t e = m.mem.reserve(n);
    if (e == cudaSuccess) e = cudaMemcpy(m.mem.ptr, d.data, n, cudaMemcpyHostToDevice);
    weight_bytes += n;
    return e;
  }
  cudaError_t upload(DeviceVector& v, const CudaVectorDesc& d) {
    v.size = d.size;
    if (!d.size) return cudaSuccess;
    cudaError_t e = v.mem.reserve(sizeof(float) * d.size);
    if (e == cudaSuccess) e = cudaMemcpy(v.mem.ptr, d.data, sizeof(float) * d.size, cudaMemcpyHostToDevice);
    weight_bytes += sizeof(float) * d.size;
    return e;
  }
};

Result<std::unique_ptr<CudaKvMemory>> CudaKvMemory::allocate(size_t k_bytes, size_t v_bytes) {
  std::unique_ptr<CudaKvMemory> m(new CudaKvMemory());
  cudaError_t e = cudaMalloc(&m->k_, k_bytes);
  if (e == cudaSuccess) e = cudaMalloc(&m->v_, v_bytes);
  if (e != cudaSuccess)
    return make_error("CUDA: cannot allocate the KV cache (" + std::to_string((k_bytes + v_bytes) >> 20) +
                      " MiB) on the GPU: " + cudaGetErrorString(e));
  return Result<std::unique_ptr<CudaKvMemory>>(std::move(m));
}

CudaKvMemory::~CudaKvMemory() {
  cudaFree(k_);
  cudaFree(v_);
}

Status CudaKvMemory::copy(int64_t src_offset, int64_t dst_offset, int64_t bytes, int64_t count, int64_t stride) {
  PAGODA_CUDA_TRY("copying KV blocks", cudaMemcpy2D(k_ + dst_offset, stride, k_ + src_offset, stride, bytes, count,
                                                     cudaMemcpyDeviceToDevice));
  PAGODA_CUDA_TRY("copying KV blocks", cudaMemcpy2D(v_ + dst_offset, stride, v_ + src_offset, stride, bytes, count,
                                                     cudaMemcpyDeviceToDevice));
  return Status::success();
}

CudaForwardPass::CudaForwardPass(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaForwardPass::~CudaForwardPass() = default;
size_t CudaForwardPass::weight_bytes() const { return impl_->weight_bytes; }
const char* CudaForwardPass::device_name() const { return impl_->prop.name; }

Result<std::unique_ptr<CudaForwardPass>> CudaForwardPass::create(const CudaModelDesc& d) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    return make_error("--device cuda: no CUDA GPU is visible to this process");
  if (d.head_dim != 8 && d.head_dim != 16 && d.head_dim != 32 && d.head_dim != 64 && d.head_dim != 128 &&
      d.head_dim != 256)
    return make_error("--device cuda: head size " + std::to_string(d.head_dim) +
                      " is not one the GPU attention takes (8, 16, 32, 64, 128 or 256)");
  if (d.n_head % d.n_head_kv != 0 || d.n_head / d.n_head_kv > kCudaMaxGroup)
    return make_error("--device cuda: " + std::to_string(d.n_head) + " query heads over " +
                      std::to_string(d.n_head_kv) + " KV heads (at most 8 per KV head)");
  auto impl = std::make_unique<Impl>();
  impl->desc = d;
  PAGODA_CUDA_TRY("device properties", cudaGetDeviceProperties(&impl->prop, 0));
  const char* what = "copying the weights to the GPU";
  PAGODA_CUDA_TRY(what, impl->upload(impl->token_embd, d.token_embd));
  PAGODA_CUDA_TRY(what, impl->upload(impl->output, d.output));
  PAGODA_CUDA_TRY(what, impl->upload(impl->output_norm, d.output_norm));
  impl->layers.resize(d.layers.size());
  for (size_t i = 0; i < d.layers.size(); ++i) {
    const CudaLayerDesc& s = d.layers[i];
    DeviceLayer& l = impl->layers[i];
    for (auto [dst, src] : {std::pair{&l.attn_norm, &s.attn_norm}, {&l.ffn_norm, &s.ffn_norm}, {&l.bq, &s.bq},
                            {&l.bk, &s.bk}, {&l.bv, &s.bv}, {&l.bo, &s.bo}, {&l.q_norm, &s.q_norm},
                            {&l.k_norm, &s.k_norm}})
      PAGODA_CUDA_TRY(what, impl->upload(*dst, *src));
    for (auto [dst, src] : {std::pair{&l.wq, &s.wq}, {&l.wk, &s.wk}, {&l.wv, &s.wv}, {&l.wo, &s.wo},
                            {&l.w_gate, &s.w_gate}, {&l.w_up, &s.w_up}, {&l.w_down, &s.w_down}})
      PAGODA_CUDA_TRY(what, impl->upload(*dst, *src));
  }
  impl->desc.layers.clear();
  impl->desc.token_embd.data = impl->desc.output.data = nullptr;
  impl->desc.output_norm.data = nullptr;
  return std::unique_ptr<CudaForwardPass>(new CudaForwardPass(std::move(impl)));
}

Status CudaForwardPass::forward(const CudaBatchDesc& b, const CudaKvView& kv, std::vector<float>& logits) {
  Impl& m = *impl_;
  const CudaModelDesc& d = m.desc;
  const int64_t T = b.num_tokens, E = d.n_embd, QD = d.n_head * d.head_dim, KVD = d.n_head_kv * d.head_dim;
  const cudaStream_t s = nullptr;
  const char* what = "forward pass";
  // Scratch for T tokens.
  const size_t row = sizeof(float) * static_cast<size_t>(T);
  PAGODA_CUDA_TRY(what, m.x.reserve(row * E));
  PAGODA_CUDA_TRY(what, m.xn.reserve(row * E));
  PAGODA_CUDA_TRY(what, m.proj.reserve(row * E));
  PAGODA_CUDA_TRY(what, m.q.reserve(row * QD));
  PAGODA_CUDA_TRY(what, m.attn.reserve(row * QD));
  PAGODA_CUDA_TRY(what, m.k.reserve(row * KVD));
  PAGODA_CUDA_TRY(what, m.v.reserve(row * KVD));
  PAGODA_CUDA_TRY(what, m.gate.reserve(row * d.n_ff));
  PAGODA_CUDA_TRY(what, m.up.reserve(row * d.n_ff));

  // The step's metadata in one copy: tokens, positions, cu_seqlens_q, seq_lens_kv, block table, logit rows.
  std::vector<int32_t>& h = m.host_meta;
  h.clear();
  const size_t o_tokens = h.size();
  h.insert(h.end(), b.tokens, b.tokens + T);
  const size_t o_positions = h.size();
  h.insert(h.end(), b.positions, b.positions + T);
  const size_t o_cu = h.size();
  h.insert(h.end(), b.cu_seqlens_q, b.cu_seqlens_q + b.num_seqs + 1);
  const size_t o_lens = h.size();
  h.insert(h.end(), b.seq_lens_kv, b.seq_lens_kv + b.num_seqs);
  const size_t o_table = h.size();
  h.insert(h.end(), b.block_table, b.block_table + static_cast<size_t>(b.num_seqs) * b.max_blocks);
  const size_t o_rows = h.size();
  h.insert(h.end(), b.logit_rows, b.logit_rows + b.num_logit_rows);
  PAGODA_CUDA_TRY(what, m.meta32.reserve(sizeof(int32_t) * h.size()));
  PAGODA_CUDA_TRY(what, m.slots.reserve(sizeof(int64_t) * T));
  PAGODA_CUDA_TRY(what, cudaMemcpyAsync(m.meta32.ptr, h.data(), sizeof(int32_t) * h.size(), cudaMemcpyHostToDevice, s));
  PAGODA_CUDA_TRY(what, cudaMemcpyAsync(m.slots.ptr, b.slot_mapping, sizeof(int64_t) * T, cudaMemcpyHostToDevice, s));
  const int32_t* meta = m.meta32.as<int32_t>();

  CudaPagedAttentionArgs args;
  args.q = m.q.as<float>();
  args.out = m.attn.as<float>();
  args.cu_seqlens_q = meta + o_cu;
  args.seq_lens_kv = meta + o_lens;
  args.block_table = meta + o_table;
  args.num_seqs = b.num_seqs;
  args.num_tokens = static_cast<int32_t>(T);
  args.max_blocks = b.max_blocks;
  args.block_size = kv.block_size;
  args.n_heads = static_cast<int32_t>(d.n_head);
  args.n_kv_heads = static_cast<int32_t>(d.n_head_kv);
  args.head_dim = static_cast<int32_t>(d.head_dim);
  args.max_kv_len = *std::max_element(b.seq_lens_kv, b.seq_lens_kv + b.num_seqs);
  args.scale = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  args.kv_dtype = kv.dtype;
  const size_t ws_bytes = paged_attention_cuda_workspace_bytes(args);
  PAGODA_CUDA_TRY(what, m.attn_workspace.reserve(std::max<size_t>(ws_bytes, 1)));

  float* x = m.x.as<float>();
  float* xn = m.xn.as<float>();
  float* q = m.q.as<float>();
  float* k = m.k.as<float>();
  float* v = m.v.as<float>();
  float* proj = m.proj.as<float>();
  float* gate = m.gate.as<float>();
  float* up = m.up.as<float>();
  const int32_t* positions = meta + o_positions;
  const float theta_scale = std::pow(d.rope_freq_base, -2.0f / static_cast<float>(d.n_rot));

  PAGODA_CUDA_TRY(what, embed_rows(m.token_embd.mem.ptr, m.token_embd.type, m.token_embd.row_bytes, meta + o_tokens,
                                   T, E, x, s));
  auto mm = [&](const DeviceMatrix& w, const float* in, const DeviceVector* bias, float* out) {
    return matmul(in, T, w.mem.ptr, w.type, w.rows, w.cols, w.row_bytes, bias ? bias->data() : nullptr, out, s);
  };
  for (size_t il = 0; il < m.layers.size(); ++il) {
    const DeviceLayer& l = m.layers[il];
    PAGODA_CUDA_TRY(what, rms_norm_rows(x, l.attn_norm.data(), T, E, d.norm_eps, xn, s));
    PAGODA_CUDA_TRY(what, mm(l.wq, xn, &l.bq, q));
    PAGODA_CUDA_TRY(what, mm(l.wk, xn, &l.bk, k));
    PAGODA_CUDA_TRY(what, mm(l.wv, xn, &l.bv, v));
    if (l.q_norm.size) {
      PAGODA_CUDA_TRY(what, rms_norm_rows(q, l.q_norm.data(), T * d.n_head, d.head_dim, d.norm_eps, q, s));
      PAGODA_CUDA_TRY(what, rms_norm_rows(k, l.k_norm.data(), T * d.n_head_kv, d.head_dim, d.norm_eps, k, s));
    }
    PAGODA_CUDA_TRY(what, rope_rows(q, positions, T, d.n_head, d.head_dim, d.n_rot, theta_scale, d.rope_freq_scale,
                                    d.rope_neox, s));
    PAGODA_CUDA_TRY(what, rope_rows(k, positions, T, d.n_head_kv, d.head_dim, d.n_rot, theta_scale,
                                    d.rope_freq_scale, d.rope_neox, s));
    uint8_t* k_layer = kv.k_base + static_cast<int64_t>(il) * kv.layer_stride;
    uint8_t* v_layer = kv.v_base + static_cast<int64_t>(il) * kv.layer_stride;
    PAGODA_CUDA_TRY(what, store_kv_rows(k, T, KVD, m.slots.as<int64_t>(), kv.dtype, k_layer, s));
    PAGODA_CUDA_TRY(what, store_kv_rows(v, T, KVD, m.slots.as<int64_t>(), kv.dtype, v_layer, s));
    args.k_cache = k_layer;
    args.v_cache = v_layer;
    const Status st = paged_attention_cuda(args, m.attn_workspace.ptr, m.attn_workspace.bytes, s);
    if (!st.ok()) return st;
    PAGODA_CUDA_TRY(what, mm(l.wo, m.attn.as<float>(), &l.bo, proj));
    PAGODA_CUDA_TRY(what, add_in_place(x, proj, T * E, s));
    PAGODA_CUDA_TRY(what, rms_norm_rows(x, l.ffn_norm.data(), T, E, d.norm_eps, xn, s));
    PAGODA_CUDA_TRY(what, mm(l.w_gate, xn, nullptr, gate));
    PAGODA_CUDA_TRY(what, mm(l.w_up, xn, nullptr, up));
    PAGODA_CUDA_TRY(what, silu_mul(gate, up, T * d.n_ff, s));
    PAGODA_CUDA_TRY(what, mm(l.w_down, gate, nullptr, proj));
    PAGODA_CUDA_TRY(what, add_in_place(x, proj, T * E, s));
  }
  const int64_t n_rows = b.num_logit_rows;
  logits.resize(static_cast<size_t>(n_rows * d.n_vocab));
  if (n_rows == 0) {
    PAGODA_CUDA_TRY(what, cudaStreamSynchronize(s));
    return Status::success();
  }
  PAGODA_CUDA_TRY(what, m.logit_x.reserve(sizeof(float) * n_rows * E * 2));
  float* gathered = m.logit_x.as<float>();
  float* normed = gathered + n_rows * E;
  PAGODA_CUDA_TRY(what, gather_rows(x, meta + o_rows, n_rows, E, gathered, s));
  PAGODA_CUDA_TRY(what, rms_norm_rows(gathered, m.output_norm.data(), n_rows, E, d.norm_eps, normed, s));
  PAGODA_CUDA_TRY(what, m.logits.reserve(sizeof(float) * n_rows * d.n_vocab));
  PAGODA_CUDA_TRY(what, matmul(normed, n_rows, m.output.mem.ptr, m.output.type, m.output.rows, m.output.cols,
                               m.output.row_bytes, nullptr, m.logits.as<float>(), s));
  PAGODA_CUDA_TRY(what, cudaMemcpy(logits.data(), m.logits.ptr, sizeof(float) * logits.size(), cudaMemcpyDeviceToHost));
  return Status::success();
}

}  // namespace pagoda::cuda
