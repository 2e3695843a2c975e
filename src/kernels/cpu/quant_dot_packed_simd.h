// What the SIMD packed kernels (quant_dot_packed_avx2.cpp, quant_dot_packed_avx512.cpp) share: reading one token's
// side of block b from a Q8_0 activation row (quant_dot.h) and the record geometry. Include only from those files.
#pragma once

#include "kernels/cpu/isa_namespace.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "io/quant_blocks.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_dot_packed.h"

namespace pagoda::inline PAGODA_ISA_NAMESPACE::quant_packed {

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline float load_f32(const void* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// One activation row's blocks, block sums and scales.
struct TokenRow {
  const uint8_t* blocks;  // [nb] BlockQ8_0
  const uint8_t* block_sums;
  const uint8_t* scales;
  TokenRow(const uint8_t* row, int64_t K) {
    const Q8_0Row r = q8_0_row(const_cast<uint8_t*>(row), K);
    blocks = row;
    block_sums = r.block_sums;
    scales = r.scales;
  }
  const int8_t* qs(int64_t b) const { return reinterpret_cast<const BlockQ8_0*>(blocks)[b].qs; }
  int32_t block_sum(int64_t b) const { return load_i32(block_sums + 4 * b); }
  float scale(int64_t b) const { return load_f32(scales + 4 * b); }
};

// Software prefetch of the record `ahead` records past rec (prefetches never fault, past the end included). The
// K-quant records are read out of address order (ql, qh and scales of one quarter), which the hardware prefetcher
// does not follow at decode's pace: measured 22 -> 63 GB/s on a Q6_K matrix streamed from memory (AVX-512, 2 threads).
template <size_t kRecord>
inline void prefetch_ahead(const uint8_t* rec, int ahead = 2) {
  const uint8_t* p = rec + ahead * kRecord;
  for (size_t off = 0; off < kRecord; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
}

// Decode's stream ahead for tiles that read a group of 16 rows in two passes over its records (rows 0-7, then rows
// 8-15, which find the records in L1): demand misses, and the hardware prefetcher they drive, then keep memory busy
// during the first pass only. This prefetches the next group (contiguous in the packed matrix) into L2, its lines
// spread evenly over the current group's iterations (quant_dot_packed.h's next_group_lines_by), so memory streams
// while the arithmetic of both passes runs. Past a range's last group it touches another thread's rows or the next
// matrix: prefetches never fault.
class NextGroupPrefetch {
 public:
  // `iterations`: the block iterations of this group's passes (nb per pass); at() is called with 0, 1, ... in turn.
  NextGroupPrefetch(const uint8_t* group, size_t group_bytes, int64_t iterations)
      : next_(group + group_bytes), lines_(group_bytes / 64), step_(next_group_step(lines_, iterations)) {}
  void at(int64_t iteration) {
    for (const uint64_t by = next_group_lines_by(iteration, step_, lines_); done_ < by; ++done_)
      _mm_prefetch(reinterpret_cast<const char*>(next_ + 64 * done_), _MM_HINT_T1);
  }

 private:
  const uint8_t* next_;
  uint64_t lines_;
  uint64_t step_;
  uint64_t done_ = 0;
};

// Bytes of one record (16 rows' block b): the 16 f16 scales, then the chunks of 64 bytes.
constexpr size_t record_bytes(int chunks) { return 2 * kPackRows + 64 * static_cast<size_t>(chunks); }

// Which 4 activation bytes level vector i multiplies: Q8_0's 8 chunks are elements 4i..; a nibble type's chunk c
// gives vector 2c (low nibbles, elements 4c..) and 2c + 1 (high nibbles, elements 16 + 4c..).
constexpr int x_offset_q8(int i) { return 4 * i; }
constexpr int x_offset_nibbles(int i) { return i % 2 == 0 ? 4 * (i / 2) : 16 + 4 * (i / 2); }

// Q4_K records: the 16 rows' 6-bit sub-block scales and mins (quant_combine::k4_scales, 16 rows at once) from the
// record's scales[12][16].
struct Q4_KScales {
  __m128i sc[8], m[8];  // 16 rows' sub-block scales and mins, one byte per row
  explicit Q4_KScales(const uint8_t* packed) {
    __m128i s[12];
    for (int k = 0; k < 12; ++k) s[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + 16 * k));
    const __m128i low6 = _mm_set1_epi8(0x3F), low4 = _mm_set1_epi8(0x0F), top2 = _mm_set1_epi8(0x03);
    auto top_bits = [&](__m128i v) {  // bits 6..7 of each byte, moved to bits 4..5
      return _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(v, 6), top2), 4);
    };
    for (int j = 0; j < 4; ++j) {
      sc[j] = _mm_and_si128(s[j], low6);
      m[j] = _mm_and_si128(s[j + 4], low6);
      sc[j + 4] = _mm_or_si128(_mm_and_si128(s[j + 8], low4), top_bits(s[j]));
      m[j + 4] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(s[j + 8], 4), low4), top_bits(s[j + 4]));
    }
  }
  // Rows 8 half .. 8 half + 7: (m_2i, m_2i+1) byte pairs.
  __m128i min_pairs(int i, int half) const {
    return half ? _mm_unpackhi_epi8(m[2 * i], m[2 * i + 1]) : _mm_unpacklo_epi8(m[2 * i], m[2 * i + 1]);
  }
  // Rows 8 half .. 8 half + 7: (sc_j, sc_j) byte pairs.
  __m128i scale_pairs(int j, int half) const {
    return half ? _mm_unpackhi_epi8(sc[j], sc[j]) : _mm_unpacklo_epi8(sc[j], sc[j]);
  }
};

// Q3_K records: the 16 rows' signed scales (unpack_q3_k_scales, 16 rows at once) of group j, one int8 per row, from
// the record's scales[12][16]: low 4 bits from byte j % 8 (its high nibble for j >= 8), top 2 from byte 8 + j % 4,
// bits 2 (j / 4).., minus 32.
inline __m128i q3_k_scales(const uint8_t* packed, int j) {
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + 16 * (j % 8)));
  const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + 16 * (8 + j % 4)));
  const __m128i low = _mm_and_si128(j < 8 ? lo : _mm_srli_epi16(lo, 4), _mm_set1_epi8(0x0F));
  const __m128i high = _mm_and_si128(_mm_srli_epi16(hi, 2 * (j / 4)), _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
}

// Tile<n_tokens>::run(...) for 1 <= n_tokens <= kMaxTokens: the packed kernels' dispatch on the token count.
template <template <int> class Tile, int kMaxTokens, int kTokens = 1>
void tile_any(const uint8_t* group, const uint8_t* x0, size_t x_stride, int64_t K, float* y, int64_t y_stride,
              int n_tokens, int n_rows) {
  if constexpr (kTokens < kMaxTokens) {
    if (n_tokens != kTokens)
      return tile_any<Tile, kMaxTokens, kTokens + 1>(group, x0, x_stride, K, y, y_stride, n_tokens, n_rows);
  }
  Tile<kTokens>::run(group, x0, x_stride, K, y, y_stride, n_rows);
}

}  // namespace pagoda::quant_packed
