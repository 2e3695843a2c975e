// `pagoda bench anchor-memory`: is an anchor's content used? (docs/anchor-benchmark.md), registered under
// `pagoda bench`.
#pragma once

#include <CLI/CLI.hpp>

#include "commands.h"

namespace pagoda::cli {

void add_bench_anchor_memory_command(CLI::App& bench, Action& action);

}  // namespace pagoda::cli
