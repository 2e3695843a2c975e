// The fused paged-attention kernel for AVX-512 (one zmm per 16 floats).
// GCC 12's own avx512fintrin.h trips -Wuninitialized through _mm512_undefined_* (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/paged_attention_impl.h"

namespace pagoda {
namespace {

struct Avx512 {
  static constexpr int kRegisterVectors = 32;  // V values the register file holds
  using V = __m512;
  static __mmask16 mask(int n) { return n >= 16 ? 0xffff : static_cast<__mmask16>((1u << n) - 1); }
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float f) { return _mm512_set1_ps(f); }
  static V load(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V round_nearest(V v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2i(V n) {
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_castsi512_ps(e);
  }
  static float reduce_sum(V v) {
    const __m256 u = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    const __m128 w4 = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
    const __m128 w2 = _mm_add_ps(w4, _mm_movehl_ps(w4, w4));
    return _mm_cvtss_f32(_mm_add_ss(w2, _mm_shuffle_ps(w2, w2, 1)));
  }
  // Lane i: reduce_sum(d[i]) for 16 vectors at once, adding the same pairs at each level of the same tree, with the
  // vectors' halves, quarters, ... transposed side by side by shuffles between the levels.
  __attribute__((always_inline)) static V reduce_sum16(const V* d) {
    V u[8], v[4], w[2];
    for (int i = 0; i < 8; ++i)  // [u of d[2i] | u of d[2i+1]]: lanes l + l+8 of each
      u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(d[2 * i], d[2 * i + 1], 0x44),
                           _mm512_shuffle_f32x4(d[2 * i], d[2 * i + 1], 0xEE));
    for (int i = 0; i < 4; ++i)  // [v of 4i | 4i+1 | 4i+2 | 4i+3] (u[i] + u[i+4], 4 lanes each)
      v[i] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], 0x88),
                           _mm512_shuffle_f32x4(u[2 * i], u[2 * i + 1], 0xDD));
    for (int i = 0; i < 2; ++i)  // per 128-bit lane k: [w0, w1 of 8i+k | w0, w1 of 8i+4+k] (v[i] + v[i+2])
      w[i] = _mm512_add_ps(_mm512_shuffle_ps(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_ps(v[2 * i], v[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // Per 128-bit lane k: the sums (w0 + w1) of k, 4+k, 8+k, 12+k; then into order.
    const V s = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                              _mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), s);
  }
  static float reduce_max(V v) { return _mm512_reduce_max_ps(v); }
  static V load_f16(const uint16_t* p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p)); }
  static V load_bf16(const uint16_t* p, int n) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask(n), p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static V load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static float f16(uint16_t bits) { return _cvtsh_ss(bits); }
};

}  // namespace

void paged_attention_region_avx512(const PagedAttentionArgs& a, ThreadPool& pool, int tid, std::vector<float>& scratch) {
  attention_impl::paged_attention_region_with<Avx512>(a, pool, tid, scratch);
}

}  // namespace pagoda
