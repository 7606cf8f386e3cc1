// RunElasticrun: everything main() does after parsing: resolve --nproc-per-node
// and the program, plan the binding, make the log directory, the event loop and
// the rendezvous on it, then run the agent on that loop. Bad settings are
// reported before anything starts (exit 2).
//
// ElasticrunMain: parse (launcher/launch_config.h), then under the plugin with
// PMIx in the step, bootstrap the rendezvous host from PMIx
// (launcher/pmix_bootstrap.h) and merge what it returned into the settings
// (MergePmixInfo), then RunElasticrun.
#pragma once

#include "launcher/launch_config.h"
#include "launcher/task_group.h"
#include "launcher/pmix_bootstrap.h"
#include "rendezvous/token_file.h"

namespace elastic {

// `tasks`: one per local Slurm task when this is task 0 of several on the node
// (task_group.h): worker K gets task K's binding and variables. Empty otherwise.
// host_runner_fd: the plugin's host runner (host_runner.h, AdoptHostRunnerFd), owned
// from here on; -1: none.
int RunElasticrun(LaunchConfig config, const EnvMap& env, const std::vector<TaskRecord>& tasks,
                  int host_runner_fd = -1);

// What PMIx says overrides what the plugin could only guess: the rendezvous
// host becomes node 0's preferred address (the port stays the plugin's), this
// node's preferred rank its PMIx node id, and the expected node count PMIx's
// (when within --nnodes; --rdzv-conf expected_nodes still wins).
void MergePmixInfo(const PmixInfo& info, RendezvousOptions* rdzv);

// main() minus the process: parse, then run. Returns the exit code.
// `handed`: the plugin's per-step token (rendezvous/token_file.h, AdoptHandedToken);
// when handed it is the run's token (over ELASTIC_RDZV_TOKEN; --rdzv-conf token=
// or token_file= still win) and token mode is used, munge or not.
// host_runner_fd: as for RunElasticrun.
int ElasticrunMain(int argc, const char* const* argv, const HandedToken& handed = {}, int host_runner_fd = -1);

}  // namespace elastic
