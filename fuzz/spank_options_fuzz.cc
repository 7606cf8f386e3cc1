// The plugin's option values (srun --elastic*, also from the
// SLURM_SPANK__SLURM_SPANK_OPTION_elastic_* environment) and plugstack.conf
// arguments (spank_plugin/options.h). Input: selector byte, then lines.
// Selector even: every line is "<option index> <value>" applied in order (the
// same option twice is how Slurm may call the callbacks); odd: the lines are
// plugstack.conf words. Invariant: failures name what failed; successes are
// in the documented ranges.
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "spank_plugin/options.h"

using namespace elastic::spank;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  elastic::fuzz::FuzzInput in(data, size);
  unsigned char which = in.Selector();
  std::vector<std::string> lines = in.Lines();
  std::string err;
  PluginConfig config;
  if (which % 2 == 1) {
    if (!ParsePluginArgs(lines, "/usr/bin/elasticrun", &config, &err)) {
      if (err.find("plugstack.conf") == std::string::npos) std::abort();
      return 0;
    }
    if (config.launcher.empty() || config.launcher.front() != '/') std::abort();
    if (config.port_lo < 1 || config.port_hi > 65535 || config.port_lo > config.port_hi) std::abort();
    return 0;
  }
  ElasticOptions options;
  for (const std::string& line : lines) {
    if (line.empty()) continue;
    size_t index = static_cast<unsigned char>(line[0]) % elastic::kSrunOptionCount;
    const elastic::OptionRow& spec = *elastic::SrunRows()[index];
    // A second byte of '!' means "no value" (a flag, or --elastic alone).
    const char* value = line.size() > 1 && line[1] == '!' ? nullptr : line.c_str() + 1;
    err.clear();
    if (!ApplyOption(spec.id, value, &options, &err)) {
      if (err.empty()) std::abort();
      continue;
    }
    if (options.nnodes && (options.nnodes->first < 1 || options.nnodes->first > options.nnodes->second)) {
      std::abort();
    }
    if (options.rdzv_port && (*options.rdzv_port < 1 || *options.rdzv_port > 65535)) std::abort();
  }
  err.clear();
  if (!ValidateCombination(options, config, &err) && err.empty()) std::abort();
  return 0;
}
