// The warm-start library: nearest by cosine, LRU eviction under the byte cap, save/load round trip, and refusal of
// files that are not libraries or are malformed; the maps file: round trip and refusals.
#include "warmstart/library.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "io/safetensors_writer.h"
#include "refusal.h"
#include "util/rng.h"
#include "warmstart/warm_start_maps.h"

namespace pagoda::warmstart {
namespace {

LibraryEntry entry(std::vector<float> embedding, float fill) {
  LibraryEntry e;
  e.tokens = {1, 2, 3};
  e.embedding = std::move(embedding);
  e.summary.n_layer = 1;
  e.summary.n_kv_heads = 1;
  e.summary.head_dim = 2;
  e.summary.n_slots = 2;
  e.summary.rows.assign(2 * 5, fill);
  return e;
}

std::string temp_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/pagoda-ws-" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TEST(WarmStartLibrary, FindsTheMostSimilarEntry) {
  WarmStartLibrary lib;
  lib.insert(entry({1, 0}, 0));
  lib.insert(entry({0.6f, 0.8f}, 1));
  lib.insert(entry({0, 1}, 2));
  auto hit = lib.nearest({0.9f, 0.1f});  // dots 0.9, 0.62, 0.1
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->index, 0);
  EXPECT_NEAR(hit->similarity, 0.9f, 1e-6);
  hit = lib.nearest({0.5f, 0.866f});
  EXPECT_EQ(hit->index, 1);
  EXPECT_FALSE(WarmStartLibrary().nearest({1, 0}));
}

TEST(WarmStartLibrary, EvictsTheLeastRecentlyUsedUnderTheCap) {
  const uint64_t one = entry({1, 0}, 0).bytes();
  WarmStartLibrary lib(3 * one);
  lib.insert(entry({1, 0}, 0));  // A
  lib.insert(entry({0, 1}, 1));  // B
  lib.insert(entry({-1, 0}, 2)); // C
  ASSERT_TRUE(lib.nearest({1, 0}));  // A used: B is now the least recently used
  EXPECT_TRUE(lib.insert(entry({0, -1}, 3)));
  EXPECT_EQ(lib.size(), 3);
  EXPECT_EQ(lib.evictions(), 1u);
  EXPECT_LE(lib.bytes(), 3 * one);
  for (int64_t i = 0; i < lib.size(); ++i) EXPECT_NE(lib.entry(i).summary.rows[0], 1.0f) << "B was not evicted";
  WarmStartLibrary tiny(one - 1);
  EXPECT_FALSE(tiny.insert(entry({1, 0}, 0)));
  EXPECT_EQ(tiny.size(), 0);
}

TEST(WarmStartLibrary, LargeLibrariesSearchAnHnswIndexThatAgreesWithExactSearch) {
  Rng rng(11);
  auto unit = [&](int64_t dim) {
    std::vector<float> v(dim);
    double n = 0;
    for (auto& x : v) n += (x = static_cast<float>(rng.next_normal()), double(x) * x);
    for (auto& x : v) x = static_cast<float>(x / std::sqrt(n));
    return v;
  };
  WarmStartLibrary lib;
  lib.set_approximate_from(1000);
  for (int i = 0; i < 999; ++i) lib.insert(entry(unit(32), 0));
  EXPECT_FALSE(lib.uses_approximate_search());
  lib.insert(entry(unit(32), 0));
  EXPECT_TRUE(lib.uses_approximate_search());
  int agree = 0;
  for (int q = 0; q < 100; ++q) {
    std::vector<float> v = lib.entry(static_cast<int64_t>(rng.next_u64() % lib.size())).embedding;
    const auto noise = unit(32);
    for (int c = 0; c < 32; ++c) v[c] += 0.3f * noise[c];
    const auto approx = lib.nearest(v), exact = lib.nearest_exact(v);
    ASSERT_TRUE(approx && exact);
    agree += approx->index == exact->index;
    double dot = 0;  // the similarity reported is the found entry's exact one
    for (int c = 0; c < 32; ++c) dot += double(v[c]) * lib.entry(approx->index).embedding[c];
    EXPECT_NEAR(approx->similarity, dot, 1e-5);
  }
  EXPECT_GE(agree, 95);
  // An entry added after the index was built is found (the index is rebuilt).
  const auto fresh = unit(32);
  lib.insert(entry(fresh, 7));
  const auto hit = lib.nearest(fresh);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->index, lib.size() - 1);
  EXPECT_NEAR(hit->similarity, 1.0f, 1e-5);
}

TEST(WarmStartLibrary, SavesAndLoads) {
  const std::string dir = temp_dir("lib");
  WarmStartLibrary lib;
  lib.insert(entry({1, 0}, 0.5f));
  lib.insert(entry({0, 1}, -2.0f));
  ASSERT_TRUE(lib.save(dir).ok());
  auto back = WarmStartLibrary::load(dir, 1 << 20);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->size(), 2);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back->entry(i).tokens, lib.entry(i).tokens);
    EXPECT_EQ(back->entry(i).embedding, lib.entry(i).embedding);
    EXPECT_EQ(back->entry(i).summary.rows, lib.entry(i).summary.rows);
    EXPECT_TRUE(back->entry(i).summary.same_shape(lib.entry(i).summary));
  }
}

