// AVX2 integer dot products: maddubs (u8 x s8 -> pairs of int16) and madd (-> int32).
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_dot_simd.h"

namespace pagoda {
namespace {

struct Avx2Ops {
  static constexpr bool kUnsignedOffset = false;  // maddubs saturates: use the sign trick
  static __m256i dot4(__m256i acc, __m256i u8, __m256i s8) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
  }
  static __m256i madd16(__m256i acc, __m256i a16, __m256i b16) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a16, b16));
  }
};

}  // namespace

QuantDotFn quant_dot_avx2(GgmlType weight) { return quant_simd::dot_for<Avx2Ops>(weight); }

// Tiles of 2 rows x 4 tokens (16 ymm registers: 8 accumulators).
QuantKernels quant_kernels_avx2(GgmlType weight) { return quant_simd::kernels_for<Avx2Ops, 2, 4>(weight); }

}  // namespace pagoda
