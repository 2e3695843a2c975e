// pagoda anchor keygen | root | sign | verify | inspect | revoke: the operator's side of verified anchors.
//   keygen -o NAME                                    NAME.key (seed, 0600) and NAME.pub; prints the keyid
//   root --role ROLE=PUB[,PUB...]... [--threshold ROLE=N]... --version N --expires DATE -o root.json
//        [--previous OLD.json --sign-with KEY...]      (then a signed rotation envelope instead of the plain root)
//   sign --key KEY... --model M.gguf --lineage L --version N --kind K --scope S (--text T | --text-file F)
//        --expires DATE [--issued DATE] -o anchor.json   prints the anchor's digest
//   verify --trust-root root.json --model M.gguf ANCHOR.json   prints what was verified as one JSON line
//   inspect ANCHOR.json                               decodes without verifying
//   revoke --key KEY... --version N [--digest D]... [--lineage L]... [--keyid K]... --expires DATE [--issued DATE]
//          -o revocation.json
// DATE: YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]Z (UTC), or +N then d, h, m or s from now.
#include <sodium.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <span>
#include <tuple>

#include "anchor/anchor_error.h"
#include "anchor/anchor_payload.h"
#include "anchor/anchor_registry.h"
#include "anchor/anchor_verifier.h"
#include "anchor/cbor.h"
#include "anchor/dsse_envelope.h"
#include "anchor/ed25519.h"
#include "anchor/revocation.h"
#include "anchor/strict_json.h"
#include "anchor/trust_root.h"
#include "anchor_cli_util.h"
#include "commands.h"
#include "model/model.h"

