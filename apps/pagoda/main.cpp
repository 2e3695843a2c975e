// pagoda: one binary, subcommands run / tokenize / inspect / synth / bench / batch.
#include <cstdio>
#include <exception>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"pagoda: LLM inference with a paged KV cache"};
  app.require_subcommand(1, 1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  pagoda::cli::Action action;
  pagoda::cli::add_run_command(app, action);
  pagoda::cli::add_tokenize_command(app, action);
  pagoda::cli::add_inspect_command(app, action);
  pagoda::cli::add_synth_command(app, action);
  pagoda::cli::add_bench_command(app, action);
  pagoda::cli::add_batch_command(app, action);
  pagoda::cli::add_serve_command(app, action);
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
