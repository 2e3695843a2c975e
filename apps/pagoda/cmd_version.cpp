// pagoda version (and pagoda --version): what was built, and which kernel set this CPU runs.
#include <cstdio>

#include "build_info.h"
#include "commands.h"
#include "kernels/cpu_features.h"
#include "model/device_forward.h"
#include "util/thread_pool.h"

namespace pagoda::cli {

std::string version_report(bool system) {
  const BuildInfo& b = build_info();
  std::string out = std::string("pagoda ") + b.version + "\n";
  out += std::string("commit: ") + b.commit + "\n";
  out += std::string("build: ") + b.build_type + ", " + b.compiler + "\n";
  out += "kernels: " + describe_kernel_isa() + "\n";
  out += std::string("devices: cpu") + (device_built(Device::kCuda) ? ", cuda" : "") + " (--device)\n";
  if (system) {
    const std::string model = cpu_model_name();
    out += "cpu: " + (model.empty() ? std::string("unknown") : model) + "\n";
    out += "cpu flags: " + cpu_flags_string(cpu_features()) + "\n";
    out += "threads: " + std::to_string(ThreadPool::default_num_threads()) + " (default --threads)\n";
  }
  return out;
}

void add_version_command(CLI::App& app, Action& action) {
  CLI::App* cmd = app.add_subcommand("version", "Show version, git commit, build, and the kernel set this CPU runs");
  cmd->callback([&action] {
    action = [] {
      std::fputs(version_report(/*system=*/false).c_str(), stdout);
      return 0;
    };
  });
}

}  // namespace pagoda::cli
