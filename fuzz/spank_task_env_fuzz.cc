// What the plugin reads from Slurm's environment on a compute node (node list,
// GPU lists, reserved ports, slurm.conf's AuthInfo) and turns into elasticrun's
// PET_* environment (spank_plugin/task_env.h). Input lines:
//   0 SLURM_STEP_NODELIST  1 SLURM_STEP_RESV_PORTS  2 CUDA_VISIBLE_DEVICES
//   3 SLURM_STEP_GPUS      4 node id, node count, local tasks ("0 3 1")
//   5 --elastic value      6 --elastic-rdzv-endpoint   7.. slurm.conf text
// Invariants: the chosen port is a port; a built environment has the node rank
// and a host; a failure says why.
#include <cstdlib>
#include <sstream>
#include <string>

#include "fuzz/fuzz_input.h"
#include "spank_plugin/plugin.h"
#include "testing/spank_api_fake.h"
#include "spank_plugin/task_env.h"

using namespace elastic::spank;
using elastic::fuzz::Field;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  elastic::fuzz::FuzzInput in(data, size);
  std::vector<std::string> f = in.Lines();
  StepInfo step;
  step.job_id = 1234;
  step.step_id = 0;
  step.step_nodelist = Field(f, 0);
  step.resv_ports = Field(f, 1);
  // Fields 2 and 3 were the GPU lists: elasticrun counts them now (launcher/step_gpus.h).
  {
    std::istringstream ids(Field(f, 4));
    unsigned node_id = 0, nnodes = 1, local = 1;
    ids >> node_id >> nnodes >> local;
    step.node_id = node_id;
    step.nnodes = nnodes;
    step.local_tasks = local;
  }
  std::string conf;
  for (size_t i = 7; i < f.size(); ++i) conf += f[i] + "\n";
  step.munge_socket = MungeSocketFromSlurmConf(conf);

  ElasticOptions options;
  std::string err;
  ApplyOption(OptionId::kElastic, Field(f, 5).empty() ? nullptr : Field(f, 5).c_str(), &options, &err);
  if (!Field(f, 6).empty()) ApplyOption(OptionId::kRdzvEndpoint, Field(f, 6).c_str(), &options, &err);
  PluginConfig config;
  FakeNodes nodes;
  nodes.dns["n1"] = "10.0.0.1";
  nodes.node_addr["n2"] = "10.0.0.2";

  std::string source;
  int port = ChooseRdzvPort(step, options, config, &source);
  if (port < 1 || port > 65535) std::abort();
  err.clear();
  if (!ValidateStepLayout(NodeLayout(step), options, PluginConfig{}, &err) && err.empty()) std::abort();
  EnvList env;
  err.clear();
  if (!BuildTaskEnv(step, options, config, nodes, &env, &err)) {
    if (err.empty()) std::abort();
  } else if (env.empty()) {
    std::abort();
  }
  return 0;
}
