// pagoda: one binary, subcommands run / tokenize / inspect / synth / bench / batch / serve / anchor / version / warmstart.
#include <cstdio>
#include <exception>

#include "build_info.h"
#include "commands.h"
#include "kernels/cpu_features.h"

int main(int argc, char** argv) {
  CLI::App app{"pagoda: LLM inference with a paged KV cache"};
  app.require_subcommand(1, 1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  pagoda::cli::Action action;
  pagoda::cli::add_run_command(app, action);
  pagoda::cli::add_tokenize_command(app, action);
  pagoda::cli::add_inspect_command(app, action);
  pagoda::cli::add_synth_command(app, action);
  pagoda::cli::add_convert_command(app, action);
  pagoda::cli::add_bench_command(app, action);
  pagoda::cli::add_batch_command(app, action);
  pagoda::cli::add_serve_command(app, action);
  pagoda::cli::add_template_command(app, action);
  pagoda::cli::add_version_command(app, action);
  pagoda::cli::add_anchor_command(app, action);
  pagoda::cli::add_warmstart_command(app, action);
  pagoda::cli::add_perplexity_command(app, action);
  app.set_version_flag("--version", [] {
    std::string report = pagoda::cli::version_report(/*system=*/false);
    report.pop_back();  // CLI11 ends the message with its own newline
    return report;
  });
  // A PAGODA_ISA the CPU cannot run is refused before anything runs (the kernels would fall back silently, and
  // --version would report a set the user did not ask for).
  if (auto isa = pagoda::kernel_isa_from_env(); !isa.ok()) return pagoda::cli::fail(isa.error().message);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "pagoda: error: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    return action();
  } catch (const std::exception& e) {  // e.g. std::bad_alloc: still one clear line, never an abort
    return pagoda::cli::fail(e.what());
  }
}
