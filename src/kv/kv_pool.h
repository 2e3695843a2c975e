// The KV block pool: per layer, K and V in block-tensor layout [num_blocks, block_size, n_kv_heads, head_dim]
// in the pool's element type (kv/kv_dtype.h: f32, f16, bf16, or Q8_0 blocks of 32 values along head_dim). Allocated once at start-up; nothing allocates KV memory per request or per token. Flat slot =
// block_id * block_size + offset, as the block manager hands them out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kv/block_types.h"
#include "kv/kv_dtype.h"
#include "util/huge_pages.h"
#include "util/result.h"

namespace pagoda {

struct KvPoolShape {
  int64_t n_layer = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  KvDtype dtype = KvDtype::kF32;

  int64_t slot_values() const { return n_kv_heads * head_dim; }          // one token, one of K or V
  int64_t slot_bytes() const { return kv_bytes(dtype, slot_values()); }  // the same, stored
  int64_t layer_bytes() const { return num_blocks * block_size * slot_bytes(); }
  uint64_t bytes_per_block() const { return static_cast<uint64_t>(2 * n_layer * block_size * slot_bytes()); }
  uint64_t total_bytes() const { return bytes_per_block() * static_cast<uint64_t>(num_blocks); }
  int64_t token_capacity() const { return num_blocks * block_size; }
};

// The pool's memory on an accelerator (--device cuda: model/device_forward.h): K and V at device addresses, laid out
// as the host pool's, and the copy of byte ranges inside them.
class KvDeviceMemory {
 public:
  virtual ~KvDeviceMemory() = default;
  virtual uint8_t* k() = 0;  // [n_layer, num_blocks, block_size, n_kv_heads, head_dim] of the pool's type, device
  virtual uint8_t* v() = 0;
  // In K and in V: `count` copies of `bytes`, from src_offset + i * stride to dst_offset + i * stride.
  virtual Status copy(int64_t src_offset, int64_t dst_offset, int64_t bytes, int64_t count, int64_t stride) = 0;
  virtual std::string where() const = 0;  // "GPU memory of NVIDIA H200"
};

class KvPool {
 public:
  // Allocates the pool; an Error (not an abort) when the size is unreasonable or memory is short.
  static Result<std::unique_ptr<KvPool>> create(const KvPoolShape& shape);
  // A pool whose memory is `memory` (sized for `shape` by its maker): the host never reads or writes it, and
  // k()/v() return device addresses for the device's forward pass.
  static Result<std::unique_ptr<KvPool>> create_on_device(const KvPoolShape& shape,
                                                          std::unique_ptr<KvDeviceMemory> memory);
  // The checks both constructors make on a shape.
  static Status check_shape(const KvPoolShape& shape);
  // How many blocks fit in `bytes` for this geometry (num_blocks of `shape` ignored).
  static int64_t blocks_for_budget(const KvPoolShape& shape, uint64_t bytes);

  const KvPoolShape& shape() const { return shape_; }
  // [num_blocks, block_size, n_kv_heads, head_dim] of shape().dtype, as bytes.
  uint8_t* k(int64_t layer) { return k_base() + layer * shape_.layer_bytes(); }
  uint8_t* v(int64_t layer) { return v_base() + layer * shape_.layer_bytes(); }
  const uint8_t* k(int64_t layer) const { return const_cast<KvPool*>(this)->k(layer); }
  const uint8_t* v(int64_t layer) const { return const_cast<KvPool*>(this)->v(layer); }
  // Whether k()/v() are device addresses (create_on_device): nothing on the host may touch them then.
  bool on_device() const { return device_ != nullptr; }

  // Writes every page of the pool, so that all of it is resident now rather than faulted in as blocks are first
  // used: a server's memory is then claimed at start-up and stays flat while serving.
  void prefault();

  // Copies slots [0, num_slots) of block src to block dst in every layer (copy-on-write). Fails only on a device.
  Status copy_block(BlockId src, BlockId dst, int32_t num_slots);

  // "blocks 512, 8192 tokens, 96.0 MiB": the start-up report.
  std::string describe() const;

 private:
  explicit KvPool(const KvPoolShape& shape) : shape_(shape) {}
  uint8_t* k_base() { return device_ ? device_->k() : k_.data(); }
  uint8_t* v_base() { return device_ ? device_->v() : v_.data(); }
  KvPoolShape shape_;
  std::unique_ptr<KvDeviceMemory> device_;  // set: the pool lives on the device, k_ and v_ are empty
  // [n_layer, num_blocks, block_size, n_kv_heads, head_dim] of shape_.dtype, in huge pages (util/huge_pages.h)
  HugePageBuffer k_;
  HugePageBuffer v_;
};

// Parses a memory size such as "2GiB", "512MiB", "1.5G", "100000000" (bytes).
Result<uint64_t> parse_memory_size(const std::string& text);

}  // namespace pagoda