namespace pagoda::cli {
namespace {

using ojson = nlohmann::ordered_json;

constexpr size_t kMaxInputFile = size_t{1} << 20;  // roots and envelopes: parsers refuse what is over their own caps
constexpr const char* kRoleNames[] = {"root", "anchor", "revocation"};
constexpr const char* kDateHelp = "YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC), or +N[dhms] from now";

// --issued (default now) and --expires as Unix seconds, issued before expires.
Result<std::pair<uint64_t, uint64_t>> validity_window(const std::optional<std::string>& issued_text,
                                                     const std::string& expires_text, uint64_t now) {
  auto expires = parse_date(expires_text, now, "--expires");
  if (!expires.ok()) return expires.error();
  auto issued = issued_text ? parse_date(*issued_text, now, "--issued") : Result<uint64_t>(now);
  if (!issued.ok()) return issued.error();
  if (*issued >= *expires)
    return make_error("--issued (" + std::to_string(*issued) + ") must be before --expires (" +
                      std::to_string(*expires) + ")");
  return std::make_pair(*issued, *expires);
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// ---------------------------------------------------------------- keygen

int keygen(const std::string& name) {
  const std::string key_path = name + ".key", pub_path = name + ".pub";
  for (const std::string& path : {key_path, pub_path})
    if (::access(path.c_str(), F_OK) == 0) return fail(quoted(path) + " exists; refusing to overwrite it");
  const Ed25519KeyPair kp = ed25519_generate();
  std::string seed_hex = to_hex(kp.secret_key.data(), 32) + "\n";  // libsodium's secret key starts with the seed
  Status st = write_new_file(key_path, seed_hex, 0600);
  sodium_memzero(seed_hex.data(), seed_hex.size());
  if (!st.ok()) return fail_with(st.error());
  st = write_new_file(pub_path, to_hex(kp.public_key) + "\n", 0644);
  if (!st.ok()) {
    ::unlink(key_path.c_str());  // no half of a pair left behind
    return fail_with(st.error());
  }
  std::printf("%s\n", ed25519_key_id(kp.public_key).c_str());
  return 0;
}

// ---------------------------------------------------------------- root

struct RootOptions {
  std::vector<std::string> roles, thresholds, sign_with;
  uint64_t version = 0;
  std::string expires, previous, output;
};

int root(const RootOptions& o) {
  const uint64_t now = unix_now();
  if (o.sign_with.empty() != o.previous.empty())
    return fail("--sign-with and --previous go together: a rotation is signed by keys of the previous root");
  if (o.version < 1) return fail("--version must be at least 1");
  auto expires = parse_date(o.expires, now, "--expires");
  if (!expires.ok()) return fail_with(expires.error());

  struct RoleSpec {
    std::vector<std::string> keyids;
    int64_t threshold = 1;
    bool threshold_given = false;
  };
  std::map<std::string, RoleSpec> roles = {{"root", {}}, {"anchor", {}}, {"revocation", {}}};
  ojson keys = ojson::object();
  for (const std::string& spec : o.roles) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return fail("--role " + quoted(spec) + " is not ROLE=PUBFILE[,PUBFILE...]");
    const std::string name = spec.substr(0, eq);
    auto it = roles.find(name);
    if (it == roles.end())
      return fail("--role: unknown role " + quoted(name) + " (the roles are root, anchor, revocation)");
    for (const std::string& file : split_commas(spec.substr(eq + 1))) {
      if (file.empty()) return fail("--role " + quoted(spec) + " has an empty file name");
      auto pub = read_public_key(file);
      if (!pub.ok()) return fail_with(pub.error());
      const std::string keyid = ed25519_key_id(*pub);
      for (const std::string& id : it->second.keyids)
        if (id == keyid) return fail("--role " + name + " lists the key of " + quoted(file) + " twice");
      it->second.keyids.push_back(keyid);
      keys[keyid] = to_hex(*pub);
    }
  }
  for (const std::string& spec : o.thresholds) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) return fail("--threshold " + quoted(spec) + " is not ROLE=N");
    const std::string name = spec.substr(0, eq), number = spec.substr(eq + 1);
    auto it = roles.find(name);
    if (it == roles.end())
      return fail("--threshold: unknown role " + quoted(name) + " (the roles are root, anchor, revocation)");
    if (it->second.threshold_given) return fail("--threshold " + name + " is given twice");
    if (number.empty() || number.size() > 9 || number.find_first_not_of("0123456789") != std::string::npos ||
        std::stol(number) < 1)
      return fail("--threshold " + quoted(spec) + ": N must be a whole number of at least 1");
    it->second.threshold = std::stol(number);
    it->second.threshold_given = true;
  }
  ojson role_json = ojson::object();
  for (const char* name : kRoleNames) {
    const RoleSpec& r = roles[name];
    if (r.keyids.empty())
      return fail(std::string("--role ") + name +
                  "=PUBFILE is required: a root names keys for root, anchor and revocation");
    if (r.threshold > static_cast<int64_t>(r.keyids.size()))
      return fail(std::string("--threshold ") + name + "=" + std::to_string(r.threshold) + " is more than the role's " +
                  std::to_string(r.keyids.size()) + (r.keyids.size() == 1 ? " key" : " keys"));
    role_json[name] = {{"keyids", r.keyids}, {"threshold", r.threshold}};
  }
  const ojson root_json = {{"version", o.version}, {"expires", *expires}, {"keys", keys}, {"roles", role_json}};
  const std::string text = root_json.dump(2) + "\n";
  auto parsed = parse_trust_root(text, now);  // what a server will do with it
  if (!parsed.ok()) return fail_with(parsed.error());
  if (o.previous.empty()) {
    if (Status st = write_file_replacing(o.output, text); !st.ok()) return fail_with(st.error());
    return 0;
  }

