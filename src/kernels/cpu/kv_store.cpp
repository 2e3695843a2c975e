#include "kernels/cpu/kv_store.h"

namespace pagoda {
namespace {

using StoreFn = void (*)(KvDtype, const float*, int64_t, void*);

StoreFn store_for(KernelIsa isa) { return isa == KernelIsa::kPortable ? kv_store_row : kv_store_row_avx2; }

}  // namespace

void kv_store_rows(KvDtype t, const float* src, int64_t src_stride, int64_t rows, int64_t n, uint8_t* base,
                   int64_t slot_bytes, const int64_t* slots) {
  static const StoreFn store = store_for(default_kernel_isa());
  for (int64_t i = 0; i < rows; ++i) store(t, src + i * src_stride, n, base + slots[i] * slot_bytes);
}

bool kv_store_row_isa(KvDtype t, const float* x, int64_t n, void* dst, KernelIsa isa) {
  if (!cpu_can_run(isa)) return false;
  store_for(isa)(t, x, n, dst);
  return true;
}

}  // namespace pagoda
