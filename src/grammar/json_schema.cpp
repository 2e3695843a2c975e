#include "grammar/json_schema.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "grammar/integer_range.h"
#include "tokenizer/utf8.h"

namespace pagoda::grammar {
namespace {

using ojson = nlohmann::ordered_json;

// Rules every schema grammar may use. Every value rule ends with json-ws (bounded whitespace), so a value can be
// followed directly by ',', ':', ']' or '}'. Digit runs are bounded too (16 digits, exponents of 3).
constexpr std::string_view kPrimitives = R"(json-ws ::= | " " | "\n" [ \t]{0,20}
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" json-ws ( json-string ":" json-ws json-value ( "," json-ws json-string ":" json-ws json-value )* )? "}" json-ws
json-array ::= "[" json-ws ( json-value ( "," json-ws json-value )* )? "]" json-ws
json-string ::= "\"" json-char* "\"" json-ws
json-char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-int ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
json-frac ::= ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
json-number ::= json-int json-frac json-ws
json-integer ::= json-int json-ws
json-boolean ::= ( "true" | "false" ) json-ws
json-null ::= "null" json-ws
)";

constexpr std::array<std::string_view, 10> kAnnotations = {
    "title", "description", "$schema", "$id", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly"};
constexpr std::array<std::string_view, 31> kSupported = {
    "type",     "enum",        "const",       "anyOf",     "oneOf",           "allOf",
    "$ref",     "$defs",       "definitions", "nullable",  "properties",      "required",
    "additionalProperties",    "items",       "prefixItems", "minItems",      "maxItems",
    "minLength", "maxLength",  "pattern",     "format",    "minimum",         "maximum",
    "exclusiveMinimum",        "exclusiveMaximum", "title", "description",    "$schema",
    "$id",      "$comment",    "examples"};
constexpr std::array<std::string_view, 4> kMoreAnnotations = {"default", "deprecated", "readOnly", "writeOnly"};

template <size_t N>
bool among(const std::array<std::string_view, N>& names, std::string_view key) {
  return std::find(names.begin(), names.end(), key) != names.end();
}

std::string at(const std::string& path) { return path.empty() ? "the schema's root" : path; }

class SchemaConverter {
 public:
  SchemaConverter(const ojson& root, std::string prefix) : root_(root), prefix_(std::move(prefix)) {}

  // The rules: `rule_name ::= ...` and its helpers (named prefix + number), without the primitives.
  Result<std::string> convert(const std::string& rule_name) {
    auto root = visit(root_, "", 0);
    if (!root.ok()) return root.error();
    std::string out = rule_name + " ::= " + *root + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  std::string new_rule(const std::string& body) {
    const std::string name = prefix_ + std::to_string(rules_.size());
    rules_.emplace_back(name, body);
    return name;
  }

  Result<std::string> visit(const ojson& s, const std::string& path, int depth) {
    if (depth > kMaxSchemaDepth)
      return make_error("the schema nests deeper than " + std::to_string(kMaxSchemaDepth) + " levels at " + at(path));
    if (s.is_boolean()) {
      if (s.get<bool>()) return std::string("json-value");
      return make_error("the schema 'false' at " + at(path) + " allows no value");
    }
    if (!s.is_object()) return make_error("a schema must be an object or a boolean, at " + at(path));
    for (const auto& [key, value] : s.items())
      if (!among(kSupported, key) && !among(kMoreAnnotations, key))
        return make_error("unsupported JSON Schema keyword '" + key + "' at " + at(path));

    // Keywords that constrain (annotations and definitions aside).
    std::set<std::string> constraints;
    for (const auto& [key, value] : s.items())
      if (!among(kAnnotations, key) && key != "$defs" && key != "definitions") constraints.insert(key);

    if (s.contains("nullable")) {
      if (!s["nullable"].is_boolean()) return make_error("'nullable' must be a boolean at " + at(path));
      if (s["nullable"].get<bool>()) {
        ojson rest = s;
        rest.erase("nullable");
        auto inner = visit(rest, path, depth + 1);
        if (!inner.ok()) return inner.error();
        return "( " + *inner + " | json-null )";
      }
      constraints.erase("nullable");
    }
    if (s.contains("$ref")) {
      if (constraints.size() > 1)
        return make_error("'$ref' with other constraining keywords is not supported, at " + at(path));
      return ref(s["$ref"], path, depth);
    }
    if (s.contains("const")) {
      if (constraints.size() > 1) return make_error("'const' with other constraining keywords at " + at(path));
      return literal_value(s["const"]);
    }
    if (s.contains("enum")) {
      const ojson& e = s["enum"];
      if (!e.is_array() || e.empty()) return make_error("'enum' must be a non-empty list at " + at(path));
      std::string alts;
      for (const ojson& v : e) alts += (alts.empty() ? "" : " | ") + literal_value(v);
      return "( " + alts + " )";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const ojson& list = s[key];
      if (!list.is_array() || list.empty()) return make_error(std::string("'") + key + "' must be a non-empty list at " + at(path));
      if (constraints.size() > 1)
        return make_error(std::string("'") + key + "' with other constraining keywords is not supported, at " + at(path));
      std::string alts;
      for (size_t i = 0; i < list.size(); ++i) {
        auto alt = visit(list[i], path + "/" + key + "/" + std::to_string(i), depth + 1);
        if (!alt.ok()) return alt.error();
        alts += (alts.empty() ? "" : " | ") + *alt;
      }
      return new_rule(alts);
    }
    if (s.contains("allOf")) return all_of(s, path, depth);

    if (s.contains("type")) {
      const ojson& t = s["type"];
      if (t.is_string()) return typed(s, t.get<std::string>(), path, depth);
      if (!t.is_array() || t.empty()) return make_error("'type' must be a name or a non-empty list at " + at(path));
      std::string alts;
      for (const ojson& name : t) {
        if (!name.is_string()) return make_error("'type' lists must hold names, at " + at(path));
        auto alt = typed(s, name.get<std::string>(), path, depth);
        if (!alt.ok()) return alt.error();
        alts += (alts.empty() ? "" : " | ") + *alt;
      }
      return new_rule(alts);
    }
    // No type: the keywords say which one, else any JSON value.
    if (s.contains("properties") || s.contains("required") || s.contains("additionalProperties"))
      return typed(s, "object", path, depth);
    if (s.contains("items") || s.contains("prefixItems") || s.contains("minItems") || s.contains("maxItems"))
      return typed(s, "array", path, depth);
    if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") || s.contains("format"))
      return typed(s, "string", path, depth);
    if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum"))
      return typed(s, "number", path, depth);
    return std::string("json-value");
  }

  static std::string literal_value(const ojson& v) { return gbnf_literal(v.dump()) + " json-ws"; }

  Result<std::string> ref(const ojson& r, const std::string& path, int depth) {
    if (!r.is_string()) return make_error("'$ref' must be a string at " + at(path));
    const std::string target = r.get<std::string>();
    auto it = refs_.find(target);
    if (it != refs_.end()) return it->second;
    const ojson* schema = nullptr;
    if (target == "#") {
      schema = &root_;
    } else {
      for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
        const std::string p = prefix;
        if (target.rfind(p, 0) != 0) continue;
        const std::string name = target.substr(p.size());
        const std::string section = p.substr(2, p.size() - 3);
        if (root_.contains(section) && root_[section].is_object() && root_[section].contains(name))
          schema = &root_[section][name];
      }
    }
    if (!schema) return make_error("'$ref' " + target + " at " + at(path) + " does not name a definition of this schema");
    // Name the rule before visiting, so a recursive reference finds it.
    const std::string name = new_rule("");
    const size_t slot = rules_.size() - 1;
    refs_[target] = name;
    auto body = visit(*schema, target.substr(1), depth + 1);
    if (!body.ok()) return body.error();
    rules_[slot].second = *body;
    return name;
  }

  Result<std::string> all_of(const ojson& s, const std::string& path, int depth) {
    const ojson& list = s["allOf"];
    if (!list.is_array() || list.empty()) return make_error("'allOf' must be a non-empty list at " + at(path));
    ojson merged = ojson::object();
    merged["type"] = "object";
    merged["properties"] = ojson::object();
    merged["required"] = ojson::array();
    std::vector<const ojson*> parts{&s};
    for (const ojson& p : list) parts.push_back(&p);
    for (size_t i = 0; i < parts.size(); ++i) {
      const ojson* part = parts[i];
      for (int hops = 0; part->is_object() && part->contains("$ref") && hops < 16; ++hops) {
        const std::string t = (*part)["$ref"].is_string() ? (*part)["$ref"].get<std::string>() : "";
        const ojson* next = nullptr;
        for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
          const std::string p = prefix;
          const std::string section = p.substr(2, p.size() - 3);
          if (t.rfind(p, 0) == 0 && root_.contains(section) && root_[section].contains(t.substr(p.size())))
            next = &root_[section][t.substr(p.size())];
        }
        if (!next) return make_error("'allOf' at " + at(path) + ": cannot resolve '$ref' " + t);
        part = next;
      }
      if (!part->is_object()) return make_error("'allOf' at " + at(path) + " must list object schemas");
      for (const auto& [key, value] : part->items()) {
        if (i == 0 && key == "allOf") continue;
        if (key == "properties") {
          if (!value.is_object()) return make_error("'properties' must be an object at " + at(path));
          for (const auto& [k, v] : value.items()) merged["properties"][k] = v;
        } else if (key == "required") {
          if (!value.is_array()) return make_error("'required' must be a list at " + at(path));
          for (const ojson& r : value) merged["required"].push_back(r);
        } else if (key == "additionalProperties") {
          merged["additionalProperties"] = value;
        } else if (key == "type") {
          if (value != "object") return make_error("'allOf' at " + at(path) + " supports object schemas only");
        } else if (!among(kAnnotations, key) && key != "$defs" && key != "definitions") {
          return make_error("'allOf' at " + at(path) + ": keyword '" + key + "' cannot be merged (object schemas only)");
        }
      }
    }
    return typed(merged, "object", path, depth);
  }

  Result<std::string> typed(const ojson& s, const std::string& type, const std::string& path, int depth) {
    if (type == "string") return string_rule(s, path);
    if (type == "integer" || type == "number") return number_rule(s, type == "integer", path);
    if (type == "boolean") return std::string("json-boolean");
    if (type == "null") return std::string("json-null");
    if (type == "object") return object_rule(s, path, depth);
    if (type == "array") return array_rule(s, path, depth);
    return make_error("unknown type '" + type + "' at " + at(path));
  }

  Result<std::string> object_rule(const ojson& s, const std::string& path, int depth) {
    std::vector<std::pair<std::string, std::string>> props;  // (key literal, value rule)
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return make_error("'required' must be a list at " + at(path));
      for (const ojson& r : s["required"]) {
        if (!r.is_string()) return make_error("'required' must list names at " + at(path));
        required.insert(r.get<std::string>());
      }
    }
    std::vector<bool> is_required;
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) return make_error("'properties' must be an object at " + at(path));
      for (const auto& [name, sub] : s["properties"].items()) {
        auto v = visit(sub, path + "/properties/" + name, depth + 1);
        if (!v.ok()) return v.error();
        props.emplace_back(gbnf_literal(ojson(name).dump()), *v);
        is_required.push_back(required.count(name) > 0);
        required.erase(name);
      }
    }
    if (!required.empty())
      return make_error("'required' names '" + *required.begin() + "', which 'properties' does not define, at " + at(path));
    std::string extra;  // the rule of one additional key/value pair, if any are allowed
    if (s.contains("additionalProperties")) {
      const ojson& ap = s["additionalProperties"];
      if (!(ap.is_boolean() && !ap.get<bool>())) {
        auto v = visit(ap, path + "/additionalProperties", depth + 1);
        if (!v.ok()) return v.error();
        extra = new_rule("json-string \":\" json-ws " + *v);
      }
    }
    // rest(i, after): the members from property i on; `after` when a member was already written (a comma first).
    std::string after_tail = extra.empty() ? "" : "( \",\" json-ws " + extra + " )*";
    std::string first_tail = extra.empty() ? "" : "( " + extra + " ( \",\" json-ws " + extra + " )* )?";
    std::string after = after_tail.empty() ? "" : new_rule(after_tail);
    std::string first = first_tail.empty() ? "" : new_rule(first_tail);
    for (size_t i = props.size(); i-- > 0;) {
      const std::string kv = props[i].first + " json-ws \":\" json-ws " + props[i].second;
      const std::string next_after = after, next_first = first;
      std::string a = "\",\" json-ws " + kv + (next_after.empty() ? "" : " " + next_after);
      std::string f = kv + (next_after.empty() ? "" : " " + next_after);
      if (!is_required[i]) {
        a = "( " + a + " )" + (next_after.empty() ? "?" : " | " + next_after);
        f = "( " + f + " )" + (next_first.empty() ? "?" : " | " + next_first);
      }
      after = new_rule(a);
      first = new_rule(f);
    }
    return new_rule("\"{\" json-ws " + (first.empty() ? "" : first + " ") + "\"}\" json-ws");
  }

  Result<std::string> array_rule(const ojson& s, const std::string& path, int depth) {
    auto count = [&](const char* key, uint64_t fallback) -> Result<uint64_t> {
      if (!s.contains(key)) return fallback;
      const ojson& v = s[key];
      if (!v.is_number_integer() || v.get<int64_t>() < 0) return make_error(std::string("'") + key + "' must be a non-negative integer at " + at(path));
      return v.get<uint64_t>();
    };
    constexpr uint64_t kUnbounded = UINT64_MAX;
    auto min_items = count("minItems", 0);
    if (!min_items.ok()) return min_items.error();
    auto max_items = count("maxItems", kUnbounded);
    if (!max_items.ok()) return max_items.error();
    if (*max_items < *min_items) return make_error("'maxItems' is below 'minItems' at " + at(path));
    std::vector<std::string> prefix;
    if (s.contains("prefixItems")) {
      if (!s["prefixItems"].is_array()) return make_error("'prefixItems' must be a list at " + at(path));
      for (size_t i = 0; i < s["prefixItems"].size(); ++i) {
        auto v = visit(s["prefixItems"][i], path + "/prefixItems/" + std::to_string(i), depth + 1);
        if (!v.ok()) return v.error();
        prefix.push_back(*v);
      }
    }
    std::string item = "json-value";
    bool more = true;
    if (s.contains("items")) {
      if (s["items"].is_boolean() && !s["items"].get<bool>()) {
        more = false;
      } else {
        auto v = visit(s["items"], path + "/items", depth + 1);
        if (!v.ok()) return v.error();
        item = *v;
      }
    }
    const uint64_t k = prefix.size();
    const uint64_t max = more ? *max_items : std::min<uint64_t>(*max_items, k);
    if (*min_items > max) return make_error("'minItems' cannot be met (no more items allowed) at " + at(path));
    constexpr uint64_t kMaxCount = 10000;
    if ((*min_items > kMaxCount) || (max != kUnbounded && max > kMaxCount))
      return make_error("'minItems'/'maxItems' above " + std::to_string(kMaxCount) + " at " + at(path));
    // tail(j): the items from position j on (0-based), each after a comma.
    auto reps = [&](uint64_t lo, uint64_t hi) {
      const std::string one = "( \",\" json-ws " + item + " )";
      if (hi == kUnbounded) return lo == 0 ? one + "*" : one + "{" + std::to_string(lo) + ",}";
      if (hi == 0) return std::string();
      return one + "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
    };
    std::string tail;  // after position k: the plain items
    {
      const uint64_t lo = *min_items > k ? *min_items - k : 0;
      const uint64_t hi = max == kUnbounded ? kUnbounded : max - std::min(max, k);
      tail = reps(lo, hi);
    }
    // Prefix positions from the last to the first; position j is optional when j >= minItems.
    std::string rest = tail.empty() ? "" : new_rule(tail);
    for (uint64_t j = std::min<uint64_t>(k, max == kUnbounded ? k : max); j-- > 1;) {
      std::string body = "\",\" json-ws " + prefix[j] + (rest.empty() ? "" : " " + rest);
      if (j >= *min_items) body = "( " + body + " )?";
      rest = new_rule(body);
    }
    std::string first;
    if (max == 0) {
      first = "";
    } else if (k > 0) {
      first = prefix[0] + (rest.empty() ? "" : " " + rest);
      if (*min_items == 0) first = "( " + first + " )?";
    } else {
      const uint64_t lo = *min_items > 0 ? *min_items - 1 : 0;
      const uint64_t hi = max == kUnbounded ? kUnbounded : max - 1;
      first = item + (reps(lo, hi).empty() ? "" : " " + reps(lo, hi));
      if (*min_items == 0) first = "( " + first + " )?";
    }
    return new_rule("\"[\" json-ws " + (first.empty() ? "" : new_rule(first) + " ") + "\"]\" json-ws");
  }

  Result<std::string> string_rule(const ojson& s, const std::string& path) {
    if (s.contains("format")) {
      if (!s["format"].is_string()) return make_error("'format' must be a string at " + at(path));
      const std::string f = s["format"].get<std::string>();
      static const std::map<std::string, std::string> kFormats = {
          {"date", R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ))"},
          {"time", R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))"},
          {"uuid", R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})"},
          {"email", R"([a-zA-Z0-9._%+-]{1,64} "@" [a-zA-Z0-9-]{1,63} ( "." [a-zA-Z0-9-]{1,63} ){1,8})"},
      };
      std::string body;
      if (f == "date-time") {
        body = "( " + kFormats.at("date") + " ) \"T\" ( " + kFormats.at("time") + " )";
      } else if (kFormats.count(f)) {
        body = kFormats.at(f);
      } else {
        return make_error("unsupported string format '" + f + "' at " + at(path) +
                          " (supported: date, time, date-time, uuid, email)");
      }
      if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength"))
        return make_error("'format' with 'pattern' or a length is not supported, at " + at(path));
      return new_rule("\"\\\"\" " + body + " \"\\\"\" json-ws");
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return make_error("'pattern' must be a string at " + at(path));
      if (s.contains("minLength") || s.contains("maxLength"))
        return make_error("'pattern' with 'minLength'/'maxLength' is not supported, at " + at(path));
      auto body = regex_to_gbnf(s["pattern"].get<std::string>());
      if (!body.ok()) return make_error("'pattern' at " + at(path) + ": " + body.error().message);
      return new_rule("\"\\\"\" " + *body + " \"\\\"\" json-ws");
    }
    auto length = [&](const char* key) -> Result<int64_t> {
      if (!s.contains(key)) return int64_t{-1};
      const ojson& v = s[key];
      if (!v.is_number_integer() || v.get<int64_t>() < 0) return make_error(std::string("'") + key + "' must be a non-negative integer at " + at(path));
      if (v.get<int64_t>() > 10000) return make_error(std::string("'") + key + "' above 10000 at " + at(path));
      return v.get<int64_t>();
    };
    auto lo = length("minLength");
    if (!lo.ok()) return lo.error();
    auto hi = length("maxLength");
    if (!hi.ok()) return hi.error();
    if (*lo < 0 && *hi < 0) return std::string("json-string");
    const int64_t min = std::max<int64_t>(*lo, 0);
    if (*hi >= 0 && *hi < min) return make_error("'maxLength' is below 'minLength' at " + at(path));
    const std::string count = *hi < 0 ? "{" + std::to_string(min) + ",}" : "{" + std::to_string(min) + "," + std::to_string(*hi) + "}";
    return new_rule("\"\\\"\" json-char" + count + " \"\\\"\" json-ws");
  }

  static int digits_of(double v) {
    v = std::floor(std::fabs(v));
    int d = 1;
    while (v >= 10 && d < 16) {
      v /= 10;
      ++d;
    }
    return d;
  }

  Result<std::string> number_rule(const ojson& s, bool integer, const std::string& path) {
    std::optional<double> min, max;
    // Integers: the exact range (the smallest and largest integers the bounds allow).
    double int_lo = -INFINITY, int_hi = INFINITY;
    for (const char* key : {"minimum", "exclusiveMinimum"})
      if (s.contains(key)) {
        if (!s[key].is_number()) return make_error(std::string("'") + key + "' must be a number at " + at(path));
        const double v = s[key].get<double>();
        min = std::max(min.value_or(-INFINITY), v);
        int_lo = std::max(int_lo, key[0] == 'm' ? std::ceil(v) : std::floor(v) + 1);
      }
    for (const char* key : {"maximum", "exclusiveMaximum"})
      if (s.contains(key)) {
        if (!s[key].is_number()) return make_error(std::string("'") + key + "' must be a number at " + at(path));
        const double v = s[key].get<double>();
        max = std::min(max.value_or(INFINITY), v);
        int_hi = std::min(int_hi, key[0] == 'm' ? std::floor(v) : std::ceil(v) - 1);
      }
    if (min && max && *min > *max) return make_error("the minimum is above the maximum at " + at(path));
    if (!min && !max) return std::string(integer ? "json-integer" : "json-number");
    if (integer) {
      if (int_lo > int_hi) return make_error("no integer lies between the minimum and the maximum at " + at(path));
      const double bound = static_cast<double>(kMaxIntegerBound);
      const auto lo = static_cast<int64_t>(std::clamp(int_lo, -bound, bound));
      const auto hi = static_cast<int64_t>(std::clamp(int_hi, -bound, bound));
      if (lo > hi) return make_error("the integer bounds lie beyond 16 digits at " + at(path));
      return new_rule(integer_range_gbnf(lo, hi) + " json-ws");
    }
    const bool negative = !(min && *min >= 0);
    const bool positive = !(max && *max < 0);
    std::string alts;
    if (positive) {
      const int d = max ? digits_of(*max) : 16;
      alts = "\"0\" | [1-9] [0-9]{0," + std::to_string(d - 1) + "}";
    }
    if (negative) {
      const int d = min ? digits_of(*min) : 16;
      alts += std::string(alts.empty() ? "" : " | ") + "\"-\" [1-9] [0-9]{0," + std::to_string(d - 1) + "}";
    }
    // Bounded values take no exponent: it would escape the digit bound.
    return new_rule("( " + alts + " )" + (integer ? "" : " ( \".\" [0-9]{1,16} )?") + " json-ws");
  }

  // --- pattern: a regular expression over the string's characters, written as their JSON encoding.
  struct Regex {
    std::vector<uint32_t> cps;
    size_t i = 0;
  };

  static Result<std::vector<uint32_t>> code_points(std::string_view s) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < s.size();) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      const int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
      if (len == 0 || i + static_cast<size_t>(len) > s.size()) return make_error("invalid UTF-8");
      uint32_t v = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (int k = 1; k < len; ++k) v = (v << 6) | (static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) & 0x3F);
      out.push_back(v);
      i += static_cast<size_t>(len);
    }
    return out;
  }

  // The GBNF of one character of the pattern as it appears inside a JSON string.
  static std::string json_char_literal(uint32_t c) {
    switch (c) {
      case '"': return "\"\\\\\\\"\"";  // the two characters \"
      case '\\': return "\"\\\\\\\\\"";
      case '\n': return "\"\\\\n\"";
      case '\r': return "\"\\\\r\"";
      case '\t': return "\"\\\\t\"";
      default: break;
    }
    if (c < 0x20) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\"\\\\u%04x\"", c);
      return buf;
    }
    std::string s;
    append_utf8(s, c);
    return gbnf_literal(s);
  }

  static std::string class_char(uint32_t c) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\U%08x", c);
    return buf;
  }

  // A set of code points as a JSON-string fragment: a class of the plain characters, plus the escaped forms of
  // '"', '\', and newline, return and tab where the set holds them (other control characters are never generated).
  static std::string char_set(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated) {
    std::sort(ranges.begin(), ranges.end());
    auto in_ranges = [&](uint32_t c) {
      for (const auto& [a, b] : ranges)
        if (a <= c && c <= b) return true;
      return false;
    };
    auto member = [&](uint32_t c) { return in_ranges(c) != negated; };
    std::string cls = negated ? "[^" : "[";
    for (const auto& [a, b] : ranges) cls += class_char(a) + (a == b ? "" : "-" + class_char(b));
    if (negated) cls += "\\x00-\\x1f\\\"\\\\";
    cls += "]";
    std::string alts;
    if (negated) {
      alts = cls;
    } else {
      // Plain members: the ranges less the characters that need escapes.
      std::vector<std::pair<uint32_t, uint32_t>> plain;
      for (auto [a, b] : ranges) {
        for (uint32_t lo = a; lo <= b;) {
          uint32_t hi = lo;
          auto special = [](uint32_t c) { return c < 0x20 || c == '"' || c == '\\'; };
          if (special(lo)) {
            ++lo;
            continue;
          }
          while (hi < b && !special(hi + 1)) ++hi;
          plain.push_back({lo, hi});
          if (hi == UINT32_MAX) break;
          lo = hi + 1;
        }
      }
      if (!plain.empty()) {
        alts = "[";
        for (const auto& [a, b] : plain) alts += class_char(a) + (a == b ? "" : "-" + class_char(b));
        alts += "]";
      }
    }
    for (uint32_t c : {uint32_t{'"'}, uint32_t{'\\'}, uint32_t{'\n'}, uint32_t{'\r'}, uint32_t{'\t'}})
      if (member(c)) alts += std::string(alts.empty() ? "" : " | ") + json_char_literal(c);
    if (alts.empty()) return "";
    return "( " + alts + " )";
  }

  static Result<std::string> regex_to_gbnf(const std::string& pattern) {
    auto cps = code_points(pattern);
    if (!cps.ok()) return cps.error();
    Regex re{std::move(*cps), 0};
    if (re.i < re.cps.size() && re.cps[re.i] == '^') ++re.i;
    auto body = regex_alt(re, 0);
    if (!body.ok()) return body.error();
    if (re.i < re.cps.size() && re.cps[re.i] == '$') ++re.i;
    if (re.i != re.cps.size()) return make_error("unexpected '" + std::string(1, static_cast<char>(re.cps[re.i])) + "' at character " + std::to_string(re.i));
    return *body;
  }

  static Result<std::string> regex_alt(Regex& re, int depth) {
    if (depth > 64) return make_error("groups nest deeper than 64");
    std::string out;
    for (;;) {
      auto seq = regex_seq(re, depth);
      if (!seq.ok()) return seq.error();
      out += (out.empty() ? "" : " | ") + (seq->empty() ? std::string("\"\"") : *seq);
      if (re.i < re.cps.size() && re.cps[re.i] == '|') {
        ++re.i;
        continue;
      }
      return "( " + out + " )";
    }
  }

  static Result<std::string> regex_seq(Regex& re, int depth) {
    std::string out;
    while (re.i < re.cps.size()) {
      const uint32_t c = re.cps[re.i];
      if (c == '|' || c == ')') break;
      if (c == '$' && re.i + 1 == re.cps.size()) break;
      std::string atom;
      if (c == '(') {
        ++re.i;
        if (re.i + 1 < re.cps.size() && re.cps[re.i] == '?') {
          if (re.cps[re.i + 1] != ':') return make_error("lookaround and named groups are not supported");
          re.i += 2;
        }
        auto inner = regex_alt(re, depth + 1);
        if (!inner.ok()) return inner.error();
        if (re.i >= re.cps.size() || re.cps[re.i] != ')') return make_error("missing ')'");
        ++re.i;
        atom = *inner;
      } else if (c == '[') {
        auto cls = regex_class(re);
        if (!cls.ok()) return cls.error();
        atom = *cls;
      } else if (c == '.') {
        ++re.i;
        atom = "json-char";
      } else if (c == '\\') {
        auto esc = regex_escape(re);
        if (!esc.ok()) return esc.error();
        atom = *esc;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        return make_error("a quantifier with nothing to repeat at character " + std::to_string(re.i));
      } else if (c == '^' || c == '$') {
        return make_error("anchors are supported only at the start and the end");
      } else {
        ++re.i;
        atom = json_char_literal(c);
      }
      if (atom.empty()) return make_error("a character class that matches nothing");
      auto quantified = regex_quantifier(re, atom);
      if (!quantified.ok()) return quantified.error();
      out += (out.empty() ? "" : " ") + *quantified;
    }
    return out;
  }

  static Result<std::string> regex_quantifier(Regex& re, const std::string& atom) {
    if (re.i >= re.cps.size()) return atom;
    const uint32_t q = re.cps[re.i];
    std::string out;
    if (q == '*' || q == '+' || q == '?') {
      ++re.i;
      out = "( " + atom + " )" + static_cast<char>(q);
    } else if (q == '{') {
      size_t j = re.i + 1;
      std::string spec;
      while (j < re.cps.size() && re.cps[j] != '}') {
        const uint32_t d = re.cps[j];
        if (!((d >= '0' && d <= '9') || d == ',')) return make_error("a bad repetition {" + spec + "...}");
        spec += static_cast<char>(d);
        ++j;
      }
      if (j >= re.cps.size() || spec.empty() || spec[0] == ',') return make_error("a bad repetition {" + spec + "}");
      re.i = j + 1;
      out = "( " + atom + " ){" + spec + "}";
    } else {
      return atom;
    }
    if (re.i < re.cps.size() && (re.cps[re.i] == '?' || re.cps[re.i] == '+'))
      return make_error("lazy and possessive quantifiers are not supported");
    return out;
  }

  static Result<std::string> regex_escape(Regex& re) {
    ++re.i;
    if (re.i >= re.cps.size()) return make_error("a pattern ending in '\\'");
    const uint32_t e = re.cps[re.i++];
    switch (e) {
      case 'd': return char_set({{'0', '9'}}, false);
      case 'D': return char_set({{'0', '9'}}, true);
      case 'w': return char_set({{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'_', '_'}}, false);
      case 'W': return char_set({{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'_', '_'}}, true);
      case 's': return char_set({{' ', ' '}, {'\t', '\n'}, {'\r', '\r'}}, false);
      case 'S': return char_set({{' ', ' '}, {'\t', '\n'}, {'\r', '\r'}}, true);
      case 'n': return json_char_literal('\n');
      case 't': return json_char_literal('\t');
      case 'r': return json_char_literal('\r');
      default: break;
    }
    if ((e >= '0' && e <= '9') || e == 'b' || e == 'B' || e == 'k')
      return make_error("backreferences and word boundaries are not supported");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'))
      return make_error("the escape '\\" + std::string(1, static_cast<char>(e)) + "' is not supported");
    return json_char_literal(e);
  }

  static Result<std::string> regex_class(Regex& re) {
    ++re.i;  // '['
    bool negated = false;
    if (re.i < re.cps.size() && re.cps[re.i] == '^') {
      negated = true;
      ++re.i;
    }
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    bool first = true;
    while (re.i < re.cps.size() && (re.cps[re.i] != ']' || first)) {
      first = false;
      uint32_t lo = re.cps[re.i++];
      if (lo == '\\') {
        if (re.i >= re.cps.size()) return make_error("an unterminated character class");
        const uint32_t e = re.cps[re.i++];
        if (e == 'd') { ranges.push_back({'0', '9'}); continue; }
        if (e == 'w') {
          for (auto r : {std::pair<uint32_t, uint32_t>{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'_', '_'}}) ranges.push_back(r);
          continue;
        }
        if (e == 's') {
          for (auto r : {std::pair<uint32_t, uint32_t>{' ', ' '}, {'\t', '\n'}, {'\r', '\r'}}) ranges.push_back(r);
          continue;
        }
        lo = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        if ((e >= 'a' && e <= 'z' && e != 'n' && e != 't' && e != 'r') || (e >= 'A' && e <= 'Z'))
          return make_error("the escape '\\" + std::string(1, static_cast<char>(e)) + "' in a class is not supported");
      }
      uint32_t hi = lo;
      if (re.i + 1 < re.cps.size() && re.cps[re.i] == '-' && re.cps[re.i + 1] != ']') {
        hi = re.cps[re.i + 1];
        re.i += 2;
        if (hi == '\\') {
          if (re.i >= re.cps.size()) return make_error("an unterminated character class");
          hi = re.cps[re.i++];
        }
        if (hi < lo) return make_error("a class range with its end before its start");
      }
      ranges.push_back({lo, hi});
    }
    if (re.i >= re.cps.size()) return make_error("an unterminated character class");
    ++re.i;  // ']'
    return char_set(std::move(ranges), negated);
  }

  const ojson& root_;
  std::string prefix_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, std::string> refs_;
};

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  auto rules = SchemaConverter(schema, "s").convert("root");
  if (!rules.ok()) return rules.error();
  return std::string(kPrimitives) + *rules;
}

Result<std::string> json_schema_rules(const nlohmann::ordered_json& schema, const std::string& rule_name) {
  return SchemaConverter(schema, rule_name + "-").convert(rule_name);
}

std::string json_primitives_gbnf() { return std::string(kPrimitives); }

std::string json_object_gbnf() { return std::string(kPrimitives) + "root ::= json-object\n"; }

std::string choice_gbnf(const std::vector<std::string>& choices) {
  std::string alts;
  for (const std::string& c : choices) alts += (alts.empty() ? "" : " | ") + gbnf_literal(c);
  return "root ::= " + alts + "\n";
}

}  // namespace pagoda::grammar