  // Rotation: the new root's bytes, signed by the previous root's `root` role and by the new one's.
  auto previous_text = read_small_file_bytes(o.previous, kMaxInputFile);
  if (!previous_text.ok()) return fail_with(previous_text.error());
  // An expired previous root still says which keys may rotate it: read it as of the epoch.
  auto previous = parse_trust_root(*previous_text, 0);
  if (!previous.ok()) return fail("--previous " + quoted(o.previous) + ": " + previous.error().message);
  if (o.version != previous->version + 1)
    return fail("--version " + std::to_string(o.version) + " must be " + std::to_string(previous->version + 1) +
                ", one more than the previous root's version");
  auto signers = read_signing_keys(o.sign_with, "--sign-with");
  if (!signers.ok()) return fail_with(signers.error());
  auto envelope_text = sign_envelope(kRootPayloadType, text, *signers);
  if (!envelope_text.ok()) return fail_with(envelope_text.error());
  // The server's own check: the previous root's `root` threshold and the new root's.
  if (auto next = verify_root_rotation(*envelope_text, *previous, now); !next.ok())
    return fail_with(make_coded_error(next.error().code,
                                      "the rotation would be refused (check --sign-with): " + next.error().message));
  if (Status st = write_file_replacing(o.output, *envelope_text); !st.ok()) return fail_with(st.error());
  return 0;
}

// ---------------------------------------------------------------- sign

struct SignOptions {
  std::vector<std::string> keys;
  std::string model, lineage, kind, scope, expires, output;
  std::optional<std::string> text, text_file, issued;
  uint64_t version = 0;
};

Status check_length(const std::string& flag, const std::string& value, size_t max) {
  if (value.empty() || value.size() > max)
    return make_error(flag + " must have 1 to " + std::to_string(max) + " bytes; it has " +
                      std::to_string(value.size()));
  return Status::success();
}

int sign(const SignOptions& o) {
  const uint64_t now = unix_now();
  if (o.text.has_value() == o.text_file.has_value()) return fail("give exactly one of --text and --text-file");
  if (o.version < 1) return fail("--version must be at least 1");
  AnchorPayload p;
  p.lineage = o.lineage;
  p.version = o.version;
  p.kind = o.kind;
  p.scope = o.scope;
  if (o.text) {
    p.text = *o.text;
  } else {
    auto text = read_small_file_bytes(*o.text_file, kMaxAnchorTextBytes);
    if (!text.ok()) return fail_with(text.error());
    p.text = std::move(*text);
  }
  for (const auto& [flag, value, max] :
       {std::tuple<const char*, const std::string&, size_t>{"--lineage", p.lineage, 128},
        {"--kind", p.kind, 32},
        {"--scope", p.scope, 128},
        {o.text ? "--text" : "--text-file", p.text, kMaxAnchorTextBytes}})
    if (Status st = check_length(flag, value, max); !st.ok()) return fail_with(st.error());
  auto window = validity_window(o.issued, o.expires, now);
  if (!window.ok()) return fail_with(window.error());
  const auto [issued, expires] = *window;
  p.issued = issued;
  p.expires = expires;
  auto keys = read_signing_keys(o.keys, "--key");
  if (!keys.ok()) return fail_with(keys.error());
  auto model = hash_model_file(o.model);
  if (!model.ok()) return fail_with(model.error());
  p.model = *model;
  const std::string payload = encode_anchor_payload(p);
  // The verifier's own decoder on what was encoded: catches what the checks above do not (invalid UTF-8).
  if (auto back = decode_anchor_payload(payload); !back.ok())
    return fail_with(make_coded_error(back.error().code, "the anchor would not verify: " + back.error().message));
  auto envelope = sign_envelope(kAnchorPayloadType, payload, *keys);
  if (!envelope.ok()) return fail_with(envelope.error());
  if (Status st = write_file_replacing(o.output, *envelope); !st.ok()) return fail_with(st.error());
  std::printf("%s\n", anchor_digest(payload).c_str());
  return 0;
}

// ---------------------------------------------------------------- verify

struct VerifyOptions {
  std::string trust_root, model, anchor;
  std::optional<std::string> state_dir;
  int32_t max_tokens = 512;
};

