// RunElasticrun: everything main() does after parsing: resolve --nproc-per-node
// and the program, plan the binding, make the log directory and the rendezvous,
// then run the agent. Bad settings are reported before anything starts (exit 2).
#pragma once

#include "launcher/launch_config.h"

namespace elastic {

int RunElasticrun(LaunchConfig config, const EnvMap& env);

// main() minus the process: parse, then run. Returns the exit code.
int ElasticrunMain(int argc, const char* const* argv);

}  // namespace elastic
