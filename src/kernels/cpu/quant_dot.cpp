// Activation quantization, the portable integer dot products that define the arithmetic, and dispatch.
#include "kernels/cpu/quant_dot.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/quant_dot_combine.h"

namespace pagoda {
namespace {

using namespace quant_combine;

// --- activations ---------------------------------------------------------------------------------------------

// v clamped to [-127, 127] (NaN to -127: an activation row with inf or NaN must not make the cast undefined), then
// rounded to nearest, ties to even, in plain float arithmetic (no library call, vectorizable).
inline float round_even(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  v = v <= 127.0f ? v : 127.0f;    // fmin(127, v): NaN gives 127
  v = v >= -127.0f ? v : -127.0f;  // fmax(-127, v)
  return (v + kMagic) - kMagic;  // IEEE arithmetic: the compiler may not fold this (no -ffast-math)
}

// Q8_0 (and Q8_1's quants): d = max|x| / 127, q = round(x / d) (ties to even), |q| <= 127.
float quantize_block_q8(const float* x, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; ++j) q[j] = static_cast<int8_t>(round_even(x[j] * id));
  return d;
}

void quantize_q8_k(const float* x, BlockQ8_K& y) {
  // The element of largest magnitude maps to -127 exactly (its sign kept in d), the rest round to nearest even.
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK_K; ++j)
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  if (amax == 0.0f) {
    y.d = 0.0f;
    std::memset(y.qs, 0, sizeof y.qs);
    std::memset(y.bsums, 0, sizeof y.bsums);
    return;
  }
  const float iscale = -127.0f / max;
  for (int j = 0; j < kQK_K; ++j)
    y.qs[j] = static_cast<int8_t>(round_even(iscale * x[j]));
  for (int g = 0; g < kQK_K / 16; ++g) {
    int s = 0;
    for (int l = 0; l < 16; ++l) s += y.qs[16 * g + l];
    y.bsums[g] = static_cast<int16_t>(s);
  }
  y.d = 1.0f / iscale;
}

// --- portable dots: legacy types against Q8_0 / Q8_1 ------------------------------------------------------------

int nibble(const uint8_t* qs, int j) { return j < kQK / 2 ? (qs[j] & 0xF) : (qs[j - kQK / 2] >> 4); }
int fifth_bit(const uint8_t* qh, int j) { return static_cast<int>((load_u32(qh) >> j) & 1) << 4; }

// Q8_0, Q4_0, Q5_0 and IQ4_NL, the block-exact types: per block the exact sum of level(block, i) * x_i over all 32
// elements, then block_exact_update (the packed kernels' lane-per-row arithmetic, quant_dot_packed.h).
template <class Block, class Level>
float dot_block_exact(const uint8_t* wr, const uint8_t* xr, int64_t K, Level level) {
  const auto* w = blocks_of<Block>(wr);
  const auto* x = blocks_of<BlockQ8_0>(xr);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK; ++b) {
    int32_t sum = 0;
    for (int i = 0; i < kQK; ++i) sum += level(w[b], i) * x[b].qs[i];
    acc = block_exact_update(acc, sum, f16_to_f32(w[b].d), f16_to_f32(x[b].d));
  }
  return acc;
}

float dot_q8_0(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot_block_exact<BlockQ8_0>(w, x, K, [](const BlockQ8_0& b, int i) { return static_cast<int>(b.qs[i]); });
}
float dot_q4_0(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot_block_exact<BlockQ4_0>(w, x, K, [](const BlockQ4_0& b, int j) { return nibble(b.qs, j) - 8; });
}
float dot_iq4_nl(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot_block_exact<BlockIQ4_NL>(
      w, x, K, [](const BlockIQ4_NL& b, int j) { return static_cast<int>(kIQ4Values[nibble(b.qs, j)]); });
}
float dot_q5_0(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot_block_exact<BlockQ5_0>(
      w, x, K, [](const BlockQ5_0& b, int j) { return (nibble(b.qs, j) | fifth_bit(b.qh, j)) - 16; });
}

// Q4_1 and Q5_1 against Q8_1: unsigned levels, a scale and a min. Block-exact as well: the exact sum of
// level * x over the block, block_exact_update into one running sum; the mins' running sum beside it
// (min_update); the result is their sum.
template <class Block, class Level>
float dot_levels_with_min(const uint8_t* wr, const uint8_t* xr, int64_t K, Level level) {
  const auto* w = blocks_of<Block>(wr);
  const auto* x = blocks_of<BlockQ8_1>(xr);
  float acc = 0.0f, mins = 0.0f;
  for (int64_t b = 0; b < K / kQK; ++b) {
    int32_t sum = 0;
    for (int i = 0; i < kQK; ++i) sum += level(w[b], i) * x[b].qs[i];
    acc = block_exact_update(acc, sum, f16_to_f32(w[b].d), f16_to_f32(x[b].d));
    mins = min_update(mins, f16_to_f32(w[b].m), f16_to_f32(x[b].s));
  }
  return acc + mins;
}
float dot_q4_1(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot_levels_with_min<BlockQ4_1>(w, x, K, [](const BlockQ4_1& b, int j) { return nibble(b.qs, j); });
}
float dot_q5_1(const uint8_t* w, const uint8_t* x, int64_t K) {
  return dot_levels_with_min<BlockQ5_1>(
      w, x, K, [](const BlockQ5_1& b, int j) { return nibble(b.qs, j) | fifth_bit(b.qh, j); });
}

