// The environment of one worker: torchrun's contract (docs/design.md, "The worker contract"),
// built as a pure function of the agent's environment, the round and the rank.
#pragma once

#include <string>
#include <vector>

#include "launcher/launch_config.h"
#include "launcher/task_group.h"
#include "rendezvous/rendezvous_handler.h"

namespace elastic {

struct WorkerEnvInput {
  const EnvMap* base = nullptr;   // the agent's environment
  const LaunchConfig* config = nullptr;
  RoundInfo round;
  int local_rank = 0;
  std::string error_file;         // TORCHELASTIC_ERROR_FILE
  int bound_cores = 0;            // cores of the worker's CPU binding, 0 = unbound
  std::string gloo_ifname;        // GLOO_SOCKET_IFNAME unless the user set it ("" = leave alone)
  std::string python_shim_dir;    // put first on PYTHONPATH ("" = leave alone; see TorchShimDir)
  std::string timer_file;         // TORCHELASTIC_TIMER_FILE of the agent's FileTimerServer ("" = none)
  const TaskRecord* task = nullptr;  // one task per GPU: this worker's Slurm task (task_group.h)
};

// With ELASTIC_TORCH_NO_LIBUV=1 in the agent's environment: the directory of
// the sitecustomize that makes PyTorch 2.x builds without libuv work with the
// agent's store (launcher/python, installed under share/slurm-elastic/python),
// found next to `exe` (/proc/self/exe). "" otherwise, or when it is missing
// (*warning then says so).
std::string TorchShimDir(const EnvMap& base, const std::string& exe, std::string* warning);

// Returns the worker's environment. Removes ELASTIC_SPANK_*, PET_* and HWLOC_XMLFILE;
// keeps CUDA_VISIBLE_DEVICES as given (LOCAL_RANK picks the device), except with
// --virtual-local-rank. OMP_NUM_THREADS, if not set by the user: the bound cores when
// the worker is bound, else 1 when nproc > 1 (torchrun's rule). PYTHONFAULTHANDLER=1 unless
// the user set it (a hung worker's stacks: hung_worker.h); PYTHONUNBUFFERED=1 unless the
// user set it (torchrun's `python -u`, for console scripts too). TORCHELASTIC_TIMER_FILE when
// the agent serves one (torchrun passes it on the same way). With `task` (one task
// per GPU), the variables of kTaskVariables are that task's (its GPUs, SLURM_PROCID,
// SLURM_LOCALID).
EnvMap BuildWorkerEnv(const WorkerEnvInput& in);

// "KEY=VALUE" strings for execve.
std::vector<std::string> EnvToStrings(const EnvMap& env);

}  // namespace elastic
