// AVX-512 VNNI integer dot products on 256-bit vectors: dpbusd (u8 x s8, 4 products into int32, no saturation)
// and dpwssd (int16 pairs into int32). Compiled with -mavx512vnni; run only where the CPU has it.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_dot_simd.h"
#include "kernels/cpu/quant_dot_zmm.h"

namespace pagoda {
namespace {

struct VnniOps {
  static constexpr bool kUnsignedOffset = true;  // dpbusd does not saturate
  static __m256i dot4(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_epi32(acc, u8, s8); }
  static __m256i madd16(__m256i acc, __m256i a16, __m256i b16) { return _mm256_dpwssd_epi32(acc, a16, b16); }
};

}  // namespace

QuantDotFn quant_dot_avx512(GgmlType weight) { return quant_kernels_avx512(weight).dot; }

// Tiles of 4 rows x 4 tokens (32 ymm registers: 16 accumulators).
QuantKernels quant_kernels_avx512(GgmlType weight) {
  QuantKernels k = quant_simd::kernels_for<VnniOps, 4, 4>(weight);
  switch (weight) {
    case GgmlType::Q4_K:
      k.tile = quant_zmm::tile_q4_k<2, 4>;
      k.tile_rows = 2;
      k.tile_tokens = 4;
      break;
    default: break;
  }
  return k;
}

}  // namespace pagoda
