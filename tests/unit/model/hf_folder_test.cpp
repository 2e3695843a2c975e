// Hugging Face folders that pagoda must refuse with an error naming the problem, built in a temporary directory
// from ../shared's small Llama folder with one thing changed.
#include "model/hf_folder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kShared = PAGODA_SHARED_DIR;

class HfFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pagoda-hf-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const auto& e : fs::directory_iterator(kShared + "/models/arch/llama-hf"))
      fs::copy_file(e.path(), dir_ / e.path().filename());
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    for (const auto& e : fs::directory_iterator(dir_)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  }
  void TearDown() override { fs::remove_all(dir_); }

  json read(const std::string& name) { return json::parse(std::ifstream(dir_ / name)); }
  void write(const std::string& name, const json& j) { std::ofstream(dir_ / name) << j.dump(); }
  std::string error() {
    auto m = Model::load(dir_.string());
    return m.ok() ? std::string("(loaded)") : m.error().message;
  }

  fs::path dir_;
};

TEST_F(HfFolderTest, TheUnchangedCopyLoads) {
  auto m = Model::load(dir_.string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->format(), "huggingface");
  EXPECT_EQ((*m)->hparams().arch, "llama");
  EXPECT_EQ((*m)->hparams().rope.type, RopeType::kNeox);  // unpermuted Q/K rows
}

TEST_F(HfFolderTest, UnknownModelTypeIsNamed) {
  json c = read("config.json");
  c["model_type"] = "mamba";
  write("config.json", c);
  EXPECT_NE(error().find("model_type 'mamba' is not supported (supported: llama, qwen2"), std::string::npos) << error();
}

TEST_F(HfFolderTest, RopeScalingTypeIsNamed) {
  json c = read("config.json");
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  write("config.json", c);
  EXPECT_NE(error().find("rope_scaling type 'yarn' is not supported"), std::string::npos) << error();
}

TEST_F(HfFolderTest, UnsupportedActivationIsNamed) {
  json c = read("config.json");
  c["hidden_act"] = "relu";
  write("config.json", c);
  EXPECT_NE(error().find("activation 'relu' is not supported"), std::string::npos) << error();
}

TEST_F(HfFolderTest, MissingConfigAndWeightsAreNamed) {
  fs::remove(dir_ / "model.safetensors");
  EXPECT_NE(error().find("no model.safetensors"), std::string::npos) << error();
  fs::remove(dir_ / "config.json");
  EXPECT_NE(error().find("config.json' is missing"), std::string::npos) << error();
}

TEST_F(HfFolderTest, ShardIndexCannotLeaveTheFolder) {
  write("model.safetensors.index.json", json{{"weight_map", {{"model.norm.weight", "../../etc/passwd"}}}});
  EXPECT_NE(error().find("which is not a file in this folder"), std::string::npos) << error();
}

TEST_F(HfFolderTest, WordPieceAndUnigramTokenizersAreNamed) {
  json t = read("tokenizer.json");
  t["model"]["type"] = "WordPiece";
  write("tokenizer.json", t);
  EXPECT_NE(error().find("model type 'WordPiece' is not supported (supported: BPE)"), std::string::npos) << error();
  t["model"]["type"] = "Unigram";
  write("tokenizer.json", t);
  EXPECT_NE(error().find("model type 'Unigram' is not supported"), std::string::npos) << error();
}

TEST_F(HfFolderTest, TokenIdsBeyondTheEmbeddingAreRefused) {
  json t = read("tokenizer.json");
  t["added_tokens"].push_back({{"id", 600}, {"content", "<extra>"}, {"special", true}});
  write("tokenizer.json", t);
  EXPECT_NE(error().find("has id 600, outside the model's 512 embedding rows"), std::string::npos) << error();
}

TEST_F(HfFolderTest, UnknownPreTokenizerIsNamed) {
  json t = read("tokenizer.json");
  t["pre_tokenizer"] = {{"type", "Whitespace"}};
  write("tokenizer.json", t);
  EXPECT_NE(error().find("pre-tokenizer 'Whitespace' is not supported"), std::string::npos) << error();
}

TEST_F(HfFolderTest, MissingTensorIsNamed) {
  // The index maps every tensor to the one file; dropping a layer's tensor from the layout is simulated by claiming
  // a second layer the file does not have.
  json c = read("config.json");
  c["num_hidden_layers"] = 3;
  write("config.json", c);
  EXPECT_NE(error().find("tensor 'model.layers.2.input_layernorm.weight' is missing"), std::string::npos) << error();
}

TEST_F(HfFolderTest, UnusedTensorsAreRefusedNotIgnored) {
  json c = read("config.json");
  c["num_hidden_layers"] = 1;
  write("config.json", c);
  EXPECT_NE(error().find("is not part of the llama layout"), std::string::npos) << error();
}

TEST_F(HfFolderTest, ChatTemplateComesFromTokenizerConfig) {
  json tc = read("tokenizer_config.json");
  tc["chat_template"] = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}";
  write("tokenizer_config.json", tc);
  auto f = open_model_file(dir_.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_string("tokenizer.chat_template"), tc["chat_template"].get<std::string>());
  // The list form: the template named "default".
  tc["chat_template"] = json::array({{{"name", "tool_use"}, {"template", "T"}}, {{"name", "default"}, {"template", "D"}}});
  write("tokenizer_config.json", tc);
  f = open_model_file(dir_.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_string("tokenizer.chat_template"), "D");
}

TEST_F(HfFolderTest, SpecialTokensComeFromTokenizerConfig) {
  auto m = Model::load(dir_.string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->tokenizer().bos(), 1);
  EXPECT_EQ((*m)->tokenizer().eos(), 2);
  EXPECT_TRUE((*m)->tokenizer().add_bos());
  json tc = read("tokenizer_config.json");
  tc["add_bos_token"] = false;
  write("tokenizer_config.json", tc);
  m = Model::load(dir_.string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_FALSE((*m)->tokenizer().add_bos());
}

TEST_F(HfFolderTest, FieldsOfTheWrongTypeAreErrorsNotCrashes) {
  json c = read("config.json");
  c["tie_word_embeddings"] = "yes";
  write("config.json", c);
  EXPECT_NE(error().find("unexpected type"), std::string::npos) << error();
  c["tie_word_embeddings"] = false;
  write("config.json", c);
  json t = read("tokenizer.json");
  t["model"]["byte_fallback"] = "true";
  write("tokenizer.json", t);
  EXPECT_NE(error().find("unexpected type"), std::string::npos) << error();
}

TEST_F(HfFolderTest, BrokenJsonIsNamed) {
  std::ofstream(dir_ / "config.json") << "{\"model_type\": ";
  EXPECT_NE(error().find("config.json' is not valid JSON"), std::string::npos) << error();
}

}  // namespace
}  // namespace pagoda