// --- portable dots: K-quants and IQ4_XS against Q8_K -------------------------------------------------------------

float dot_q2_k(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = blocks_of<BlockQ2_K>(wr);
  const auto* x = blocks_of<BlockQ8_K>(xr);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    int32_t sumi = 0, summ = 0;
    for (int h = 0; h < 2; ++h)
      for (int f = 0; f < 4; ++f)
        for (int g = 0; g < 2; ++g) {
          const int group = 8 * h + 2 * f + g;  // 16 elements 16 * group ..
          int32_t s = 0;
          for (int l = 0; l < 16; ++l)
            s += ((w[b].qs[32 * h + 16 * g + l] >> (2 * f)) & 3) * x[b].qs[16 * group + l];
          sumi += (w[b].scales[group] & 0xF) * s;
          summ += (w[b].scales[group] >> 4) * x[b].bsums[group];
        }
    acc = k_with_min(acc, sumi, summ, f16_to_f32(w[b].d), f16_to_f32(w[b].dmin), x[b].d);
  }
  return acc;
}

float dot_q3_k(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = blocks_of<BlockQ3_K>(wr);
  const auto* x = blocks_of<BlockQ8_K>(xr);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    int8_t scales[16];
    unpack_q3_k_scales(w[b].scales, scales);
    int32_t sumi = 0;
    for (int h = 0; h < 2; ++h)
      for (int f = 0; f < 4; ++f)
        for (int g = 0; g < 2; ++g) {
          const int group = 8 * h + 2 * f + g;
          int32_t s = 0;
          for (int l = 0; l < 16; ++l) {
            const int i = 16 * g + l;
            const int low = (w[b].qs[32 * h + i] >> (2 * f)) & 3;
            const int high = (w[b].hmask[i] >> (4 * h + f)) & 1;
            s += (low - (high ? 0 : 4)) * x[b].qs[16 * group + l];
          }
          sumi += scales[group] * s;
        }
    acc = k_plain(acc, sumi, f16_to_f32(w[b].d), x[b].d);
  }
  return acc;
}

template <bool kFiveBits, class Block>
float dot_q45_k(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = blocks_of<Block>(wr);
  const auto* x = blocks_of<BlockQ8_K>(xr);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    uint8_t sc[8], m[8];
    k4_scales(w[b].scales, sc, m);
    int32_t sumi = 0;
    for (int j = 0; j < 8; ++j) {  // sub-block j: 32 elements, bytes qs[32 (j / 2)..], nibble j % 2
      int32_t s = 0;
      for (int l = 0; l < 32; ++l) {
        int q = (w[b].qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF;
        if constexpr (kFiveBits) q |= ((w[b].qh[l] >> j) & 1) << 4;
        s += q * x[b].qs[32 * j + l];
      }
      sumi += sc[j] * s;
    }
    acc = k_with_min(acc, sumi, k4_min_sum(m, x[b].bsums), f16_to_f32(w[b].d), f16_to_f32(w[b].dmin), x[b].d);
  }
  return acc;
}

float dot_q6_k(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = blocks_of<BlockQ6_K>(wr);
  const auto* x = blocks_of<BlockQ8_K>(xr);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    int32_t sumi = 0;
    for (int h = 0; h < 2; ++h)
      for (int f = 0; f < 4; ++f)
        for (int half = 0; half < 2; ++half) {  // 16 elements 128h + 32f + 16 half ..
          int32_t s = 0;
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int low = (w[b].ql[64 * h + l + 32 * (f & 1)] >> (4 * (f >> 1))) & 0xF;
            const int q = (low | (((w[b].qh[32 * h + l] >> (2 * f)) & 3) << 4)) - 32;
            s += q * x[b].qs[128 * h + 32 * f + l];
          }
          sumi += w[b].scales[8 * h + 2 * f + half] * s;
        }
    acc = k_plain(acc, sumi, f16_to_f32(w[b].d), x[b].d);
  }
  return acc;
}

float dot_iq4_xs(const uint8_t* wr, const uint8_t* xr, int64_t K) {
  const auto* w = blocks_of<BlockIQ4_XS>(wr);
  const auto* x = blocks_of<BlockQ8_K>(xr);
  float acc = 0.0f;
  for (int64_t b = 0; b < K / kQK_K; ++b) {
    int32_t sumi = 0;
    for (int j = 0; j < 8; ++j) {
      int32_t s = 0;
      for (int l = 0; l < 16; ++l) {
        s += kIQ4Values[w[b].qs[16 * j + l] & 0xF] * x[b].qs[32 * j + l];
        s += kIQ4Values[w[b].qs[16 * j + l] >> 4] * x[b].qs[32 * j + l + 16];
      }
      sumi += iq4_xs_scale(w[b], j) * s;
    }
    acc = k_plain(acc, sumi, f16_to_f32(w[b].d), x[b].d);
  }
  return acc;
}

}  // namespace

