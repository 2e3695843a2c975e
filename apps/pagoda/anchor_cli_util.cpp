#include "anchor_cli_util.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <set>

#include "anchor/anchor_error.h"
#include "commands.h"

namespace pagoda::cli {

namespace {

Error io_error(const std::string& what, const std::string& path) {
  return make_error(what + " '" + path + "': " + std::strerror(errno));
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const size_t begin = s.find_first_not_of(ws);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(ws) - begin + 1);
}

// Reads exactly `n` decimal digits at `pos`; -1 when they are not all digits.
int digits_at(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

Status write_all(int fd, std::string_view content, const std::string& path) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("cannot write", path);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return io_error("cannot write", path);
  return Status::success();
}

}  // namespace

Result<std::vector<uint8_t>> parse_layer_list(const std::string& text, int64_t n_layer, const std::string& flag) {
  std::vector<uint8_t> mask(n_layer, 0);
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(start, end - start);
    const size_t dash = part.find('-');
    try {
      size_t used = 0;
      const long lo = std::stol(part.substr(0, dash), &used);
      const long hi = dash == std::string::npos ? lo : std::stol(part.substr(dash + 1));
      if (lo < 0 || hi < lo || hi >= n_layer) throw std::out_of_range("layer");
      for (long l = lo; l <= hi; ++l) mask[l] = 1;
    } catch (const std::exception&) {
      return make_error(flag + ": '" + part + "' is not a layer or range within 0-" + std::to_string(n_layer - 1));
    }
    start = end + 1;
  }
  return mask;
}

uint64_t unix_now() {
  const std::time_t t = std::time(nullptr);
  return t < 0 ? 0 : static_cast<uint64_t>(t);
}

Result<uint64_t> parse_date(std::string_view text, uint64_t now, const std::string& flag) {
  auto bad = [&](const std::string& why) -> Error {
    return make_error(flag + " '" + std::string(text) + "' is not a date: " + why +
                      " (expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ in UTC, or +N with d, h, m or s after it)");
  };
  if (text == "now") return now;
  if (!text.empty() && text[0] == '+') {
    if (text.size() < 3) return bad("a relative date is + then a number then d, h, m or s");
    const std::string_view number = text.substr(1, text.size() - 2);
    uint64_t unit = 0;
    switch (text.back()) {
      case 'd': unit = 86400; break;
      case 'h': unit = 3600; break;
      case 'm': unit = 60; break;
      case 's': unit = 1; break;
      default: return bad("the unit must be d, h, m or s");
    }
    uint64_t n = 0;
    for (char c : number) {
      if (c < '0' || c > '9') return bad("a relative date is + then a number then d, h, m or s");
      if (n > (std::numeric_limits<uint64_t>::max() - 9) / 10) return bad("too far in the future");
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    if (n > (std::numeric_limits<uint64_t>::max() - now) / unit) return bad("too far in the future");
    return now + n * unit;
  }
  // YYYY-MM-DD, then optionally THH:MM[:SS]Z.
  const int year = digits_at(text, 0, 4), month = digits_at(text, 5, 2), day = digits_at(text, 8, 2);
  if (text.size() < 10 || year < 0 || month < 0 || day < 0 || text[4] != '-' || text[7] != '-')
    return bad("not in ISO 8601 form");
  int hour = 0, minute = 0, second = 0;
  if (text.size() > 10) {
    if (text[10] != 'T') return bad("the time must follow a 'T'");
    if (text.back() != 'Z') return bad("only UTC times, ending in 'Z', are accepted");
    const std::string_view hms = text.substr(11, text.size() - 12);
    hour = digits_at(hms, 0, 2);
    minute = digits_at(hms, 3, 2);
    if (hms.size() == 8) second = digits_at(hms, 6, 2);
    if ((hms.size() != 5 && hms.size() != 8) || hour < 0 || minute < 0 || second < 0 || hms[2] != ':' ||
        (hms.size() == 8 && hms[5] != ':'))
      return bad("the time must be HH:MM or HH:MM:SS");
  }
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59)
    return bad("a field is out of range");
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t t = ::timegm(&tm);
  std::tm back{};
  // timegm normalises 2027-02-30 to March 2: such a day does not exist.
  if (t < 0 || ::gmtime_r(&t, &back) == nullptr || back.tm_mday != day || back.tm_mon != month - 1)
    return bad("no such day");
  return static_cast<uint64_t>(t);
}

Result<std::string> read_small_file_bytes(const std::string& path, size_t max_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return io_error("cannot open", path);
  if (!S_ISREG(st.st_mode)) return make_error("'" + path + "' is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return make_error("'" + path + "' has " + std::to_string(st.st_size) + " bytes; at most " +
                      std::to_string(max_bytes) + " expected");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return io_error("cannot open", path);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    out.append(buf, n);
    if (out.size() > max_bytes) break;  // it grew since stat
  }
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) return io_error("cannot read", path);
  if (out.size() > max_bytes) return make_error("'" + path + "' has more than " + std::to_string(max_bytes) + " bytes");
  return out;
}

