// Crash-safe file replacement: a reader (or a restart) sees either the old content or the new, never a mix.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace pagoda {

// Writes `content` to a temporary file beside `path`, fsyncs it, renames it over `path`, and fsyncs the folder
// so that the rename itself survives a power cut. Errors name the path and the failing step.
Status write_file_atomically(const std::string& path, std::string_view content);

// The whole file; an error names it (missing, unreadable, larger than max_bytes).
Result<std::string> read_small_file(const std::string& path, size_t max_bytes);

}  // namespace pagoda