// --state-dir: the registry's own checks on a server's state folder, read-only: the root the folder holds (if newer
// than --trust-root), revoked digests, lineages and keys, rollback, lineage conflicts and the token cap, as
// `POST /v1/anchors` would make them. Nothing is written.
int verify_against_state(const VerifyOptions& o) {
  auto model = hash_model_file(o.model);
  if (!model.ok()) return fail_with(model.error());
  auto loaded = Model::load(o.model);  // the tokenizer, for the token cap
  if (!loaded.ok()) return fail(loaded.error().message);
  auto envelope_text = read_small_file_bytes(o.anchor, kMaxInputFile);
  if (!envelope_text.ok()) return fail_with(envelope_text.error());
  AnchorRegistryConfig rc;
  rc.trust_root_path = o.trust_root;
  rc.state_dir = *o.state_dir;
  rc.model_digest = *model;
  rc.max_tokens = o.max_tokens;
  rc.read_only = true;
  const Tokenizer* tok = &(*loaded)->tokenizer();
  rc.tokenize = [tok](const std::string& text) { return tok->encode(text, /*add_special=*/true, /*parse_special=*/false); };
  rc.now = [] { return unix_now(); };
  auto registry = AnchorRegistry::open(std::move(rc));
  if (!registry.ok()) return fail(registry.error().message);
  auto rec = (*registry)->check_anchor(*envelope_text);
  if (!rec.ok()) return fail_with(rec.error());
  auto known = (*registry)->get(rec->digest);
  const AnchorPayload& p = rec->payload;
  const ojson out = {{"digest", rec->digest},
                     {"lineage", p.lineage},
                     {"version", p.version},
                     {"kind", p.kind},
                     {"scope", p.scope},
                     {"text_bytes", p.text.size()},
                     {"tokens", rec->tokens.size()},
                     {"issued", p.issued},
                     {"expires", p.expires},
                     {"state", known ? anchor_state_name(known->state) : "not registered"},
                     {"state_checked", true}};
  std::printf("%s\n", json_line(out).c_str());
  return 0;
}

int verify(const VerifyOptions& o) {
  if (o.state_dir) return verify_against_state(o);
  const uint64_t now = unix_now();
  auto root_text = read_small_file_bytes(o.trust_root, kMaxInputFile);
  if (!root_text.ok()) return fail_with(root_text.error());
  auto root = parse_trust_root(*root_text, now);
  if (!root.ok()) return fail_with(root.error());
  auto envelope_text = read_small_file_bytes(o.anchor, kMaxInputFile);
  if (!envelope_text.ok()) return fail_with(envelope_text.error());
  // The shape first: no reason to hash gigabytes of model for a file that is not an envelope.
  auto envelope = parse_dsse_envelope(*envelope_text);
  if (!envelope.ok()) return fail_with(envelope.error());
  auto model = hash_model_file(o.model);
  if (!model.ok()) return fail_with(model.error());
  AnchorVerifyContext ctx;
  ctx.root = &*root;
  ctx.model_digest = *model;
  ctx.now = now;
  auto verified = verify_anchor_envelope(*envelope_text, ctx);
  if (!verified.ok()) return fail_with(verified.error());
  const std::set<std::string>& signers = verified->signer_keyids;  // the anchor-role keys that signed
  const AnchorPayload& p = verified->payload;
  const ojson out = {
      {"digest", verified->digest}, {"lineage", p.lineage},        {"version", p.version}, {"kind", p.kind},
      {"scope", p.scope},           {"text_bytes", p.text.size()}, {"issued", p.issued},   {"expires", p.expires},
      {"signers", signers}};
  std::printf("%s\n", json_line(out).c_str());
  return 0;
}

// ---------------------------------------------------------------- inspect

