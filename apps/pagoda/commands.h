// Subcommands of the pagoda binary. Each add_*_command registers its flags on the CLI11 app and sets
// `action` to the function that runs it once parsing has succeeded; that function returns the exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace pagoda::cli {

using Action = std::function<int()>;

void add_run_command(CLI::App& app, Action& action);
void add_tokenize_command(CLI::App& app, Action& action);
void add_inspect_command(CLI::App& app, Action& action);
void add_synth_command(CLI::App& app, Action& action);
void add_convert_command(CLI::App& app, Action& action);
void add_bench_command(CLI::App& app, Action& action);
void add_batch_command(CLI::App& app, Action& action);
void add_serve_command(CLI::App& app, Action& action);
void add_template_command(CLI::App& app, Action& action);
void add_version_command(CLI::App& app, Action& action);
void add_anchor_command(CLI::App& app, Action& action);
void add_warmstart_command(CLI::App& app, Action& action);
void add_perplexity_command(CLI::App& app, Action& action);

// Prints "pagoda: error: <message>" on stderr and returns the exit code for a failed command.
int fail(const std::string& message);

// Serialises a JSON value on one line; invalid UTF-8 in strings becomes U+FFFD rather than an exception.
std::string json_line(const nlohmann::ordered_json& value);

// The whole of `text` as a number (inf and nan included); nullopt when it is not one.
std::optional<double> parse_number(const std::string& text);

// A validator for a finite number in [lo, hi] (CLI::Range lets NaN through).
CLI::Validator finite_range(double lo, double hi);

// A validator for an unsigned 64-bit integer written in decimal (no sign, no overflow).
CLI::Validator uint64_text();

// Adds --threads with the machine's core count as default.
void add_threads_flag(CLI::App& cmd, int& threads);

}  // namespace pagoda::cli
