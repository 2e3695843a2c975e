#include "io/quantize_k_quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "io/quant_scale_search.h"
#include "util/fp16.h"

namespace pagoda {
namespace {

// Four 2-bit levels per byte: element 128h + 32s + l at bits 2s of qs[32h + l] (Q2_K, Q3_K).
void pack_2bit(const uint8_t* q, uint8_t* qs) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* e = q + 128 * h + l;
      qs[32 * h + l] = static_cast<uint8_t>(e[0] | (e[32] << 2) | (e[64] << 4) | (e[96] << 6));
    }
}

// The 6-bit scale and min of 8 groups into 12 bytes (the inverse of unpack_k4_scale_min).
void pack_k4_scales(const uint8_t* sc, const uint8_t* m, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// Q4_K and Q5_K share everything but the number of levels and the search range.
template <class Block>
void quantize_k4_scales_mins(const float* x, Block& b, int nmax, float rmin, int nstep, uint8_t* q) {
  float scale[8], min[8], max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* g = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += g[l] * g[l];
    const float rms = std::sqrt(sum_x2 / 32);
    float w[32];
    for (int l = 0; l < 32; ++l) w[l] = rms + std::fabs(g[l]);
    scale[j] = fit_scale_and_min(32, nmax, g, w, q + 32 * j, &min[j], rmin, 0.1f, nstep, false);
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(std::min(63, round_to_int(inv_scale * scale[j])));
    m[j] = static_cast<uint8_t>(std::min(63, round_to_int(inv_min * min[j])));
  }
  pack_k4_scales(sc, m, b.scales);
  b.d = f32_to_f16(max_scale / 63.0f);
  b.dmin = f32_to_f16(max_min / 63.0f);
  // Levels against the quantized scale and min (a group whose scale rounded to 0 keeps its searched levels).
  for (int j = 0; j < 8; ++j) {
    const float d = f16_to_f32(b.d) * sc[j];
    if (d == 0.0f) continue;
    const float dm = f16_to_f32(b.dmin) * m[j];
    for (int l = 0; l < 32; ++l) q[32 * j + l] = static_cast<uint8_t>(std::clamp(round_to_int((x[32 * j + l] + dm) / d), 0, nmax));
  }
}

}  // namespace

void quantize_block_q2_k(const float* x, BlockQ2_K& b) {
  uint8_t q[256];
  float scale[16], min[16], max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 16; ++j) {
    float w[16];
    for (int l = 0; l < 16; ++l) w[l] = std::fabs(x[16 * j + l]);
    scale[j] = fit_scale_and_min(16, 3, x + 16 * j, w, q + 16 * j, &min[j], -0.5f, 0.1f, 15, true);
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  std::memset(b.scales, 0, sizeof b.scales);
  b.d = b.dmin = f32_to_f16(0.0f);
  if (max_scale > 0) {
    const float inv = 15.0f / max_scale;
    for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>(round_to_int(inv * scale[j]));
    b.d = f32_to_f16(max_scale / 15.0f);
  }
  if (max_min > 0) {
    const float inv = 15.0f / max_min;
    for (int j = 0; j < 16; ++j) b.scales[j] |= static_cast<uint8_t>(round_to_int(inv * min[j]) << 4);
    b.dmin = f32_to_f16(max_min / 15.0f);
  }
  for (int j = 0; j < 16; ++j) {
    const float d = f16_to_f32(b.d) * (b.scales[j] & 0xF);
    if (d == 0.0f) continue;
    const float dm = f16_to_f32(b.dmin) * (b.scales[j] >> 4);
    for (int l = 0; l < 16; ++l) q[16 * j + l] = static_cast<uint8_t>(std::clamp(round_to_int((x[16 * j + l] + dm) / d), 0, 3));
  }
  pack_2bit(q, b.qs);
}

