// Byte layouts of ggml's block-quantized tensor types, as GGUF files store them (little-endian, no padding).
// A row of n elements is n / elems blocks laid end to end. The meaning of every field is defined once, by the
// dequantization in kernels/cpu/dequantize.cpp; docs/quantization.md describes each format in words.
#pragma once

#include <cstdint>
#include <cstring>

namespace pagoda {

constexpr int kQK = 32;    // elements per block of the legacy types (Q4_0 ... Q8_1, IQ4_NL)
constexpr int kQK_K = 256;  // elements per super-block of the K-quants and IQ4_XS

struct BlockQ4_0 {  // x = d * (q - 8), q in 0..15
  uint16_t d;
  uint8_t qs[kQK / 2];  // element j in the low nibble of qs[j], element j + 16 in the high nibble
};
struct BlockQ4_1 {  // x = d * q + m
  uint16_t d, m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {  // x = d * (q - 16), q in 0..31; bit 4 of element j is bit j of qh (little-endian uint32)
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {  // x = d * q + m
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {  // x = d * q
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ8_1 {  // activations for Q4_1 / Q5_1: x = d * q, s = d * sum(q)
  uint16_t d, s;
  int8_t qs[kQK];
};
struct BlockQ2_K {  // 16 groups of 16: x = d * (sc & 15) * q - dmin * (sc >> 4), q in 0..3
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d, dmin;
};
struct BlockQ3_K {  // 16 groups of 16: x = d * (s - 32) * (q - 4 * !hbit), 6-bit scales s packed in 12 bytes
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
struct BlockQ4_K {  // 8 groups of 32: x = d * sc * q - dmin * m, 6-bit sc and m packed in 12 bytes
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {  // as Q4_K with a fifth bit from qh
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {  // 16 groups of 16: x = d * sc * (q - 32), q in 0..63 (4 low bits in ql, 2 high in qh)
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
struct BlockQ8_K {  // activations for the K-quants and IQ4_XS: x = d * q; bsums: sums of q in groups of 16
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
struct BlockIQ4_NL {  // x = d * kIQ4Values[q]
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockIQ4_XS {  // 8 groups of 32: x = d * (ls - 32) * kIQ4Values[q], 6-bit ls from scales_l and scales_h
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);

// A row's bytes viewed as blocks of one type.
template <class Block>
const Block* blocks_of(const uint8_t* bytes) {
  return reinterpret_cast<const Block*>(bytes);
}

// The 32 fifth bits of a Q5_0 / Q5_1 block (qh, little-endian).
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 16 non-linear levels of IQ4_NL and IQ4_XS.
inline constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// The 6-bit scale and min of group j (0..7) of a Q4_K / Q5_K super-block from its 12 packed bytes.
inline void unpack_k4_scale_min(const uint8_t* s, int j, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// The 16 signed 6-bit scales (already minus 32) of a Q3_K super-block from its 12 packed bytes: the low 4 bits
// of scale i are nibble i of bytes 0..7 (low nibbles first), the high 2 bits are bit pair i / 4 of byte 8 + i % 4.
inline void unpack_q3_k_scales(const uint8_t* s, int8_t out[16]) {
  for (int i = 0; i < 16; ++i) {
    const int low = i < 8 ? (s[i] & 0xF) : (s[i - 8] >> 4);
    const int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    out[i] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

}  // namespace pagoda
