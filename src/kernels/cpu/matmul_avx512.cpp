// AVX-512 matmul: 16-lane vectors; tiles of 6 tokens x 4 rows (prefill), 4 x 6 (small batches), 1 x 8 (decode).
//
// GCC 12's own avx512fintrin.h trips -Wuninitialized through _mm512_undefined_* (GCC bug 105593, fixed in
// GCC 13); the warning is about the compiler's header, not this code.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_tiles.h"
#include "kernels/cpu_features.h"

namespace pagoda::kernels {
namespace {

struct Avx512 {
  using Vec = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kTileTokens = 6;  // prefill: 6 x 4
  static constexpr int kTileRows = 4;
  static constexpr int kSmallTileTokens = 4;  // small batches: 4 x 6 (16 tokens = 4 full tiles)
  static constexpr int kSmallTileRows = 6;
  static constexpr int kDecodeTileRows = 8;
  static int64_t token_tile_bytes() { return cpu_l1d_bytes(); }  // tokens outer up to the whole L1d

  static __mmask16 mask(int n) { return n == kLanes ? 0xffff : static_cast<__mmask16>((1u << n) - 1); }
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec load_x(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static Vec fma(Vec a, Vec b, Vec acc) { return _mm512_fmadd_ps(a, b, acc); }
  static float reduce(Vec v) { return _mm512_reduce_add_ps(v); }

  // 16 weights of a row from element k (k % 16 == 0) as f32; lanes at or past n are zero.
  template <GgmlType kType>
  static Vec load_w(const uint8_t* row, int64_t k, int n) {
    if constexpr (kType == GgmlType::F32) {
      return _mm512_maskz_loadu_ps(mask(n), reinterpret_cast<const float*>(row) + k);
    } else if constexpr (kType == GgmlType::F16) {
      return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), reinterpret_cast<const uint16_t*>(row) + k));
    } else {
      static_assert(kType == GgmlType::BF16);
      const __m256i h = _mm256_maskz_loadu_epi16(mask(n), reinterpret_cast<const uint16_t*>(row) + k);
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
  }
};

}  // namespace

void matmul_rows_avx512(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                        int64_t row_end) {
  tiles::matmul_rows_any<Avx512>(w, x, num_tokens, y, row_begin, row_end, matmul_rows_scalar);
}

}  // namespace pagoda::kernels
