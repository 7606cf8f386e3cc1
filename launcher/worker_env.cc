#include "launcher/worker_env.h"

#include <unistd.h>

#include "common/parse.h"

namespace elastic {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

void SetDefault(EnvMap* env, const std::string& key, const std::string& value) {
  env->emplace(key, value);  // keeps an inherited value
}

}  // namespace

EnvMap BuildWorkerEnv(const WorkerEnvInput& in) {
  const LaunchConfig& c = *in.config;
  const RoundInfo& r = in.round;
  EnvMap env;
  for (const auto& [key, value] : *in.base) {
    // The rendezvous token is the agents' secret: workers never need it.
    if (StartsWith(key, "ELASTIC_SPANK_") || StartsWith(key, "PET_") || key == "HWLOC_XMLFILE" ||
        key == "ELASTIC_RDZV_TOKEN") {
      continue;
    }
    env.emplace(key, value);
  }
  if (in.task) {
    // As under plain srun: worker K sees what Slurm gave task K (--gpus-per-task,
    // --gpu-bind), and that task's SLURM_PROCID/SLURM_LOCALID.
    for (const char* const* v = kTaskVariables; *v; ++v) env.erase(*v);
    for (const auto& [key, value] : in.task->set) env[key] = value;
  }
  int rank = r.rank_offset + in.local_rank;
  env["RANK"] = std::to_string(rank);
  env["LOCAL_RANK"] = std::to_string(c.spec.virtual_local_rank ? 0 : in.local_rank);
  env["WORLD_SIZE"] = std::to_string(r.world_size);
  env["LOCAL_WORLD_SIZE"] = std::to_string(c.spec.nproc);
  env["GROUP_RANK"] = std::to_string(r.group_rank);
  env["GROUP_WORLD_SIZE"] = std::to_string(r.group_world_size);
  env["ROLE_NAME"] = c.spec.role;
  env["ROLE_RANK"] = std::to_string(rank);
  env["ROLE_WORLD_SIZE"] = std::to_string(r.world_size);
  env["MASTER_ADDR"] = r.store_addr;
  env["MASTER_PORT"] = std::to_string(r.store_port);
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(r.round);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(c.spec.rdzv.max_restarts);
  env["TORCHELASTIC_RUN_ID"] = c.spec.rdzv.run_id;
  env["TORCHELASTIC_USE_AGENT_STORE"] = r.use_agent_store ? "True" : "False";
  env["TORCHELASTIC_ERROR_FILE"] = in.error_file;
  env["TORCHELASTIC_SIGNALS_TO_HANDLE"] = c.spec.signals_to_handle_text;  // as torchrun 2.14's agent
  // PyTorch 2.x reads TORCH_NCCL_ASYNC_ERROR_HANDLING, 1.13 the old name: set both,
  // and if the user set either one, give the other the same value.
  auto torch_name = env.find("TORCH_NCCL_ASYNC_ERROR_HANDLING");
  auto old_name = env.find("NCCL_ASYNC_ERROR_HANDLING");
  std::string async = torch_name != env.end() ? torch_name->second
                      : old_name != env.end() ? old_name->second
                                              : "1";
  SetDefault(&env, "TORCH_NCCL_ASYNC_ERROR_HANDLING", async);
  SetDefault(&env, "NCCL_ASYNC_ERROR_HANDLING", async);
  if (in.bound_cores > 0) {
    SetDefault(&env, "OMP_NUM_THREADS", std::to_string(in.bound_cores));
  } else if (c.spec.nproc > 1) {
    SetDefault(&env, "OMP_NUM_THREADS", "1");
  }
  // SIGABRT then prints every thread's Python stack (a hung worker: hung_worker.h);
  // it costs nothing until a fatal signal arrives.
  SetDefault(&env, "PYTHONFAULTHANDLER", "1");
  // torchrun runs every program as `python -u`; a program executed directly here
  // (a console script without .py) gets the same unbuffered output.
  SetDefault(&env, "PYTHONUNBUFFERED", "1");
  if (!in.timer_file.empty()) env["TORCHELASTIC_TIMER_FILE"] = in.timer_file;
  if (!in.gloo_ifname.empty()) SetDefault(&env, "GLOO_SOCKET_IFNAME", in.gloo_ifname);
  if (!in.python_shim_dir.empty()) {
    auto it = env.find("PYTHONPATH");
    env["PYTHONPATH"] = it == env.end() || it->second.empty()
                            ? in.python_shim_dir
                            : in.python_shim_dir + ":" + it->second;
  }
  // Slurm and NVML number GPUs in PCI bus order; make CUDA agree.
  SetDefault(&env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  if (c.spec.virtual_local_rank) {
    auto it = env.find("CUDA_VISIBLE_DEVICES");
    std::vector<std::string> devices;
    if (it != env.end()) devices = Split(it->second, ',');
    env["CUDA_VISIBLE_DEVICES"] = in.local_rank < static_cast<int>(devices.size())
                                      ? devices[in.local_rank]
                                      : std::to_string(in.local_rank);
  }
  return env;
}

std::string TorchShimDir(const EnvMap& base, const std::string& exe, std::string* warning) {
  auto it = base.find("ELASTIC_TORCH_NO_LIBUV");
  if (it == base.end() || it->second != "1") return "";
  std::string dir = exe.substr(0, exe.rfind('/') == std::string::npos ? 0 : exe.rfind('/'));
  // Installed: <prefix>/bin/elasticrun -> <prefix>/share/slurm-elastic/python.
  // Build tree: launcher/elasticrun -> launcher/python.
  for (const std::string& candidate : {dir + "/../share/slurm-elastic/python", dir + "/python"}) {
    if (::access((candidate + "/sitecustomize.py").c_str(), R_OK) == 0) return candidate;
  }
  *warning = "ELASTIC_TORCH_NO_LIBUV=1, but the shim (share/slurm-elastic/python/sitecustomize.py) "
             "is not installed next to " + exe + ": workers start without it";
  return "";
}

std::vector<std::string> EnvToStrings(const EnvMap& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [key, value] : env) out.push_back(key + "=" + value);
  return out;
}

}  // namespace elastic
