// AVX2 + FMA + F16C matmul: 8-lane vectors; batched tiles of 4 tokens x 3 rows (12 accumulators of the 16 ymm
// registers), decode tiles of 1 x 6 (see matmul_tiles.h). Partial steps go through a zero-padded copy, since
// AVX2 has no masked 16-bit loads.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_tiles.h"

namespace pagoda::kernels {
namespace {

struct Avx2 {
  using Vec = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kTileTokens = 4;
  static constexpr int kTileRows = 3;
  static constexpr int kSmallTileTokens = 4;
  static constexpr int kSmallTileRows = 3;
  static constexpr int kDecodeTileRows = 6;
  // Tokens outer (tiled_rows) up to half of a Zen 3 L1d: 4 tokens of up to 1,024 floats.
  static int64_t token_tile_bytes() { return int64_t{16} << 10; }

  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load_x(const float* p, int n) {
    if (n == kLanes) return _mm256_loadu_ps(p);
    float buf[kLanes] = {};
    std::memcpy(buf, p, sizeof(float) * n);
    return _mm256_loadu_ps(buf);
  }
  static Vec fma(Vec a, Vec b, Vec acc) { return _mm256_fmadd_ps(a, b, acc); }
  static float reduce(Vec v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
  }

  // 8 weights of a row from element k (k % 8 == 0) as f32; lanes at or past n are zero.
  template <GgmlType kType>
  static Vec load_w(const uint8_t* row, int64_t k, int n) {
    if constexpr (kType == GgmlType::F32) {
      return load_x(reinterpret_cast<const float*>(row) + k, n);
    } else {
      static_assert(kType == GgmlType::F16 || kType == GgmlType::BF16);
      const uint16_t* src = reinterpret_cast<const uint16_t*>(row) + k;
      uint16_t buf[kLanes] = {};
      if (n < kLanes) {
        std::memcpy(buf, src, sizeof(uint16_t) * n);
        src = buf;
      }
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      if constexpr (kType == GgmlType::F16) return _mm256_cvtph_ps(h);
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
  }
};

}  // namespace

void matmul_rows_avx2(const WeightMatrix& w, const float* x, int64_t num_tokens, float* y, int64_t row_begin,
                      int64_t row_end) {
  tiles::matmul_rows_any<Avx2>(w, x, num_tokens, y, row_begin, row_end, matmul_rows_scalar);
}

}  // namespace pagoda::kernels
