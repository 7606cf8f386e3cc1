// What the workers run and how many of them: the .py rule, -m, --python,
// --no-python, PATH lookup, and --nproc-per-node N|gpu|cpu|auto.
#pragma once

#include <string>
#include <vector>

#include "launcher/launch_config.h"

namespace elastic {

// Resolves config->nproc_spec into config->nproc. gpu/auto count the GPUs this node
// may use (config->gpus, parsed from the environment): CUDA_VISIBLE_DEVICES (even
// when empty), else SLURM_STEP_GPUS, else SLURM_JOB_GPUS, else hwloc. `gpu` with
// none is an error, and so is a GPU list that does not parse; `cpu` is the number
// of CPUs this process may run on; `auto` is the GPU count, else the CPU count.
bool ResolveNproc(LaunchConfig* config, std::string* err);

// The command the workers exec. A first argument ending in .py (or -m, --run-path)
// runs as `<python> -u ...`; anything else is executed as given; --no-python forces
// direct execution. The program (or the interpreter) is looked up in PATH here, so a
// missing one is an error before anything starts.
bool BuildWorkerCommand(const LaunchConfig& config, const EnvMap& env, std::string* path,
                        std::vector<std::string>* argv, std::string* err);

// Looks `name` up like execvp: a name with '/' as given, else each PATH entry;
// with `cwd_last` (under srun), then the working directory, as slurmstepd does.
bool FindInPath(const std::string& name, const std::string& path_env, std::string* found,
                bool cwd_last = false);

}  // namespace elastic
