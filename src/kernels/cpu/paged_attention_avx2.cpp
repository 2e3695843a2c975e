// The fused paged-attention kernel for AVX2 + FMA (two ymm per 16 floats).
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/paged_attention_impl.h"

namespace pagoda {
namespace {

struct Avx2 {
  static constexpr int kRegisterVectors = 8;  // V values the register file holds
  struct V {
    __m256 lo, hi;  // lanes 0..7, 8..15
  };
  static __m256i mask8(int n) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
  }
  static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static V set1(float f) { return {_mm256_set1_ps(f), _mm256_set1_ps(f)}; }
  static V load(const float* p, int n) {
    if (n >= 16) return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
    return {_mm256_maskload_ps(p, mask8(n)), n > 8 ? _mm256_maskload_ps(p + 8, mask8(n - 8)) : _mm256_setzero_ps()};
  }
  static void store(float* p, V v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  static V add(V a, V b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  static V sub(V a, V b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
  static V mul(V a, V b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  static V max(V a, V b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
  static V min(V a, V b) { return {_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)}; }
  static V fma(V a, V b, V c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
  static V round_nearest(V v) {
    constexpr int kMode = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    return {_mm256_round_ps(v.lo, kMode), _mm256_round_ps(v.hi, kMode)};
  }
  static __m256 pow2i8(__m256 n) {
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_castsi256_ps(e);
  }
  static V pow2i(V n) { return {pow2i8(n.lo), pow2i8(n.hi)}; }
  static float reduce_sum(V v) {
    const __m256 u = _mm256_add_ps(v.lo, v.hi);
    const __m128 w4 = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
    const __m128 w2 = _mm_add_ps(w4, _mm_movehl_ps(w4, w4));
    return _mm_cvtss_f32(_mm_add_ss(w2, _mm_shuffle_ps(w2, w2, 1)));
  }
  // Lane i: reduce_sum(d[i]) for 16 vectors at once (keys 0..7 into lo, 8..15 into hi), adding the same pairs at
  // each level of the same tree, with the vectors' halves, quarters, ... transposed side by side by shuffles.
  __attribute__((always_inline)) static __m256 reduce_sum8(const V* d) {
    __m256 u[8], v[4], w[2];
    for (int i = 0; i < 8; ++i) u[i] = _mm256_add_ps(d[i].lo, d[i].hi);  // lanes l + l+8
    for (int i = 0; i < 4; ++i)  // [v of 2i | v of 2i+1] (u[i] + u[i+4], 4 lanes each)
      v[i] = _mm256_add_ps(_mm256_permute2f128_ps(u[2 * i], u[2 * i + 1], 0x20),
                           _mm256_permute2f128_ps(u[2 * i], u[2 * i + 1], 0x31));
    for (int i = 0; i < 2; ++i)  // [w0, w1 of 4i, w0, w1 of 4i+2 | the same of 4i+1, 4i+3] (v[i] + v[i+2])
      w[i] = _mm256_add_ps(_mm256_shuffle_ps(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm256_shuffle_ps(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // [sum of 0, 2, 4, 6 | of 1, 3, 5, 7] (w0 + w1), then into order.
    const __m256 s = _mm256_add_ps(_mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm256_permutevar8x32_ps(s, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
  __attribute__((always_inline)) static V reduce_sum16(const V* d) { return {reduce_sum8(d), reduce_sum8(d + 8)}; }
  // Lanes >= n of a partial row are read from a zeroed copy (never past the row).
  template <class Load>
  static V load_u16(const uint16_t* p, int n, Load cvt8) {
    if (n >= 16)
      return {cvt8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
              cvt8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
    alignas(32) uint16_t tmp[16] = {};
    std::memcpy(tmp, p, sizeof(uint16_t) * n);
    return load_u16(tmp, 16, cvt8);
  }
  static V load_f16(const uint16_t* p, int n) {
    return load_u16(p, n, [](__m128i h) { return _mm256_cvtph_ps(h); });
  }
  static V load_bf16(const uint16_t* p, int n) {
    return load_u16(p, n, [](__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); });
  }
  static V load_i8(const int8_t* p) {
    const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8));
    return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi))};
  }
  static float f16(uint16_t bits) { return _cvtsh_ss(bits); }
  static float reduce_max(V v) {  // (the maximum is the same in any order)
    const __m256 m8 = _mm256_max_ps(v.lo, v.hi);
    const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
    const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    return _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
  }
};

}  // namespace

void paged_attention_region_avx2(const PagedAttentionArgs& a, ThreadPool& pool, int tid, std::vector<float>& scratch) {
  attention_impl::paged_attention_region_with<Avx2>(a, pool, tid, scratch);
}

}  // namespace pagoda