ojson cbor_to_json(const CborValue& v) {
  switch (v.type) {
    case CborValue::Type::kUnsigned: return v.uint;
    case CborValue::Type::kBytes: return to_hex(reinterpret_cast<const uint8_t*>(v.bytes.data()), v.bytes.size());
    case CborValue::Type::kText: return v.bytes;
    case CborValue::Type::kArray: {
      ojson out = ojson::array();
      for (const CborValue& item : v.items) out.push_back(cbor_to_json(item));
      return out;
    }
    case CborValue::Type::kMap: break;
  }
  ojson out = ojson::object();
  for (const auto& [k, value] : v.entries)
    out[k.type == CborValue::Type::kText ? k.bytes : json_line(cbor_to_json(k))] = cbor_to_json(value);
  return out;
}

int inspect(const std::string& path) {
  auto text = read_small_file_bytes(path, kMaxInputFile);
  if (!text.ok()) return fail_with(text.error());
  auto envelope = parse_dsse_envelope(*text);
  if (!envelope.ok()) return fail_with(envelope.error());
  ojson out = {{"verified", false},
               {"payloadType", envelope->payload_type},
               {"digest", anchor_digest(envelope->payload)},
               {"payload_bytes", envelope->payload.size()}};
  ojson keyids = ojson::array();
  for (const DsseSignature& s : envelope->signatures) keyids.push_back(s.keyid);
  out["keyids"] = keyids;
  const std::string& type = envelope->payload_type;
  if (type == kAnchorPayloadType) {
    auto p = decode_anchor_payload(envelope->payload);
    if (!p.ok()) return fail_with(p.error());
    out["payload"] = {{"v", 1},          {"lineage", p->lineage}, {"version", p->version},
                      {"kind", p->kind}, {"scope", p->scope},     {"model", to_hex(p->model)},
                      {"text", p->text}, {"issued", p->issued},   {"expires", p->expires}};
  } else if (type == kRevocationPayloadType) {
    const std::span<const uint8_t> raw(reinterpret_cast<const uint8_t*>(envelope->payload.data()),
                                       envelope->payload.size());
    auto value = decode_cbor(raw, CborLimits{.max_depth = 3, .max_items = 3 * kMaxRevocationEntries + 64});
    if (!value.ok())
      return fail_with(
          make_coded_error(anchor_codes::kNonCanonicalPayload, "revocation statement: " + value.error().message));
    if (!is_deterministic_cbor(raw, *value))
      return fail_with(make_coded_error(anchor_codes::kNonCanonicalPayload,
                                        "revocation statement is not in core deterministic CBOR encoding"));
    if (auto statement = decode_revocation_payload(envelope->payload); !statement.ok())
      return fail_with(statement.error());
    out["payload"] = cbor_to_json(*value);
  } else if (type == kRootPayloadType) {
    auto value = parse_strict_json(envelope->payload, /*max_depth=*/5);
    if (!value.ok()) return fail_with(make_coded_error(anchor_codes::kBadField, "root: " + value.error().message));
    out["payload"] = *value;
  } else {
    return fail_with(make_coded_error(anchor_codes::kWrongPayloadType,
                                      "payloadType '" + type + "' is not an anchor, a revocation statement or a root"));
  }
  std::printf("%s\n", out.dump(2, ' ', false, ojson::error_handler_t::replace).c_str());
  return 0;
}

// ---------------------------------------------------------------- revoke

struct RevokeOptions {
  std::vector<std::string> keys, digests, lineages, keyids;
  uint64_t version = 0;
  std::string expires, output;
  std::optional<std::string> issued;
};

