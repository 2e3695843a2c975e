#include "kernels/cpu/dequantize.h"

#include <cassert>
#include <cstring>

#include "io/quant_blocks.h"
#include "util/fp16.h"

namespace pagoda {
namespace {

// The 32-element types: a block's integer levels q[32] and how they map to values.
void legacy_block(GgmlType type, const uint8_t* block, float* y) {
  switch (type) {
    case GgmlType::Q4_0: {
      const auto& b = *blocks_of<BlockQ4_0>(block);
      const float d = f16_to_f32(b.d);
      for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * ((b.qs[j] & 0xF) - 8);
        y[j + kQK / 2] = d * ((b.qs[j] >> 4) - 8);
      }
      return;
    }
    case GgmlType::Q4_1: {
      const auto& b = *blocks_of<BlockQ4_1>(block);
      const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
      for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * (b.qs[j] & 0xF) + m;
        y[j + kQK / 2] = d * (b.qs[j] >> 4) + m;
      }
      return;
    }
    case GgmlType::Q5_0: {
      const auto& b = *blocks_of<BlockQ5_0>(block);
      const float d = f16_to_f32(b.d);
      const uint32_t qh = load_u32(b.qh);
      for (int j = 0; j < kQK / 2; ++j) {
        const int lo = (b.qs[j] & 0xF) | (((qh >> j) & 1) << 4);
        const int hi = (b.qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        y[j] = d * (lo - 16);
        y[j + kQK / 2] = d * (hi - 16);
      }
      return;
    }
    case GgmlType::Q5_1: {
      const auto& b = *blocks_of<BlockQ5_1>(block);
      const float d = f16_to_f32(b.d), m = f16_to_f32(b.m);
      const uint32_t qh = load_u32(b.qh);
      for (int j = 0; j < kQK / 2; ++j) {
        const int lo = (b.qs[j] & 0xF) | (((qh >> j) & 1) << 4);
        const int hi = (b.qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        y[j] = d * lo + m;
        y[j + kQK / 2] = d * hi + m;
      }
      return;
    }
    case GgmlType::Q8_0: {
      const auto& b = *blocks_of<BlockQ8_0>(block);
      const float d = f16_to_f32(b.d);
      for (int j = 0; j < kQK; ++j) y[j] = d * b.qs[j];
      return;
    }
    case GgmlType::IQ4_NL: {
      const auto& b = *blocks_of<BlockIQ4_NL>(block);
      const float d = f16_to_f32(b.d);
      for (int j = 0; j < kQK / 2; ++j) {
        y[j] = d * kIQ4Values[b.qs[j] & 0xF];
        y[j + kQK / 2] = d * kIQ4Values[b.qs[j] >> 4];
      }
      return;
    }
    default: assert(false && "not a 32-element type");
  }
}

void q2_k_block(const BlockQ2_K& b, float* y) {
  const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
  // Two halves of 128; in each, 2-bit field f (shift 2f) of bytes qs[32h .. 32h + 31] holds elements
  // 128h + 32f .. +31; groups of 16 take scales[8h + 2f] and [8h + 2f + 1].
  for (int h = 0; h < 2; ++h)
    for (int f = 0; f < 4; ++f)
      for (int g = 0; g < 2; ++g) {
        const uint8_t sc = b.scales[8 * h + 2 * f + g];
        const float dl = d * (sc & 0xF), ml = dmin * (sc >> 4);
        for (int l = 0; l < 16; ++l)
          y[128 * h + 32 * f + 16 * g + l] = dl * ((b.qs[32 * h + 16 * g + l] >> (2 * f)) & 3) - ml;
      }
}

void q3_k_block(const BlockQ3_K& b, float* y) {
  const float d = f16_to_f32(b.d);
  int8_t scales[16];
  unpack_q3_k_scales(b.scales, scales);
  // As Q2_K for the low 2 bits; the high bit of element 128h + 32f + l is bit (4h + f) of hmask[l] (l < 32); a
  // clear high bit subtracts 4.
  for (int h = 0; h < 2; ++h)
    for (int f = 0; f < 4; ++f)
      for (int g = 0; g < 2; ++g) {
        const float dl = d * scales[8 * h + 2 * f + g];
        for (int l = 0; l < 16; ++l) {
          const int i = 16 * g + l;
          const int low = (b.qs[32 * h + i] >> (2 * f)) & 3;
          const int high = (b.hmask[i] >> (4 * h + f)) & 1;
          y[128 * h + 32 * f + i] = dl * (low - (high ? 0 : 4));
        }
      }
}

void q4_k_block(const BlockQ4_K& b, float* y) {
  const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
  // Four chunks of 64: bytes qs[32c .. 32c + 31], low nibbles are group 2c, high nibbles group 2c + 1.
  for (int c = 0; c < 4; ++c)
    for (int g = 0; g < 2; ++g) {
      uint8_t sc, m;
      unpack_k4_scale_min(b.scales, 2 * c + g, &sc, &m);
      const float dl = d * sc, ml = dmin * m;
      for (int l = 0; l < 32; ++l) y[64 * c + 32 * g + l] = dl * ((b.qs[32 * c + l] >> (4 * g)) & 0xF) - ml;
    }
}

void q5_k_block(const BlockQ5_K& b, float* y) {
  const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
  // As Q4_K; the fifth bit of group j's element l is bit j of qh[l].
  for (int c = 0; c < 4; ++c)
    for (int g = 0; g < 2; ++g) {
      const int j = 2 * c + g;
      uint8_t sc, m;
      unpack_k4_scale_min(b.scales, j, &sc, &m);
      const float dl = d * sc, ml = dmin * m;
      for (int l = 0; l < 32; ++l) {
        const int q = ((b.qs[32 * c + l] >> (4 * g)) & 0xF) | (((b.qh[l] >> j) & 1) << 4);
        y[32 * j + l] = dl * q - ml;
      }
    }
}

void q6_k_block(const BlockQ6_K& b, float* y) {
  const float d = f16_to_f32(b.d);
  // Two halves of 128 (ql 64 bytes, qh 32 bytes, 8 scales each); in a half, element 32f + l (f < 4, l < 32) has
  // its low nibble in ql[l + 32 (f & 1)] (high nibble when f >= 2) and its top 2 bits at bit 2f of qh[l]; groups
  // of 16 take scale 2f + l / 16.
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    const int8_t* sc = b.scales + 8 * h;
    for (int f = 0; f < 4; ++f)
      for (int l = 0; l < 32; ++l) {
        const int low = (ql[l + 32 * (f & 1)] >> (4 * (f >> 1))) & 0xF;
        const int q = (low | (((qh[l] >> (2 * f)) & 3) << 4)) - 32;
        y[128 * h + 32 * f + l] = d * sc[2 * f + l / 16] * q;
      }
  }
}

void iq4_xs_block(const BlockIQ4_XS& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < 8; ++j) {
    const int ls = ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((b.scales_h >> (2 * j)) & 3) << 4);
    const float dl = d * (ls - 32);
    for (int l = 0; l < 16; ++l) {
      y[32 * j + l] = dl * kIQ4Values[b.qs[16 * j + l] & 0xF];
      y[32 * j + l + 16] = dl * kIQ4Values[b.qs[16 * j + l] >> 4];
    }
  }
}

}  // namespace

