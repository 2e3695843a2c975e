#include "io/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "io/quant_blocks.h"
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

int nearest(float v) { return static_cast<int>(std::lround(v)); }

// Q4_K: per sub-block of 32 a scale (max - min) / 15 and a min (-min, >= 0), both quantized to 6 bits against the
// super-block's d and dmin; then the 4-bit levels against the quantized scale and min.
void quantize_q4_k(const float* x, BlockQ4_K& b) {
  float scale[8], min[8], max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    float lo, hi;
    minmax(x + 32 * j, 32, &lo, &hi);
    lo = std::min(lo, 0.0f);
    scale[j] = (hi - lo) / 15.0f;
    min[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  const float d = max_scale / 63.0f, dmin = max_min / 63.0f;
  b.d = f32_to_f16(d);
  b.dmin = f32_to_f16(dmin);
  const float dq = f16_to_f32(b.d), dminq = f16_to_f32(b.dmin);
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(std::clamp(dq > 0 ? nearest(scale[j] / dq) : 0, 0, 63));
    m[j] = static_cast<uint8_t>(std::clamp(dminq > 0 ? nearest(min[j] / dminq) : 0, 0, 63));
  }
  // The 12 packed bytes (the inverse of unpack_k4_scale_min).
  for (int j = 0; j < 4; ++j) {
    b.scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    b.scales[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    b.scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
  uint8_t q[256];
  for (int j = 0; j < 8; ++j) {
    const float step = dq * sc[j], offset = dminq * m[j];
    for (int l = 0; l < 32; ++l)
      q[32 * j + l] = static_cast<uint8_t>(std::clamp(step > 0 ? nearest((x[32 * j + l] + offset) / step) : 0, 0, 15));
  }
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) b.qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
}

// Q6_K: per group of 16 a symmetric scale max|x| / 31, quantized to int8 against the super-block's d; levels
// q - 32 in -32..31.
void quantize_q6_k(const float* x, BlockQ6_K& b) {
  float scale[16], max_scale = 0.0f;
  for (int g = 0; g < 16; ++g) {
    float amax = 0.0f;
    for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * g + l]));
    scale[g] = amax / 31.0f;
    max_scale = std::max(max_scale, scale[g]);
  }
  b.d = f32_to_f16(max_scale / 127.0f);
  const float dq = f16_to_f32(b.d);
  uint8_t q[256];
  for (int g = 0; g < 16; ++g) {
    b.scales[g] = static_cast<int8_t>(std::clamp(dq > 0 ? nearest(scale[g] / dq) : 0, -128, 127));
    const float step = dq * b.scales[g];
    for (int l = 0; l < 16; ++l)
      q[16 * g + l] =
          static_cast<uint8_t>(std::clamp(step > 0 ? nearest(x[16 * g + l] / step) : 0, -32, 31) + 32);
  }
  // Element 128h + 32f + l: low nibble in ql[64h + l + 32 (f & 1)] (high nibble when f >= 2), top 2 bits at bit 2f
  // of qh[32h + l].
  std::memset(b.ql, 0, sizeof b.ql);
  std::memset(b.qh, 0, sizeof b.qh);
  for (int h = 0; h < 2; ++h)
    for (int f = 0; f < 4; ++f)
      for (int l = 0; l < 32; ++l) {
        const uint8_t v = q[128 * h + 32 * f + l];
        b.ql[64 * h + l + 32 * (f & 1)] |= static_cast<uint8_t>((v & 0xF) << (4 * (f >> 1)));
        b.qh[32 * h + l] |= static_cast<uint8_t>((v >> 4) << (2 * f));
      }
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
    case GgmlType::Q4_K:
    case GgmlType::Q6_K: return true;
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
    case GgmlType::Q4_K: return per_block<BlockQ4_K>(x, n, kQK_K, quantize_q4_k);
    case GgmlType::Q6_K: return per_block<BlockQ6_K>(x, n, kQK_K, quantize_q6_k);
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

uint32_t gguf_file_type(GgmlType t, bool q4_k_m) {
  if (q4_k_m) return 15;
  switch (t) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1;
    case GgmlType::Q4_0: return 2;
    case GgmlType::Q4_1: return 3;
    case GgmlType::Q8_0: return 7;
    case GgmlType::Q5_0: return 8;
    case GgmlType::Q5_1: return 9;
    case GgmlType::Q4_K: return 14;  // "Q4_K_S": every matrix Q4_K
    case GgmlType::Q6_K: return 18;
    case GgmlType::BF16: return 32;
    default: return 0;
  }
}

}  // namespace pagoda