int revoke(const RevokeOptions& o) {
  const uint64_t now = unix_now();
  if (o.version < 1) return fail("--version must be at least 1");
  auto window = validity_window(o.issued, o.expires, now);
  if (!window.ok()) return fail_with(window.error());
  const auto [issued, expires] = *window;
  // Sets: each list sorted and without repeats, so that one statement has one encoding.
  std::set<std::string> digests, lineages, keyids;
  for (const std::string& d : o.digests) {
    auto bytes = parse_hex32(d, "--digest " + quoted(d));
    if (!bytes.ok()) return fail_with(bytes.error());
    digests.insert(std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  }
  for (const std::string& l : o.lineages) {
    if (Status st = check_length("--lineage", l, 128); !st.ok()) return fail_with(st.error());
    lineages.insert(l);
  }
  for (const std::string& k : o.keyids) {
    auto bytes = parse_hex32(k, "--keyid " + quoted(k));
    if (!bytes.ok()) return fail_with(bytes.error());
    keyids.insert(to_hex(*bytes));  // lowercase
  }
  for (const auto& [flag, n] : {std::pair<const char*, size_t>{"--digest", digests.size()},
                                {"--lineage", lineages.size()},
                                {"--keyid", keyids.size()}})
    if (n > kMaxRevocationEntries)
      return fail(std::to_string(n) + " " + flag + " values; a statement lists at most " +
                  std::to_string(kMaxRevocationEntries));
  auto list = [](const std::set<std::string>& items, bool bytes) {
    std::vector<CborValue> out;
    for (const std::string& s : items) out.push_back(bytes ? CborValue::byte_string(s) : CborValue::text(s));
    return CborValue::array(std::move(out));
  };
  auto entry = [](const char* key, CborValue value) { return std::make_pair(CborValue::text(key), std::move(value)); };
  const std::string payload = encode_cbor(
      CborValue::map({entry("v", CborValue::unsigned_int(1)), entry("version", CborValue::unsigned_int(o.version)),
                      entry("issued", CborValue::unsigned_int(issued)),
                      entry("expires", CborValue::unsigned_int(expires)), entry("digests", list(digests, true)),
                      entry("lineages", list(lineages, false)), entry("keyids", list(keyids, false))}));
  // Read it back as a verifier would (catches a --lineage that is not UTF-8).
  if (auto back = decode_revocation_payload(payload); !back.ok())
    return fail_with(make_coded_error(back.error().code, "the statement would not verify: " + back.error().message));
  auto keys = read_signing_keys(o.keys, "--key");
  if (!keys.ok()) return fail_with(keys.error());
  auto envelope = sign_envelope(kRevocationPayloadType, payload, *keys);
  if (!envelope.ok()) return fail_with(envelope.error());
  if (Status st = write_file_replacing(o.output, *envelope); !st.ok()) return fail_with(st.error());
  return 0;
}

}  // namespace