void dequantize(GgmlType type, const uint8_t* src, int64_t n, float* out) {
  switch (type) {
    case GgmlType::F32: std::memcpy(out, src, sizeof(float) * n); return;
    case GgmlType::F16: {
      const auto* h = reinterpret_cast<const uint16_t*>(src);
      for (int64_t k = 0; k < n; ++k) out[k] = f16_to_f32(h[k]);
      return;
    }
    case GgmlType::BF16: {
      const auto* h = reinterpret_cast<const uint16_t*>(src);
      for (int64_t k = 0; k < n; ++k) out[k] = bf16_to_f32(h[k]);
      return;
    }
    case GgmlType::Q4_0:
    case GgmlType::Q4_1:
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q8_0:
    case GgmlType::IQ4_NL: {
      const uint32_t bytes = ggml_type_traits(type).block_bytes;
      for (int64_t b = 0; b < n / kQK; ++b) legacy_block(type, src + b * bytes, out + b * kQK);
      return;
    }
    case GgmlType::Q2_K:
      for (int64_t b = 0; b < n / kQK_K; ++b) q2_k_block(blocks_of<BlockQ2_K>(src)[b], out + b * kQK_K);
      return;
    case GgmlType::Q3_K:
      for (int64_t b = 0; b < n / kQK_K; ++b) q3_k_block(blocks_of<BlockQ3_K>(src)[b], out + b * kQK_K);
      return;
    case GgmlType::Q4_K:
      for (int64_t b = 0; b < n / kQK_K; ++b) q4_k_block(blocks_of<BlockQ4_K>(src)[b], out + b * kQK_K);
      return;
    case GgmlType::Q5_K:
      for (int64_t b = 0; b < n / kQK_K; ++b) q5_k_block(blocks_of<BlockQ5_K>(src)[b], out + b * kQK_K);
      return;
    case GgmlType::Q6_K:
      for (int64_t b = 0; b < n / kQK_K; ++b) q6_k_block(blocks_of<BlockQ6_K>(src)[b], out + b * kQK_K);
      return;
    case GgmlType::IQ4_XS:
      for (int64_t b = 0; b < n / kQK_K; ++b) iq4_xs_block(blocks_of<BlockIQ4_XS>(src)[b], out + b * kQK_K);
      return;
    default: assert(false && "the loader rejects unsupported weight types"); return;
  }
}

}  // namespace pagoda