Result<Sha256Digest> hash_model_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return io_error("cannot open", path);
  if (!S_ISREG(st.st_mode)) return make_error("'" + path + "' is not a regular file");
  return sha256_file(path);
}

Status write_file_replacing(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot write", path);
  Status st = write_all(fd, content, path);
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = io_error("cannot write", path);
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

Status write_new_file(const std::string& path, std::string_view content, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) return make_error("'" + path + "' exists; refusing to overwrite it");
    return io_error("cannot create", path);
  }
  Status st = ::fchmod(fd, mode) == 0 ? Status::success() : Status(io_error("cannot set the mode of", path));
  if (st.ok()) st = write_all(fd, content, path);
  ::close(fd);
  if (!st.ok()) ::unlink(path.c_str());
  return st;
}

Result<std::array<uint8_t, 32>> parse_hex32(std::string_view hex, const std::string& what) {
  auto bytes = from_hex<32>(hex);
  if (!bytes.ok()) return make_error(what + " is not 64 hex digits: " + bytes.error().message);
  return *bytes;
}

Result<Ed25519PublicKey> read_public_key(const std::string& path) {
  if (ends_with(path, ".key"))
    return make_error("'" + path + "' is a secret key; give the public key file (NAME.pub) instead");
  auto text = read_small_file_bytes(path, 1024);
  if (!text.ok()) return text.error();
  auto key = parse_hex32(trim(*text), "public key '" + path + "'");
  if (!key.ok()) return key.error();
  if (!ed25519_public_key_is_valid(*key))
    return make_error("'" + path + "' is not a valid Ed25519 public key (small order, or not canonical)");
  return *key;
}

Result<Ed25519KeyPair> read_secret_key(const std::string& path) {
  if (ends_with(path, ".pub"))
    return make_error("'" + path + "' is a public key; give the secret key file (NAME.key) instead");
  auto text = read_small_file_bytes(path, 1024);
  if (!text.ok()) return text.error();
  auto seed = from_hex<32>(trim(*text));
  sodium_memzero(text->data(), text->size());
  if (!seed.ok()) return make_error("secret key '" + path + "' is not 64 hex digits: " + seed.error().message);
  Ed25519KeyPair kp = ed25519_from_seed(*seed);
  sodium_memzero(seed->data(), seed->size());
  // NAME.key beside a NAME.pub of another key: a mix-up that would sign with a key nobody trusts.
  if (ends_with(path, ".key")) {
    const std::string pub_path = path.substr(0, path.size() - 4) + ".pub";
    struct stat st;
    if (::stat(pub_path.c_str(), &st) == 0) {
      auto pub = read_public_key(pub_path);
      if (pub.ok() && *pub != kp.public_key)
        return make_error("secret key '" + path + "' does not belong to the public key in '" + pub_path + "'");
    }
  }
  return kp;
}

Result<std::vector<Ed25519KeyPair>> read_signing_keys(const std::vector<std::string>& paths, const std::string& flag) {
  if (paths.empty()) return make_error("at least one " + flag + " is required");
  if (paths.size() > kMaxSignatures)
    return make_error(std::to_string(paths.size()) + " " + flag + " keys; an envelope carries at most " +
                      std::to_string(kMaxSignatures) + " signatures");
  std::vector<Ed25519KeyPair> keys;
  std::set<std::string> seen;
  for (const std::string& path : paths) {
    auto kp = read_secret_key(path);
    if (!kp.ok()) return kp.error();
    if (!seen.insert(ed25519_key_id(kp->public_key)).second)
      return make_error(flag + " '" + path + "' is a key already given");
    keys.push_back(*kp);
  }
  return keys;
}

Result<std::string> sign_envelope(std::string_view payload_type, std::string payload,
                                  const std::vector<Ed25519KeyPair>& keys) {
  DsseEnvelope envelope;
  envelope.payload_type = std::string(payload_type);
  envelope.payload = std::move(payload);
  const std::string pae = dsse_pae(envelope.payload_type, envelope.payload);
  for (const Ed25519KeyPair& kp : keys)
    envelope.signatures.push_back({ed25519_key_id(kp.public_key), ed25519_sign(pae, kp.secret_key)});
  std::string text = write_dsse_envelope(envelope) + "\n";
  if (text.size() > kMaxEnvelopeBytes)
    return make_coded_error(anchor_codes::kTooLarge, "the envelope would have " + std::to_string(text.size()) +
                                                         " bytes; a verifier accepts at most " +
                                                         std::to_string(kMaxEnvelopeBytes));
  // What is written must read back: the same checks a verifier makes on the shape.
  if (auto back = parse_dsse_envelope(text); !back.ok()) return back.error();
  return text;
}

int fail_with(const Error& error) {
  return fail(error.code.empty() ? error.message : error.code + ": " + error.message);
}

}  // namespace pagoda::cli
