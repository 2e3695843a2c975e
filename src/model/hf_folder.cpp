#include "model/hf_folder.h"

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "io/safetensors.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "util/json_depth.h"

namespace pagoda {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxConfigBytes = 4u << 20;      // config.json, tokenizer_config.json, the shard index
constexpr size_t kMaxTokenizerBytes = 256u << 20;  // tokenizer.json (Qwen2's is about 7 MB)
constexpr size_t kMaxJsonDepth = 64;

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Reads and parses a JSON file; nullopt-like null json when absent and not required.
Result<json> read_json(const std::string& path, bool required, size_t max_bytes) {
  if (!exists(path)) {
    if (required) return make_error("'" + path + "' is missing");
    return json();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open '" + path + "'");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0 || static_cast<size_t>(size) > max_bytes)
    return make_error("'" + path + "' is larger than " + std::to_string(max_bytes >> 20) + " MiB");
  in.seekg(0);
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), size);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error("'" + path + "' is not valid JSON");
  if (json_nests_deeper_than(j, kMaxJsonDepth)) return make_error("'" + path + "' nests too deeply");
  return j;
}

std::string replace_layer(std::string pattern, int64_t layer) {
  const size_t at = pattern.find("{L}");
  if (at != std::string::npos) pattern.replace(at, 3, std::to_string(layer));
  return pattern;
}

// config.json accessors: an Error names the key.
class Config {
 public:
  explicit Config(const json& j) : j_(j) {}
  bool has(const char* key) const { return key != nullptr && j_.contains(key) && !j_[key].is_null(); }
  Result<uint64_t> uint(const char* key) const {
    if (!has(key)) return make_error(std::string("config.json: '") + (key ? key : "?") + "' is missing");
    const json& v = j_[key];
    if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 || v.get<uint64_t>() > (uint64_t{1} << 24))
      return make_error(std::string("config.json: '") + key + "' must be a positive integer");
    return v.get<uint64_t>();
  }
  Result<double> number(const char* key) const {
    const json& v = j_[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      return make_error(std::string("config.json: '") + key + "' must be a number");
    return v.get<double>();
  }
  Result<std::string> string(const char* key) const {
    if (!has(key) || !j_[key].is_string())
      return make_error(std::string("config.json: '") + (key ? key : "?") + "' must be a string");
    return j_[key].get<std::string>();
  }
  const json& raw() const { return j_; }

 private:
  const json& j_;
};

size_t element_size(GgmlType t) { return t == GgmlType::F32 ? 4 : 2; }

// Rearranges rows: out row dst(r) <- in row r, each row_bytes long.
template <typename DstOf>
std::shared_ptr<std::vector<uint8_t>> permute_rows(const uint8_t* data, uint64_t rows, size_t row_bytes, DstOf dst_of) {
  auto out = std::make_shared<std::vector<uint8_t>>(rows * row_bytes);
  for (uint64_t r = 0; r < rows; ++r) std::memcpy(out->data() + dst_of(r) * row_bytes, data + r * row_bytes, row_bytes);
  return out;
}

std::shared_ptr<std::vector<uint8_t>> transpose(const uint8_t* data, uint64_t rows, uint64_t cols, size_t elem) {
  auto out = std::make_shared<std::vector<uint8_t>>(rows * cols * elem);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) std::memcpy(out->data() + (c * rows + r) * elem, data + (r * cols + c) * elem, elem);
  return out;
}

// Buffers the loader ignores: precomputed constants some checkpoints save beside the weights.
bool is_known_buffer(const std::string& name) {
  for (const char* suffix : {"rotary_emb.inv_freq", ".attn.bias", ".attn.masked_bias", ".attention.bias",
                             ".attention.masked_bias"})
    if (name.size() >= std::strlen(suffix) && name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      return true;
  return false;
}

}  // namespace

bool is_directory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

