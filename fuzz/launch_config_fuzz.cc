// elasticrun's command line and PET_* environment (launcher/launch_config.h):
// one argument per line; lines of the form "PET_X=..." before a line "--" go to
// the environment instead. Invariant: every outcome is one of the three, and a
// usage error always says why.
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "launcher/launch_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  elastic::fuzz::FuzzInput in(data, size);
  std::vector<std::string> lines = in.Lines();
  elastic::EnvMap env;
  std::vector<std::string> args = {"elasticrun"};
  bool in_env = true;
  for (const std::string& line : lines) {
    if (in_env && line == "--") {
      in_env = false;
      continue;
    }
    size_t eq = line.find('=');
    if (in_env && (line.starts_with("PET_") || line.starts_with("ELASTIC_")) &&
        eq != std::string::npos) {
      env[line.substr(0, eq)] = line.substr(eq + 1);
    } else {
      in_env = false;
      args.push_back(line);
    }
  }
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  elastic::LaunchConfig config;
  std::string out, err;
  auto outcome = elastic::ParseLaunchConfig(static_cast<int>(args.size()), argv.data(), env,
                                            &config, &out, &err);
  if (outcome == elastic::ParseOutcome::kUsageError && err.empty()) std::abort();
  if (outcome == elastic::ParseOutcome::kExitOk && out.empty()) std::abort();
  return 0;
}