void add_anchor_command(CLI::App& app, Action& action) {
  CLI::App* anchor = app.add_subcommand("anchor", "Verified anchors: keys, trust roots, signing, verifying, revoking");
  anchor->require_subcommand(1, 1);

  {
    auto name = std::make_shared<std::string>();
    CLI::App* cmd = anchor->add_subcommand("keygen", "Make an Ed25519 key pair: NAME.key (secret, 0600) and NAME.pub");
    cmd->add_option("-o,--output", *name, "NAME: writes NAME.key and NAME.pub (never overwrites)")->required();
    cmd->callback([name, &action] { action = [name] { return keygen(*name); }; });
  }
  {
    auto o = std::make_shared<RootOptions>();
    CLI::App* cmd = anchor->add_subcommand("root", "Write a trust root, or with --previous a signed root rotation");
    cmd->add_option("--role", o->roles, "ROLE=PUBFILE[,PUBFILE...] for roles root, anchor, revocation (repeatable)")
        ->required();
    cmd->add_option("--threshold", o->thresholds, "ROLE=N: signatures the role needs (default 1; repeatable)");
    cmd->add_option("--version", o->version, "The root's version (>= 1)")->required()->check(uint64_text());
    cmd->add_option("--expires", o->expires, std::string("When the root expires: ") + kDateHelp)->required();
    cmd->add_option("--previous", o->previous, "The root this one replaces: write a rotation envelope");
    cmd->add_option("--sign-with", o->sign_with, "Secret key signing the rotation (repeatable)");
    cmd->add_option("-o,--output", o->output, "Output file")->required();
    cmd->callback([o, &action] { action = [o] { return root(*o); }; });
  }
  {
    auto o = std::make_shared<SignOptions>();
    CLI::App* cmd = anchor->add_subcommand("sign", "Sign an anchor for a model file; prints its digest");
    cmd->add_option("--key", o->keys, "Secret key file, NAME.key (repeatable)")->required();
    cmd->add_option("--model", o->model, "The model file (GGUF) the anchor is for")->required();
    cmd->add_option("--lineage", o->lineage, "Lineage name (1-128 bytes)")->required();
    cmd->add_option("--version", o->version, "Version within the lineage (>= 1)")->required()->check(uint64_text());
    cmd->add_option("--kind", o->kind, "Kind, e.g. system (1-32 bytes)")->required();
    cmd->add_option("--scope", o->scope, "Tenant, or * for every tenant (1-128 bytes)")->required();
    CLI::Option* text = cmd->add_option("--text", o->text, "The anchor text (1-16384 bytes of UTF-8)");
    CLI::Option* text_file = cmd->add_option("--text-file", o->text_file, "File holding the anchor text, exactly");
    text->excludes(text_file);
    cmd->add_option("--expires", o->expires, std::string("Expiry: ") + kDateHelp)->required();
    cmd->add_option("--issued", o->issued, std::string("Valid from (default now): ") + kDateHelp);
    cmd->add_option("-o,--output", o->output, "Output file (the DSSE envelope)")->required();
    cmd->callback([o, &action] { action = [o] { return sign(*o); }; });
  }
  {
    auto o = std::make_shared<VerifyOptions>();
    CLI::App* cmd = anchor->add_subcommand(
        "verify", "Verify an anchor against a trust root and a model; errors read '<code>: <message>'");
    cmd->add_option("--trust-root", o->trust_root, "Trust root JSON")->required();
    cmd->add_option("--model", o->model, "The model file (GGUF) that will serve the anchor")->required();
    cmd->add_option("--state-dir", o->state_dir,
                    "A server's --anchor-state-dir: also make its registry checks (revocations, rollback, token cap), "
                    "read-only");
    cmd->add_option("--anchor-max-tokens", o->max_tokens, "With --state-dir: the server's token cap (default 512)")
        ->check(CLI::Range(1, 1 << 20));
    cmd->add_option("anchor", o->anchor, "The anchor envelope (JSON)")->required();
    cmd->callback([o, &action] { action = [o] { return verify(*o); }; });
  }
  {
    auto path = std::make_shared<std::string>();
    CLI::App* cmd =
        anchor->add_subcommand("inspect", "Decode an anchor, revocation or root envelope WITHOUT verifying it");
    cmd->add_option("envelope", *path, "The envelope (JSON)")->required();
    cmd->callback([path, &action] { action = [path] { return inspect(*path); }; });
  }
  {
    auto o = std::make_shared<RevokeOptions>();
    CLI::App* cmd = anchor->add_subcommand("revoke", "Sign a revocation statement (anchor digests, lineages, keys)");
    cmd->add_option("--key", o->keys, "Secret key file of the revocation role (repeatable)")->required();
    cmd->add_option("--version", o->version, "Statement version (>= 1; increases)")->required()->check(uint64_text());
    cmd->add_option("--digest", o->digests, "Anchor digest to revoke, 64 hex (repeatable)");
    cmd->add_option("--lineage", o->lineages, "Lineage to revoke (repeatable)");
    cmd->add_option("--keyid", o->keyids, "Key id to revoke, 64 hex (repeatable)");
    cmd->add_option("--expires", o->expires, std::string("Expiry: ") + kDateHelp)->required();
    cmd->add_option("--issued", o->issued, std::string("Valid from (default now): ") + kDateHelp);
    cmd->add_option("-o,--output", o->output, "Output file (the DSSE envelope)")->required();
    cmd->callback([o, &action] { action = [o] { return revoke(*o); }; });
  }
}

}  // namespace pagoda::cli
