// `pagoda bench anchors`: what verified anchors cost and what they do (docs/anchor-benchmark.md), registered under
// `pagoda bench`.
#pragma once

#include <CLI/CLI.hpp>

#include "commands.h"

namespace pagoda::cli {

void add_bench_anchors_command(CLI::App& bench, Action& action);

}  // namespace pagoda::cli
