// SwiGLU with AVX2 + FMA: eight lanes of silu(gate) * up at a time, exp from a range reduction and a polynomial
// (below). Every element goes through the same vector code, the last partial vector through a zero-padded copy, so
// an element's value does not depend on where a thread's range starts or ends.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/activations.h"

namespace pagoda {
namespace {

// e^x for eight lanes. x = n ln2 + r with n = round(x / ln2) and |r| <= ln2 / 2 (ln2 split in two parts so that
// n ln2 is exact to ~2^-40); e^r by its Taylor series to r^7 (truncation error under 6e-9 relative on that interval,
// below float's 6e-8 rounding step), evaluated by Horner; 2^n put into the exponent bits. The input is clamped to
// [-87.3, 88.3], where n stays in [-126, 127] and the result a normal float: below, e^x reads as 1.2e-38 instead
// of a denormal or 0; above, 2.1e38 instead of a larger value or inf. In silu's 1 + e^-x either is lost anyway.
inline __m256 exp_lanes(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);  // ln2's upper 16 significant bits
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682028622680e-6f), r);    // ln2 - 0.693145751953125
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i scale = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

inline __m256 silu_mul_lanes(__m256 g, __m256 u) {
  const __m256 e = exp_lanes(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

// out[i] = f(a[i], b[i]), eight lanes at a time; the last partial vector through zero-padded copies. out may be a.
template <class F>
void map_lanes(const float* a, const float* b, int64_t n, float* out, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) {
    float pa[8] = {}, pb[8] = {};
    const size_t rest = sizeof(float) * static_cast<size_t>(n - i);
    std::memcpy(pa, a + i, rest);
    std::memcpy(pb, b + i, rest);
    _mm256_storeu_ps(pa, f(_mm256_loadu_ps(pa), _mm256_loadu_ps(pb)));
    std::memcpy(out + i, pa, rest);
  }
}

}  // namespace

void exp_avx2(const float* x, int64_t n, float* out) {
  map_lanes(x, x, n, out, [](__m256 v, __m256) { return exp_lanes(v); });
}

void silu_mul_avx2(float* gate, const float* up, int64_t n) { map_lanes(gate, up, n, gate, silu_mul_lanes); }

}  // namespace pagoda