TEST(WarmStartLibrary, RefusesWhatIsNotALibrary) {
  const std::string dir = temp_dir("bad");
  EXPECT_TRUE(refused_with(WarmStartLibrary::load(dir, 1 << 20), "cannot open"));  // no file
  std::vector<float> v = {1, 2, 3};
  ASSERT_TRUE(write_safetensors_f32(dir + "/library.safetensors", {{"x", {3}, v}}, {}).ok());
  auto r = WarmStartLibrary::load(dir, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a pagoda warm-start library"), std::string::npos);
  // Right format, an entry missing its summary; and a fractional token id.
  ASSERT_TRUE(write_safetensors_f32(dir + "/library.safetensors", {{"entry.0.tokens", {3}, v}},
                                    {{"format", "pagoda-warmstart-library-1"}})
                  .ok());
  EXPECT_TRUE(refused_with(WarmStartLibrary::load(dir, 1 << 20), "entry 0 is incomplete or malformed"));
  std::vector<float> frac = {1.5f}, emb = {1, 0}, sum(5, 0.0f);
  ASSERT_TRUE(write_safetensors_f32(dir + "/library.safetensors",
                                    {{"entry.0.tokens", {1}, frac}, {"entry.0.embedding", {2}, emb},
                                     {"entry.0.summary", {1, 1, 1, 5}, sum}},
                                    {{"format", "pagoda-warmstart-library-1"}})
                  .ok());
  r = WarmStartLibrary::load(dir, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("bad token id"), std::string::npos);
}

TEST(WarmStartMaps, RoundTripAndRefusals) {
  const std::string dir = temp_dir("maps");
  WarmStartMaps maps;
  maps.summary.m = 4;
  maps.gamma = 0.5;
  maps.projector = Projector(ProjectorForm::kBlockDiagonal, 2, 1, 3, 4);
  for (size_t i = 0; i < maps.projector.weights().size(); ++i) maps.projector.weights()[i] = 0.25f * i;
  ASSERT_TRUE(save_maps(dir + "/m.safetensors", maps).ok());
  auto back = load_maps(dir + "/m.safetensors");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->projector.form(), ProjectorForm::kBlockDiagonal);
  EXPECT_EQ(back->projector.weights(), maps.projector.weights());
  EXPECT_EQ(back->summary.m, 4);
  EXPECT_DOUBLE_EQ(back->gamma, 0.5);
  // Metadata that lies about the shape.
  std::vector<float> w(10, 0.0f);
  ASSERT_TRUE(write_safetensors_f32(dir + "/bad.safetensors", {{"projector", {1, 1, 10}, w}},
                                    {{"format", "pagoda-warmstart-maps-1"}, {"form", "shared"}, {"m", "4"},
                                     {"ref_positions", "4"}, {"value_ridge", "0.001"}, {"gamma", "0.01"},
                                     {"n_layer", "1"}, {"n_kv_heads", "1"}, {"head_dim", "3"}})
                  .ok());
  auto bad = load_maps(dir + "/bad.safetensors");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("wrong type or shape"), std::string::npos);
  ASSERT_TRUE(write_safetensors_f32(dir + "/bad2.safetensors", {}, {{"format", "pagoda-warmstart-maps-1"},
                                                                   {"form", "shared"}, {"m", "-3"}})
                  .ok());
  bad = load_maps(dir + "/bad2.safetensors");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'m'"), std::string::npos);
  EXPECT_TRUE(refused_with(load_maps(dir + "/missing.safetensors"), "cannot open"));
}

TEST(WarmStartMaps, TargetAwareMapsKeepTheirBasisAndRefuseAMissingOne) {
  const std::string dir = temp_dir("maps-target");
  WarmStartMaps maps;
  maps.summary.m = 4;
  maps.projector = Projector(ProjectorForm::kTargetAware, 2, 1, 3, 4, /*k=*/2, /*embedding_dim=*/5);
  for (size_t i = 0; i < maps.projector.weights().size(); ++i) maps.projector.weights()[i] = 0.5f * i;
  for (size_t i = 0; i < maps.projector.target_basis().size(); ++i) maps.projector.target_basis()[i] = -1.0f * i;
  ASSERT_TRUE(save_maps(dir + "/t.safetensors", maps).ok());
  auto back = load_maps(dir + "/t.safetensors");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->projector.form(), ProjectorForm::kTargetAware);
  EXPECT_EQ(back->projector.target_features(), 2);
  EXPECT_EQ(back->projector.embedding_dim(), 5);
  EXPECT_EQ(back->projector.weights(), maps.projector.weights());
  EXPECT_EQ(back->projector.target_basis(), maps.projector.target_basis());
  // The same file without its basis.
  const int64_t per_head = maps.projector.params_per_head();
  std::vector<float> w(static_cast<size_t>(2 * per_head), 0.0f);
  ASSERT_TRUE(write_safetensors_f32(dir + "/nobasis.safetensors", {{"projector", {2, 1, uint64_t(per_head)}, w}},
                                    {{"format", "pagoda-warmstart-maps-1"}, {"form", "target-aware"}, {"m", "4"},
                                     {"ref_positions", "4"}, {"value_ridge", "0.001"}, {"gamma", "0.01"},
                                     {"n_layer", "2"}, {"n_kv_heads", "1"}, {"head_dim", "3"},
                                     {"target_features", "2"}, {"embedding_dim", "5"}})
                  .ok());
  auto bad = load_maps(dir + "/nobasis.safetensors");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("target_basis"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::warmstart
