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

void paged_attention_avx512(const PagedAttentionArgs& a, ThreadPool& pool) {
  attention_impl::paged_attention_with<Avx512>(a, pool);
}

}  // namespace pagoda
