// Where the forward pass runs (--device cpu|cuda) and the accelerator's side of it: the model's weights and the KV
// pool in device memory, and one step of model/forward_batch.h run there (src/cuda, built with -DPAGODA_CUDA=ON).
// The engine calls it where it would call transformer_forward_batch; the scheduler, block manager and sampling
// stay on the host.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kv/kv_pool.h"
#include "model/forward_batch.h"
#include "model/model.h"
#include "util/result.h"

namespace pagoda {

enum class Device { kCpu, kCuda };

// "cpu" | "cuda"; an error naming the value and the choices otherwise.
Result<Device> parse_device(const std::string& text);
const char* device_name(Device d);
// Whether this build has the device's code (cuda: -DPAGODA_CUDA=ON).
bool device_built(Device d);

class DeviceForward {
 public:
  virtual ~DeviceForward() = default;
  // Device memory for a KV pool of `shape` (KvPool::create_on_device).
  virtual Result<std::unique_ptr<KvDeviceMemory>> allocate_kv(const KvPoolShape& shape) = 0;
  // One step, with transformer_forward_batch's contract; `kv` holds device addresses. The instrumented paths (the
  // attention probe, query capture, attention overrides, per-anchor layer masks) are refused.
  virtual Status forward(const ForwardBatch& batch, const KvStorage& kv, std::vector<float>& logits) = 0;
  virtual std::string describe() const = 0;  // "cuda: NVIDIA H200, weights 256.0 MiB"
};

// The model's weights copied to the device. An error names what the device path does not take (this build has no
// CUDA; no GPU; a family other than Llama's RMSNorm + RoPE + SwiGLU ones; a weight type other than F32, F16, BF16).
Result<std::unique_ptr<DeviceForward>> create_device_forward(Device device, const Model& model);

}  // namespace pagoda
