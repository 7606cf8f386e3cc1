// The worker count of an `srun --elastic` step without --elastic-nproc-per-node:
// one worker per GPU Slurm gave the step on this node, else one. elasticrun
// decides it (the plugin forwards only what the user typed: common/option_table.h);
// the plugin's documented default ("the step's GPUs on the node, else 1").
#pragma once

#include <string>

#include "launcher/launch_config.h"

namespace elastic {

// GPUs of the step on this node: the entries of CUDA_VISIBLE_DEVICES, else of
// SLURM_STEP_GPUS, else of SLURM_JOB_GPUS (the first one set and not empty; no
// hwloc: a node's GPUs outside the step are not the step's). A list that does
// not parse is an error naming the variable and the bad entry.
bool CountStepGpus(const EnvMap& env, int* count, std::string* err);

// The worker count under the plugin when no count was given: CountStepGpus, else 1.
bool StepDefaultNproc(const EnvMap& env, int* nproc, std::string* err);

}  // namespace elastic