bool uses_integer_dot(GgmlType t) { return quant_dot_portable(t) != nullptr; }

ActivationFormat activation_format(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_1:
    case GgmlType::Q5_1: return ActivationFormat::kQ8_1;
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_XS: return ActivationFormat::kQ8_K;
    default: return ActivationFormat::kQ8_0;
  }
}

size_t activation_row_bytes(ActivationFormat f, int64_t K) {
  switch (f) {
    case ActivationFormat::kQ8_0: return K / kQK * (sizeof(BlockQ8_0) + sizeof(int32_t) * (kLanes32 + 1) + sizeof(float));
    case ActivationFormat::kQ8_1: return K / kQK * sizeof(BlockQ8_1);
    case ActivationFormat::kQ8_K: return K / kQK_K * sizeof(BlockQ8_K);
  }
  return 0;
}

void quantize_activations(ActivationFormat f, const float* x, int64_t K, uint8_t* out) {
  switch (f) {
    case ActivationFormat::kQ8_0: {
      auto* y = reinterpret_cast<BlockQ8_0*>(out);
      const Q8_0Row row = q8_0_row(out, K);
      for (int64_t b = 0; b < K / kQK; ++b) {
        y[b].d = f32_to_f16(quantize_block_q8(x + b * kQK, y[b].qs));
        int32_t block_sum = 0;
        for (int j = 0; j < kLanes32; ++j) {
          const int32_t sum = y[b].qs[4 * j] + y[b].qs[4 * j + 1] + y[b].qs[4 * j + 2] + y[b].qs[4 * j + 3];
          std::memcpy(row.lane_sums + (b * kLanes32 + j) * sizeof(int32_t), &sum, sizeof sum);
          block_sum += sum;
        }
        const float d = f16_to_f32(y[b].d);
        std::memcpy(row.block_sums + b * sizeof(int32_t), &block_sum, sizeof block_sum);
        std::memcpy(row.scales + b * sizeof(float), &d, sizeof d);
      }
      return;
    }
    case ActivationFormat::kQ8_1: {
      auto* y = reinterpret_cast<BlockQ8_1*>(out);
      for (int64_t b = 0; b < K / kQK; ++b) {
        const float d = quantize_block_q8(x + b * kQK, y[b].qs);
        int sum = 0;
        for (int j = 0; j < kQK; ++j) sum += y[b].qs[j];
        y[b].d = f32_to_f16(d);
        y[b].s = f32_to_f16(d * static_cast<float>(sum));
      }
      return;
    }
    case ActivationFormat::kQ8_K: {
      auto* y = reinterpret_cast<BlockQ8_K*>(out);
      for (int64_t b = 0; b < K / kQK_K; ++b) quantize_q8_k(x + b * kQK_K, y[b]);
      return;
    }
  }
}

QuantDotFn quant_dot_portable(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: return dot_q8_0;
    case GgmlType::Q4_0: return dot_q4_0;
    case GgmlType::Q5_0: return dot_q5_0;
    case GgmlType::IQ4_NL: return dot_iq4_nl;
    case GgmlType::Q4_1: return dot_q4_1;
    case GgmlType::Q5_1: return dot_q5_1;
    case GgmlType::Q2_K: return dot_q2_k;
    case GgmlType::Q3_K: return dot_q3_k;
    case GgmlType::Q4_K: return dot_q45_k<false, BlockQ4_K>;
    case GgmlType::Q5_K: return dot_q45_k<true, BlockQ5_K>;
    case GgmlType::Q6_K: return dot_q6_k;
    case GgmlType::IQ4_XS: return dot_iq4_xs;
    default: return nullptr;
  }
}

QuantKernels quant_kernels(GgmlType t, KernelIsa isa) {
  QuantKernels k;
  if (isa == KernelIsa::kAvx512 && cpu_features().avx512_vnni) k = quant_kernels_avx512(t);
  if (!k.dot && (isa == KernelIsa::kAvx512 || isa == KernelIsa::kAvx2)) k = quant_kernels_avx2(t);
  if (!k.dot) k = QuantKernels{quant_dot_portable(t), nullptr, nullptr, 0, 0, nullptr, nullptr, nullptr};
  if (!k.quantize) {
    switch (activation_format(t)) {
      case ActivationFormat::kQ8_0:
        k.quantize = [](const float* x, int64_t K, uint8_t* out) { quantize_activations(ActivationFormat::kQ8_0, x, K, out); };
        break;
      case ActivationFormat::kQ8_1:
        k.quantize = [](const float* x, int64_t K, uint8_t* out) { quantize_activations(ActivationFormat::kQ8_1, x, K, out); };
        break;
      case ActivationFormat::kQ8_K:
        k.quantize = [](const float* x, int64_t K, uint8_t* out) { quantize_activations(ActivationFormat::kQ8_K, x, K, out); };
        break;
    }
  }
  return k;
}

}  // namespace pagoda