void quantize_block_q3_k(const float* x, BlockQ3_K& b) {
  uint8_t q[256];
  float scale[16], max_scale = 0.0f, amax = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scale[j] = fit_symmetric_scale_by_level_moves(16, 4, x + 16 * j, q + 16 * j);
    if (std::fabs(scale[j]) > amax) {
      amax = std::fabs(scale[j]);
      max_scale = scale[j];
    }
  }
  // 6-bit scales s + 32 (s in -32..31): low nibbles in bytes 0..7, top 2 bits in bytes 8..11 (unpack_q3_k_scales).
  std::memset(b.scales, 0, sizeof b.scales);
  b.d = f32_to_f16(0.0f);
  if (max_scale != 0.0f) {
    const float inv = -32.0f / max_scale;
    for (int j = 0; j < 16; ++j) {
      const int s = std::clamp(round_to_int(inv * scale[j]), -32, 31) + 32;
      if (j < 8)
        b.scales[j] = static_cast<uint8_t>(s & 0xF);
      else
        b.scales[j - 8] |= static_cast<uint8_t>((s & 0xF) << 4);
      b.scales[8 + j % 4] |= static_cast<uint8_t>((s >> 4) << (2 * (j / 4)));
    }
    b.d = f32_to_f16(1 / inv);
  }
  int8_t s[16];
  unpack_q3_k_scales(b.scales, s);
  for (int j = 0; j < 16; ++j) {
    const float d = f16_to_f32(b.d) * s[j];
    if (d == 0.0f) continue;
    for (int l = 0; l < 16; ++l) q[16 * j + l] = static_cast<uint8_t>(std::clamp(round_to_int(x[16 * j + l] / d), -4, 3) + 4);
  }
  // Level q in 0..7: bit 2 in hmask (element e at bit e / 32 of hmask[e % 32]), the low 2 bits in qs.
  std::memset(b.hmask, 0, sizeof b.hmask);
  for (int e = 0; e < 256; ++e)
    if (q[e] > 3) {
      b.hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
      q[e] -= 4;
    }
  pack_2bit(q, b.qs);
}

void quantize_block_q4_k(const float* x, BlockQ4_K& b) {
  uint8_t q[256];
  quantize_k4_scales_mins(x, b, 15, -1.0f, 20, q);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) b.qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
}

void quantize_block_q5_k(const float* x, BlockQ5_K& b) {
  uint8_t q[256];
  quantize_k4_scales_mins(x, b, 31, -0.5f, 15, q);
  // Chunk c of 64: low nibbles as Q4_K; the fifth bit of element 64c + l at bit 2c of qh[l], of 64c + 32 + l at
  // bit 2c + 1.
  std::memset(b.qh, 0, sizeof b.qh);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const uint8_t lo = q[64 * c + l], hi = q[64 * c + 32 + l];
      b.qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      b.qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
}

void quantize_block_q6_k(const float* x, BlockQ6_K& b) {
  uint8_t q[256];
  float scale[16], max_scale = 0.0f, amax = 0.0f;
  for (int g = 0; g < 16; ++g) {
    scale[g] = fit_symmetric_scale(16, 32, x + 16 * g, q + 16 * g);
    if (std::fabs(scale[g]) > amax) {
      amax = std::fabs(scale[g]);
      max_scale = scale[g];
    }
  }
  if (amax < kGroupMaxEps) {
    std::memset(&b, 0, sizeof b);
    return;
  }
  const float inv = -128.0f / max_scale;
  b.d = f32_to_f16(1 / inv);
  for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<int8_t>(std::min(127, round_to_int(inv * scale[g])));
  for (int g = 0; g < 16; ++g) {
    const float d = f16_to_f32(b.d) * b.scales[g];
    if (d == 0.0f) continue;
    for (int l = 0; l < 16; ++l) q[16 * g + l] = static_cast<uint8_t>(std::clamp(round_to_int(x[16 * g + l] / d), -32, 31) + 32);
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

}  // namespace pagoda
