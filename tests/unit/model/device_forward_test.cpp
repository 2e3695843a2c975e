// --device: parsing, and what a build without CUDA (CI's) answers to --device cuda at every entry point. The GPU
// path itself is tested on a GPU by tests/cuda/ (-DPAGODA_CUDA=ON).
#include "model/device_forward.h"

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/sequence_runner.h"
#include "test_models.h"

namespace pagoda {
namespace {

TEST(DeviceForward, ParsesDeviceNames) {
  EXPECT_EQ(*parse_device("cpu"), Device::kCpu);
  EXPECT_EQ(*parse_device("CUDA"), Device::kCuda);
  EXPECT_EQ(*parse_device("gpu"), Device::kCuda);
  auto bad = parse_device("tpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'tpu'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("cpu or cuda"), std::string::npos) << bad.error().message;
  EXPECT_STREQ(device_name(Device::kCuda), "cuda");
  EXPECT_TRUE(device_built(Device::kCpu));
}

TEST(DeviceForward, CpuRunnerFromCreateIsTheConstructorsPath) {
  ThreadPool pool(1);
  auto made = SequenceRunner::create(stories260k(), pool, 64, KvDtype::kF32, Device::kCpu);
  ASSERT_TRUE(made.ok()) << made.error().message;
  SequenceRunner direct(stories260k(), pool, 64, KvDtype::kF32);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  auto a = (*made)->eval(prompt);
  ASSERT_TRUE(a.ok());
  const std::vector<float> first(a->begin(), a->end());
  auto b = direct.eval(prompt);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(first, std::vector<float>(b->begin(), b->end()));
  EXPECT_EQ((*made)->length(), 5);
  (*made)->reset();
  EXPECT_EQ((*made)->length(), 0);
}

#ifndef PAGODA_WITH_CUDA
TEST(DeviceForward, ABuildWithoutCudaSaysHowToGetIt) {
  EXPECT_FALSE(device_built(Device::kCuda));
  ThreadPool pool(1);
  auto runner = SequenceRunner::create(stories260k(), pool, 64, KvDtype::kF16, Device::kCuda);
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.error().message.find("-DPAGODA_CUDA=ON"), std::string::npos) << runner.error().message;
  EngineConfig config;
  config.device = Device::kCuda;
  config.num_blocks = 8;
  auto engine = Engine::create(stories260k(), config);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.error().message.find("-DPAGODA_CUDA=ON"), std::string::npos) << engine.error().message;
}
#endif

TEST(DeviceForward, EnginePathsThatReadKvOnTheHostAreRefusedOnTheGpu) {
  EngineConfig config;
  config.device = Device::kCuda;
  config.num_blocks = 8;
  config.probe_anchor_attention = true;
  auto engine = Engine::create(stories260k(), config);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.error().message.find("--device cpu only"), std::string::npos) << engine.error().message;
  config.probe_anchor_attention = false;
  config.attention = AttentionImpl::kReference;
  engine = Engine::create(stories260k(), config);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.error().message.find("reference attention"), std::string::npos) << engine.error().message;
}

}  // namespace
}  // namespace pagoda
