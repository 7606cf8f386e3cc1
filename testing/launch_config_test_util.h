// Test-only: one elasticrun command line through ParseLaunchConfig, with what it
// printed. Shared by launch_config_test.cc and launch_config_torchrun_test.cc.
#pragma once

#include <string>
#include <vector>

#include "launcher/launch_config.h"

namespace elastic {

struct Parsed {
  ParseOutcome outcome;
  LaunchConfig config;
  std::string out;
  std::string err;
};

inline Parsed Parse(std::vector<const char*> args, const EnvMap& env = {}) {
  args.insert(args.begin(), "elasticrun");
  Parsed p;
  p.outcome = ParseLaunchConfig(static_cast<int>(args.size()), args.data(), env, &p.config, &p.out, &p.err);
  return p;
}

}  // namespace elastic
