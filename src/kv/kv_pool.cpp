#include "kv/kv_pool.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

namespace pagoda {
namespace {
constexpr uint64_t kMaxPoolBytes = uint64_t{1} << 40;  // 1 TiB: anything larger is a typo, not a budget
}

Status KvPool::check_shape(const KvPoolShape& shape) {
  if (shape.n_layer <= 0 || shape.num_blocks <= 0 || shape.block_size <= 0 || shape.n_kv_heads <= 0 ||
      shape.head_dim <= 0)
    return make_error("KV pool dimensions must be positive");
  PAGODA_RETURN_IF_ERROR(check_kv_head_dim(shape.dtype, shape.head_dim));
  if (shape.block_size > 4096)
    return make_error("block size " + std::to_string(shape.block_size) + " is too large (max 4096)");
  if (shape.num_blocks > (int64_t{1} << 31) / shape.block_size)
    return make_error("KV pool of " + std::to_string(shape.num_blocks) + " blocks has more slots than int32 can index");
  if (static_cast<double>(shape.bytes_per_block()) * static_cast<double>(shape.num_blocks) > kMaxPoolBytes)
    return make_error("KV pool of " + std::to_string(shape.num_blocks) + " blocks would need more than 1 TiB");
  return Status::success();
}

Result<std::unique_ptr<KvPool>> KvPool::create(const KvPoolShape& shape) {
  PAGODA_RETURN_IF_ERROR(check_shape(shape));
  std::unique_ptr<KvPool> pool(new KvPool(shape));
  const size_t bytes = static_cast<size_t>(shape.n_layer * shape.layer_bytes());
  pool->k_ = HugePageBuffer::allocate(bytes);
  pool->v_ = HugePageBuffer::allocate(bytes);
  if (pool->k_.data() == nullptr || pool->v_.data() == nullptr)
    return make_error("cannot allocate the KV pool (" + std::to_string(shape.total_bytes() >> 20) + " MiB)");
  return pool;
}

Result<std::unique_ptr<KvPool>> KvPool::create_on_device(const KvPoolShape& shape,
                                                         std::unique_ptr<KvDeviceMemory> memory) {
  PAGODA_RETURN_IF_ERROR(check_shape(shape));
  if (!memory) return make_error("KV pool: no device memory given");
  std::unique_ptr<KvPool> pool(new KvPool(shape));
  pool->device_ = std::move(memory);
  return pool;
}

int64_t KvPool::blocks_for_budget(const KvPoolShape& shape, uint64_t bytes) {
  const uint64_t per_block = shape.bytes_per_block();
  return per_block == 0 ? 0 : static_cast<int64_t>(bytes / per_block);
}

void KvPool::prefault() {
  if (device_) return;  // device memory is claimed when allocated
  const size_t bytes = static_cast<size_t>(shape_.n_layer * shape_.layer_bytes());
  std::memset(k_.data(), 0, bytes);
  std::memset(v_.data(), 0, bytes);
}

Status KvPool::copy_block(BlockId src, BlockId dst, int32_t num_slots) {
  const int64_t block_bytes = shape_.block_size * shape_.slot_bytes();
  const size_t bytes = static_cast<size_t>(num_slots * shape_.slot_bytes());
  if (device_)
    return device_->copy(src.value * block_bytes, dst.value * block_bytes, static_cast<int64_t>(bytes), shape_.n_layer,
                         shape_.layer_bytes());
  for (int64_t l = 0; l < shape_.n_layer; ++l) {
    std::memcpy(k(l) + dst.value * block_bytes, k(l) + src.value * block_bytes, bytes);
    std::memcpy(v(l) + dst.value * block_bytes, v(l) + src.value * block_bytes, bytes);
  }
  return Status::success();
}

std::string KvPool::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "KV pool: %lld blocks of %lld tokens = %lld tokens, %.1f MiB (%s)",
                (long long)shape_.num_blocks, (long long)shape_.block_size, (long long)shape_.token_capacity(),
                shape_.total_bytes() / 1048576.0, kv_dtype_name(shape_.dtype));
  return device_ ? std::string(buf) + " in " + device_->where() : std::string(buf);
}

Result<uint64_t> parse_memory_size(const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(s, &end);
  if (end == s || errno != 0 || !std::isfinite(value) || value <= 0)
    return make_error("'" + text + "' is not a memory size (examples: 2GiB, 512MiB, 1000000)");
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB" || unit == "k")
    scale = 1024.0;
  else if (unit == "M" || unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "KB")
    scale = 1e3;
  else if (unit == "MB")
    scale = 1e6;
  else if (unit == "GB")
    scale = 1e9;
  else
    return make_error("'" + text + "' has an unknown unit '" + unit + "' (use B, KiB, MiB, GiB, KB, MB, GB)");
  const double bytes = value * scale;
  if (bytes >= 1.8e19) return make_error("'" + text + "' is too large");
  return static_cast<uint64_t>(bytes);
}

}  // namespace pagoda
