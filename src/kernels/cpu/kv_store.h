// Storing K/V rows into the cache in its element type, in the process's kernel set: bitwise kv_store_row
// (kv/kv_dtype.h), the portable definition, which the portable set runs.
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"
#include "kv/kv_dtype.h"

namespace pagoda {

// rows x n values (source rows src_stride floats apart) into slots: row i to base + slots[i] * slot_bytes.
void kv_store_rows(KvDtype t, const float* src, int64_t src_stride, int64_t rows, int64_t n, uint8_t* base,
                   int64_t slot_bytes, const int64_t* slots);
// One row with an explicit kernel set (tests); false when this CPU lacks it.
bool kv_store_row_isa(KvDtype t, const float* x, int64_t n, void* dst, KernelIsa isa);
// The AVX2 + F16C build (the avx512 set uses it too).
void kv_store_row_avx2(KvDtype t, const float* x, int64_t n, void* dst);

}  // namespace pagoda
