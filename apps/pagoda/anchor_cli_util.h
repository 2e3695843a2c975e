// Helpers of `pagoda anchor`: dates, key files, file I/O and signing. Everything returns a Result whose message
// is ready for one `pagoda: error: ...` line (an Error::code, where there is one, is printed before it).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "anchor/dsse_envelope.h"
#include "anchor/ed25519.h"
#include "util/result.h"

namespace pagoda::cli {

// "0-3,6" -> the layers it names, as a [n_layer] visibility mask (1: named). `flag` names the flag in the message.
Result<std::vector<uint8_t>> parse_layer_list(const std::string& text, int64_t n_layer, const std::string& flag);

// Unix seconds now.
uint64_t unix_now();

// DATE for --expires and --issued, in UTC: `2027-01-31`, `2027-01-31T12:00Z`, `2027-01-31T12:00:00Z`, a time
// relative to `now` (`+30d`, `+12h`, `+90m`, `+3600s`), or `now`. `flag` names the flag in the message.
Result<uint64_t> parse_date(std::string_view text, uint64_t now, const std::string& flag);

// A regular file of at most max_bytes, whole; the error names the file.
Result<std::string> read_small_file_bytes(const std::string& path, size_t max_bytes);

// SHA-256 of a model file's bytes (pagoda::sha256_file, streamed), refusing what is not a regular file (a FIFO
// would block).
Result<Sha256Digest> hash_model_file(const std::string& path);

// Writes a temporary file beside `path` and renames it over `path` (readers never see half a file).
Status write_file_replacing(const std::string& path, std::string_view content);

// Creates `path` with `mode`, refusing to replace an existing file (O_EXCL).
Status write_new_file(const std::string& path, std::string_view content, mode_t mode);

// NAME.key: 64 hex digits of the Ed25519 seed on one line. Refuses a NAME.pub, and a NAME.key whose NAME.pub
// beside it holds another key.
Result<Ed25519KeyPair> read_secret_key(const std::string& path);

// NAME.pub: 64 hex digits of the public key on one line, a valid prime-order point. Refuses a NAME.key.
Result<Ed25519PublicKey> read_public_key(const std::string& path);

// Reads every --key file; refuses none, duplicates, and more than a DSSE envelope may carry.
Result<std::vector<Ed25519KeyPair>> read_signing_keys(const std::vector<std::string>& paths, const std::string& flag);

// A DSSE envelope over `payload`, signed by each key (keyid = ed25519_key_id of its public key), as JSON text
// ending with a newline. Errors when it would exceed kMaxEnvelopeBytes.
Result<std::string> sign_envelope(std::string_view payload_type, std::string payload,
                                  const std::vector<Ed25519KeyPair>& keys);

// 64 hex digits (either case) -> 32 bytes; `what` names the value in the message.
Result<std::array<uint8_t, 32>> parse_hex32(std::string_view hex, const std::string& what);

// Prints "pagoda: error: [<code>: ]<message>" and returns 1.
int fail_with(const Error& error);

}  // namespace pagoda::cli
