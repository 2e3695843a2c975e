// KV rows stored with AVX2 + F16C: the same bytes as the portable kv_store_row (round to nearest even everywhere;
// hardware f16 conversion rounds as the portable one does, NaN included: util/fp16.h).
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "kernels/cpu/kv_store.h"
#include "util/fp16.h"

namespace pagoda {
namespace {

void store_f16(const float* x, int64_t n, uint8_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) {
    const uint16_t h = f32_to_f16(x[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

// bf16: bits + 0x7fff + (bit 16), the top half; NaN keeps its top half with the quiet bit set.
void store_bf16(const float* x, int64_t n, uint8_t* out) {
  int64_t i = 0;
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  for (; i + 8 <= n; i += 8) {
    const __m256i b = _mm256_castps_si256(_mm256_loadu_ps(x + i));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(b, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, abs_mask), inf);
    const __m256i quiet = _mm256_or_si256(b, _mm256_set1_epi32(0x400000));
    const __m256i r = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quiet, nan), 16);
    // 8 int32 holding 16-bit values -> 8 uint16 (packus saturates, but every value is <= 0xffff).
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), packed);
  }
  for (; i < n; ++i) {
    const uint16_t h = f32_to_bf16(x[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

void store_q8_0(const float* x, int64_t n, uint8_t* out) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / kKvQ8Block; ++b) {
    const float* v = x + b * kKvQ8Block;
    uint8_t* block = out + b * kKvQ8BlockBytes;
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < 32; i += 8) m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(v + i)), m);  // NaN skipped
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    const float d = _mm_cvtss_f32(h) / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(block, &dh, 2);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) {
      __m256 r = _mm256_mul_ps(_mm256_loadu_ps(v + 8 * i), _mm256_set1_ps(id));
      r = _mm256_max_ps(_mm256_min_ps(r, _mm256_set1_ps(127.0f)), _mm256_set1_ps(-127.0f));  // NaN -> 127
      q[i] = _mm256_cvtps_epi32(_mm256_round_ps(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(block + 2),
                        _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
}

}  // namespace

void kv_store_row_avx2(KvDtype t, const float* x, int64_t n, void* dst) {
  auto* out = static_cast<uint8_t*>(dst);
  switch (t) {
    case KvDtype::kF32: std::memcpy(out, x, 4 * n); return;
    case KvDtype::kF16: return store_f16(x, n, out);
    case KvDtype::kBF16: return store_bf16(x, n, out);
    case KvDtype::kQ8_0: return store_q8_0(x, n, out);
  }
}

}  // namespace pagoda
