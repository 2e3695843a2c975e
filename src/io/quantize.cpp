#include "io/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "io/quant_blocks.h"
#include "io/quantize_iq4.h"
#include "io/quantize_k_quants.h"
#include "util/fp16.h"

namespace pagoda {
namespace {

// The value of largest magnitude, with its sign.
float signed_max(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  return max;
}

void minmax(const float* x, int n, float* lo, float* hi) {
  *lo = *hi = x[0];
  for (int i = 1; i < n; ++i) {
    *lo = std::min(*lo, x[i]);
    *hi = std::max(*hi, x[i]);
  }
}

// Nibble j of a 32-element block: element j in the low nibble of qs[j], element j + 16 in the high one.
void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
}

void pack_fifth_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kQK; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, 4);
}

// Levels of a block with a symmetric scale d = max / -(levels / 2): q = x / d + levels / 2, rounded, clamped.
float symmetric_levels(const float* x, int levels, uint8_t* q) {
  const float d = signed_max(x, kQK) / static_cast<float>(-levels / 2);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; ++j)
    q[j] = static_cast<uint8_t>(std::min(levels - 1, static_cast<int>(x[j] * id + levels / 2 + 0.5f)));
  return d;
}

// Levels with a scale and a min: d = (max - min) / (levels - 1), q = (x - min) / d, rounded, clamped.
float asymmetric_levels(const float* x, int levels, uint8_t* q, float* min_out) {
  float lo, hi;
  minmax(x, kQK, &lo, &hi);
  const float d = (hi - lo) / static_cast<float>(levels - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; ++j)
    q[j] = static_cast<uint8_t>(std::min(levels - 1, static_cast<int>((x[j] - lo) * id + 0.5f)));
  *min_out = lo;
  return d;
}

template <class Block, class Fn>
std::vector<uint8_t> per_block(const float* x, int64_t n, int block_elems, Fn fn) {
  std::vector<uint8_t> out(n / block_elems * sizeof(Block));
  auto* blocks = reinterpret_cast<Block*>(out.data());
  for (int64_t b = 0; b < n / block_elems; ++b) fn(x + b * block_elems, blocks[b]);
  return out;
}

}  // namespace

bool can_quantize(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q8_0:
    case GgmlType::Q2_K:
    case GgmlType::Q3_K:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
    case GgmlType::IQ4_NL:
    case GgmlType::IQ4_XS: return true;
    default: return false;
  }
}

Result<std::vector<uint8_t>> quantize_values(GgmlType t, const float* x, int64_t n) {
  const auto& traits = ggml_type_traits(t);
  if (!can_quantize(t)) return make_error(std::string("cannot quantize to ") + traits.name);
  if (n % traits.block_elems != 0)
    return make_error(std::to_string(n) + " values are not a whole number of " + traits.name + " blocks");
  switch (t) {
    case GgmlType::Q8_0:
      return per_block<BlockQ8_0>(x, n, kQK, [](const float* v, BlockQ8_0& b) {
        float amax = 0.0f;
        for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(v[j]));
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        b.d = f32_to_f16(d);
        for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(std::round(v[j] * id));
      });
    case GgmlType::Q4_0:
      return per_block<BlockQ4_0>(x, n, kQK, [](const float* v, BlockQ4_0& b) {
        uint8_t q[kQK];
        b.d = f32_to_f16(symmetric_levels(v, 16, q));
        pack_nibbles(q, b.qs);
      });
    case GgmlType::Q5_0:
      return per_block<BlockQ5_0>(x, n, kQK, [](const float* v, BlockQ5_0& b) {
        uint8_t q[kQK], low[kQK];
        b.d = f32_to_f16(symmetric_levels(v, 32, q));
        for (int j = 0; j < kQK; ++j) low[j] = q[j] & 0xF;
        pack_nibbles(low, b.qs);
        pack_fifth_bits(q, b.qh);
      });
    case GgmlType::Q4_1:
      return per_block<BlockQ4_1>(x, n, kQK, [](const float* v, BlockQ4_1& b) {
        uint8_t q[kQK];
        float min;
        b.d = f32_to_f16(asymmetric_levels(v, 16, q, &min));
        b.m = f32_to_f16(min);
        pack_nibbles(q, b.qs);
      });
    case GgmlType::Q5_1:
      return per_block<BlockQ5_1>(x, n, kQK, [](const float* v, BlockQ5_1& b) {
        uint8_t q[kQK], low[kQK];
        float min;
        b.d = f32_to_f16(asymmetric_levels(v, 32, q, &min));
        b.m = f32_to_f16(min);
        for (int j = 0; j < kQK; ++j) low[j] = q[j] & 0xF;
        pack_nibbles(low, b.qs);
        pack_fifth_bits(q, b.qh);
      });
    case GgmlType::Q2_K: return per_block<BlockQ2_K>(x, n, kQK_K, quantize_block_q2_k);
    case GgmlType::Q3_K: return per_block<BlockQ3_K>(x, n, kQK_K, quantize_block_q3_k);
    case GgmlType::Q4_K: return per_block<BlockQ4_K>(x, n, kQK_K, quantize_block_q4_k);
    case GgmlType::Q5_K: return per_block<BlockQ5_K>(x, n, kQK_K, quantize_block_q5_k);
    case GgmlType::Q6_K: return per_block<BlockQ6_K>(x, n, kQK_K, quantize_block_q6_k);
    case GgmlType::IQ4_NL: return per_block<BlockIQ4_NL>(x, n, kQK, quantize_block_iq4_nl);
    case GgmlType::IQ4_XS: return per_block<BlockIQ4_XS>(x, n, kQK_K, quantize_block_iq4_xs);
    default: break;
  }
  return make_error(std::string("cannot quantize to ") + traits.name);
}

Result<std::vector<uint8_t>> encode_f32_values(GgmlType type, const std::vector<float>& values) {
  std::vector<uint8_t> out;
  switch (type) {
    case GgmlType::F32:
      out.resize(values.size() * 4);
      std::memcpy(out.data(), values.data(), out.size());
      return out;
    case GgmlType::F16:
    case GgmlType::BF16: {
      out.resize(values.size() * 2);
      auto* h = reinterpret_cast<uint16_t*>(out.data());
      for (size_t i = 0; i < values.size(); ++i)
        h[i] = type == GgmlType::F16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
      return out;
    }
    default: return quantize_values(type, values.data(), static_cast<int64_t>(values.size()));
  }
}

}  // namespace pagoda