namespace {

Result<HfFolder> read_folder(const std::string& dir_in, bool for_convert) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  auto fail = [&](const std::string& what) { return make_error(dir + ": " + what); };
  auto config_json = read_json(dir + "/config.json", true, kMaxConfigBytes);
  if (!config_json.ok()) return fail(config_json.error().message + " (a model folder needs config.json)");
  if (!config_json->is_object()) return fail("config.json is not an object");
  const Config cfg(*config_json);
  auto model_type = cfg.string("model_type");
  if (!model_type.ok()) return fail(model_type.error().message);
  const ArchSpec* spec = find_arch_by_hf_model_type(*model_type);
  if (spec == nullptr) {
    std::string names;
    for (const ArchSpec* a : all_archs()) names += (names.empty() ? "" : ", ") + std::string(a->hf_model_type);
    return fail("config.json: model_type '" + *model_type + "' is not supported (supported: " + names + ")");
  }
  const HfConfigNames& k = spec->hf_config;
  const std::string a = std::string(spec->name) + ".";
  std::vector<std::pair<std::string, GgufValue>> md;
  md.emplace_back("general.architecture", gguf_string(spec->name));
  {
    // The folder's name in words ("phi3-hf" -> "Phi3 Hf"), roughly as llama.cpp's converter names a model. (llama.cpp
    // keys tokenizer fix-ups on general.name: a lower-case "phi3" would make it look for Phi-3's special tokens.)
    std::string name = dir.substr(dir.find_last_of('/') + 1);
    bool word_start = true;
    for (char& ch : name) {
      if (ch == '-' || ch == '_') ch = ' ';
      if (word_start && ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
      word_start = ch == ' ';
    }
    md.emplace_back("general.name", gguf_string(name));
  }

  auto need = [&](const char* key) -> Result<uint64_t> { return cfg.uint(key); };
  auto ctx = need(k.context_length);
  auto hidden = need(k.hidden_size);
  auto layers = need(k.num_layers);
  auto heads = need(k.num_heads);
  for (auto* r : {&ctx, &hidden, &layers, &heads})
    if (!r->ok()) return fail(r->error().message);
  uint64_t ff = 4 * *hidden;
  if (cfg.has(k.intermediate_size)) {
    auto r = need(k.intermediate_size);
    if (!r.ok()) return fail(r.error().message);
    ff = *r;
  }
  uint64_t kv_heads = *heads;
  if (cfg.has(k.num_kv_heads)) {
    auto r = need(k.num_kv_heads);
    if (!r.ok()) return fail(r.error().message);
    kv_heads = *r;
  }
  uint64_t head_dim = *hidden / *heads;
  md.emplace_back(a + "context_length", gguf_uint32(static_cast<uint32_t>(*ctx)));
  md.emplace_back(a + "embedding_length", gguf_uint32(static_cast<uint32_t>(*hidden)));
  md.emplace_back(a + "block_count", gguf_uint32(static_cast<uint32_t>(*layers)));
  md.emplace_back(a + "feed_forward_length", gguf_uint32(static_cast<uint32_t>(ff)));
  md.emplace_back(a + "attention.head_count", gguf_uint32(static_cast<uint32_t>(*heads)));
  if (k.num_kv_heads != nullptr) md.emplace_back(a + "attention.head_count_kv", gguf_uint32(static_cast<uint32_t>(kv_heads)));
  if (cfg.has("head_dim")) {
    auto r = need("head_dim");
    if (!r.ok()) return fail(r.error().message);
    head_dim = *r;
    md.emplace_back(a + "attention.key_length", gguf_uint32(static_cast<uint32_t>(head_dim)));
    md.emplace_back(a + "attention.value_length", gguf_uint32(static_cast<uint32_t>(head_dim)));
  }
  if (cfg.has(k.norm_eps)) {
    auto eps = cfg.number(k.norm_eps);
    if (!eps.ok()) return fail(eps.error().message);
    md.emplace_back(a + (spec->norm == NormKind::kRms ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon"),
                    gguf_float32(static_cast<float>(*eps)));
  }
  if (spec->positions == PositionKind::kRope) {
    if (cfg.has(k.rope_theta)) {
      auto theta = cfg.number(k.rope_theta);
      if (!theta.ok()) return fail(theta.error().message);
      md.emplace_back(a + "rope.freq_base", gguf_float32(static_cast<float>(*theta)));
    }
    for (const char* pct_key : {"rotary_pct", "partial_rotary_factor"}) {
      if (!cfg.has(pct_key)) continue;
      auto pct = cfg.number(pct_key);
      if (!pct.ok() || !(*pct > 0.0 && *pct <= 1.0)) return fail(std::string("config.json: '") + pct_key + "' must be in (0, 1]");
      md.emplace_back(a + "rope.dimension_count", gguf_uint32(static_cast<uint32_t>(*pct * static_cast<double>(head_dim))));
    }
    if (cfg.has("rope_scaling")) {
      const json& rs = cfg.raw()["rope_scaling"];
      const std::string type = rs.is_object() ? rs.value("rope_type", rs.value("type", std::string())) : std::string();
      if (type == "linear" && rs.contains("factor") && rs["factor"].is_number()) {
        md.emplace_back(a + "rope.scaling.type", gguf_string("linear"));
        md.emplace_back(a + "rope.scaling.factor", gguf_float32(rs["factor"].get<float>()));
      } else if (type != "default") {
        return fail("config.json: rope_scaling type '" + type + "' is not supported (supported: linear)");
      }
    }
  }
  if (cfg.has("use_parallel_residual")) {
    if (!cfg.raw()["use_parallel_residual"].is_boolean()) return fail("config.json: 'use_parallel_residual' must be a bool");
    md.emplace_back(a + "use_parallel_residual", gguf_bool(cfg.raw()["use_parallel_residual"].get<bool>()));
  }
  const bool uses_window = !cfg.has("use_sliding_window") || cfg.raw()["use_sliding_window"] == true;
  if (uses_window && cfg.has("sliding_window") && spec->hf_model_type == std::string("phi3")) {
    auto w = need("sliding_window");
    if (!w.ok()) return fail(w.error().message);
    md.emplace_back(a + "attention.sliding_window", gguf_uint32(static_cast<uint32_t>(*w)));
  }
  HfFolder folder;
  folder.spec = spec;
  folder.rope = for_convert ? spec->rope : spec->hf_rope;
  folder.gelu = spec->gelu;
  if (cfg.has(k.activation)) {
    auto act = cfg.string(k.activation);
    if (!act.ok()) return fail(act.error().message);
    if (spec->mlp == MlpKind::kGelu) {
      if (*act == "gelu")
        folder.gelu = GeluKind::kExact;
      else if (*act == "gelu_new" || *act == "gelu_pytorch_tanh" || *act == "gelu_fast")
        folder.gelu = GeluKind::kTanh;
      else
        return fail("config.json: activation '" + *act + "' is not supported for " + spec->name +
                    " (supported: gelu, gelu_new, gelu_pytorch_tanh)");
    } else if (*act != "silu" && *act != "swish") {
      return fail("config.json: activation '" + *act + "' is not supported for " + spec->name + " (supported: silu)");
    }
  }
  const bool tied = cfg.raw().value("tie_word_embeddings", spec->tied_output_default);

  // The safetensors files: one, or the shards the index names (plain file names inside the folder).
  std::vector<SafetensorsFile> shards;
  std::map<std::string, size_t> shard_of;  // tensor name -> shard
  {
    std::vector<std::string> files;
    auto index = read_json(dir + "/model.safetensors.index.json", false, kMaxConfigBytes);
    if (!index.ok()) return fail(index.error().message);
    if (!index->is_null()) {
      if (!index->is_object() || !index->contains("weight_map") || !(*index)["weight_map"].is_object())
        return fail("model.safetensors.index.json has no 'weight_map' object");
      std::set<std::string> names;
      for (const auto& [t, f] : (*index)["weight_map"].items()) {
        if (!f.is_string()) return fail("model.safetensors.index.json: the file of '" + t + "' is not a string");
        const std::string file = f.get<std::string>();
        if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
          return fail("model.safetensors.index.json names '" + file + "', which is not a file in this folder");
        names.insert(file);
      }
      files.assign(names.begin(), names.end());
    } else if (exists(dir + "/model.safetensors")) {
      files.push_back("model.safetensors");
    } else {
      return fail("no model.safetensors or model.safetensors.index.json (pagoda reads safetensors weights only)");
    }
    for (const std::string& f : files) {
      auto st = SafetensorsFile::open(dir + "/" + f);
      if (!st.ok()) return st.error();
      for (const auto& t : st->tensors()) {
        if (shard_of.count(t.name)) return fail("tensor '" + t.name + "' appears in two shards");
        shard_of[t.name] = shards.size();
      }
      shards.push_back(std::move(*st));
    }
  }
  auto find_hf = [&](const std::string& name) -> const SafetensorsTensor* {
    auto it = shard_of.find(name);
    if (it == shard_of.end()) {
      // Checkpoints saved from the base model lack the head class's prefix ("transformer.h.0..." vs "h.0...").
      const size_t dot = name.find('.');
      if (dot != std::string::npos) it = shard_of.find(name.substr(dot + 1));
      if (it == shard_of.end()) return nullptr;
    }
    return shards[it->second].find(it->first);
  };

  std::vector<GgufTensorInfo> tensors;
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> buffers;
  std::set<const SafetensorsTensor*> used;
  for (const TensorName& tn : spec->tensors) {
    const bool per_layer = std::string(tn.gguf).find("{L}") != std::string::npos;
    for (int64_t l = 0; l < (per_layer ? static_cast<int64_t>(*layers) : 1); ++l) {
      const std::string gguf_name = replace_layer(tn.gguf, l), hf_name = replace_layer(tn.hf, l);
      const SafetensorsTensor* t = find_hf(hf_name);
      if (gguf_name == "output.weight" && tied) {
        if (t) used.insert(t);  // a saved copy of the tied head
        continue;
      }
      if (!t) return fail("tensor '" + hf_name + "' is missing (needed for " + gguf_name + ")");
      used.insert(t);
      if (t->shape.empty() || t->shape.size() > 2)
        return fail("tensor '" + hf_name + "' has " + std::to_string(t->shape.size()) + " dimensions (expected 1 or 2)");
      GgufTensorInfo info;
      info.name = gguf_name;
      info.type = t->type;
      info.n_dims = static_cast<uint32_t>(t->shape.size());
      for (size_t d = 0; d < t->shape.size(); ++d) info.ne[d] = t->shape[t->shape.size() - 1 - d];
      info.n_bytes = t->n_bytes;
      info.data = t->data;
      const size_t elem = element_size(t->type);
      const uint64_t rows = t->shape.size() == 2 ? t->shape[0] : 1;
      const uint64_t cols = t->shape.back();
      std::shared_ptr<std::vector<uint8_t>> buf;
      switch (tn.transform) {
        case HfTransform::kNone: break;
        case HfTransform::kTranspose:
          if (t->shape.size() != 2) return fail("tensor '" + hf_name + "' should be 2-D");
          buf = transpose(t->data, rows, cols, elem);
          info.ne[0] = rows;
          info.ne[1] = cols;
          break;
        case HfTransform::kNeoxQkv: {
          // Rows (or bias entries) ordered [head][q|k|v][head_dim] become [q|k|v][head][head_dim].
          const uint64_t n_units = t->shape.size() == 2 ? rows : cols;
          const size_t unit_bytes = t->shape.size() == 2 ? cols * elem : elem;
          if (n_units != 3 * *heads * head_dim || kv_heads != *heads)
            return fail("tensor '" + hf_name + "' is not a fused [n_head, 3, head_dim] projection");
          const uint64_t hd = head_dim, H = *heads;
          buf = permute_rows(t->data, n_units, unit_bytes, [&](uint64_t r) {
            const uint64_t h = r / (3 * hd), j = (r / hd) % 3, d = r % hd;
            return j * H * hd + h * hd + d;
          });
          break;
        }
        case HfTransform::kLlamaPermuteQ:
        case HfTransform::kLlamaPermuteK: {
          if (!for_convert) break;  // read with NeoX pairing instead
          const uint64_t n_head = tn.transform == HfTransform::kLlamaPermuteQ ? *heads : kv_heads;
          if (t->shape.size() != 2 || rows % (n_head * 2) != 0)
            return fail("tensor '" + hf_name + "' cannot be split into " + std::to_string(n_head) + " rotary heads");
          const uint64_t hd = rows / n_head, half = hd / 2;
          // [head][2][half] -> [head][half][2]
          buf = permute_rows(t->data, rows, cols * elem, [&](uint64_t r) {
            const uint64_t h = r / hd, i = (r % hd) / half, jj = r % half;
            return h * hd + jj * 2 + i;
          });
          break;
        }
      }
      if (buf) {
        info.data = buf->data();
        buffers.push_back(std::move(buf));
      }
      tensors.push_back(std::move(info));
    }
  }
  for (const auto& shard : shards)
    for (const auto& t : shard.tensors())
      if (!used.count(&t) && !is_known_buffer(t.name))
        return fail("tensor '" + t.name + "' is not part of the " + spec->name +
                    " layout pagoda knows (refusing to ignore weights it does not understand)");

  // The tokenizer: rows of the embedding bound its ids.
  const GgufTensorInfo* embd = nullptr;
  for (const auto& t : tensors)
    if (t.name == "token_embd.weight") embd = &t;
  if (embd == nullptr) return fail("no token embedding");
  auto tokenizer_json = read_json(dir + "/tokenizer.json", true, kMaxTokenizerBytes);
  if (!tokenizer_json.ok()) return fail(tokenizer_json.error().message + " (pagoda reads tokenizer.json)");
  auto tokenizer_config = read_json(dir + "/tokenizer_config.json", false, kMaxConfigBytes);
  if (!tokenizer_config.ok()) return fail(tokenizer_config.error().message);
  HfTokenizerInput tin;
  tin.tokenizer = &*tokenizer_json;
  tin.tokenizer_config = tokenizer_config->is_null() ? nullptr : &*tokenizer_config;
  tin.config = &*config_json;
  tin.n_vocab = static_cast<int64_t>(embd->ne[1]);
  auto tok_md = hf_tokenizer_metadata(tin);
  if (!tok_md.ok()) return fail(tok_md.error().message);
  for (auto& kv : *tok_md) md.push_back(std::move(kv));

  std::vector<std::shared_ptr<MappedFile>> mappings;
  for (const auto& s : shards) mappings.push_back(s.mapping());
  folder.gguf = GgufFile::assemble(dir, std::move(md), std::move(tensors), std::move(mappings), std::move(buffers));
  return folder;
}

}  // namespace

Result<HfFolder> open_hf_folder(const std::string& dir, bool for_convert) {
  // config.json fields of an unexpected JSON type make nlohmann's accessors throw: an error in the folder.
  try {
    return read_folder(dir, for_convert);
  } catch (const nlohmann::json::exception& e) {
    return make_error(dir + ": a config.json or tokenizer_config.json field has an unexpected type (" + e.what() + ")");
  }
}

Result<GgufFile> open_model_file(const std::string& path) {
  if (!is_directory(path)) return GgufFile::open(path);
  auto folder = open_hf_folder(path);
  if (!folder.ok()) return folder.error();
  return std::move(folder->gguf);
}

}  // namespace pagoda
