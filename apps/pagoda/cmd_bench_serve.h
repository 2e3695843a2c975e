// `pagoda bench serve`: a load generator for OpenAI-compatible servers, registered under `pagoda bench`.
#pragma once

#include <CLI/CLI.hpp>

#include "commands.h"

namespace pagoda::cli {

void add_bench_serve_command(CLI::App& bench, Action& action);

}  // namespace pagoda::cli
