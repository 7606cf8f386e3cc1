#include "launcher/worker_command.h"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/parse.h"

#include "hwloc_binding/binding.h"

namespace elastic {
namespace {

std::string Get(const EnvMap& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

int CountCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

// GPUs this node may use; *source says where the number came from. False
// (with *err) when that variable holds no GPU list.
bool CountGpusFromConfig(const LaunchConfig& config, int* gpus, std::string* source, std::string* err) {
  *gpus = 0;
  for (const std::optional<GpuList>* entry : {&config.spec.gpus.cuda_visible_devices, &config.spec.gpus.step_gpus}) {
    if (!*entry) continue;
    const GpuList* list = &**entry;
    *source = list->name;
    if (!list->ok) {
      *err = list->error;
      return false;
    }
    *gpus = static_cast<int>(list->devices.size());
    return true;
  }
  *source = "hwloc";
  BindingRequest request;
  request.topology_file = config.spec.topology;
  request.gpu_vendor = config.spec.gpu_vendor;
  std::string why;
  if (CountGpus(request, gpus, &why)) return true;
  *gpus = 0;
  *source = "hwloc (" + why + ")";
  return true;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Why a path (one with a '/') cannot be executed, for the error: in a container the
// reader must learn that the file is missing from this filesystem (the image's).
std::string WhyNotExecutable(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return fmt::format(": {} (on this node; in a container: in its image)", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return ": not a regular file";
  return fmt::format(": not executable (mode {:04o})", st.st_mode & 07777);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool ResolveNproc(LaunchConfig* config, std::string* err) {
  const std::string spec = FormatNprocSpec(config->spec.nproc_spec);
  switch (config->spec.nproc_spec.kind) {
    case NprocSpec::Kind::kCount:
      config->spec.nproc = config->spec.nproc_spec.count;
      return true;
    case NprocSpec::Kind::kCpu:
      config->spec.nproc = CountCpus();
      return true;
    case NprocSpec::Kind::kGpu:
    case NprocSpec::Kind::kAuto:
      break;
  }
  std::string source;
  int gpus = 0;
  if (!CountGpusFromConfig(*config, &gpus, &source, err)) {
    *err = "--nproc-per-node=" + spec + ": " + *err;
    return false;
  }
  if (gpus > 0) {
    config->spec.nproc = gpus;
    return true;
  }
  if (config->spec.nproc_spec.kind == NprocSpec::Kind::kGpu) {
    *err = fmt::format(
        "--nproc-per-node=gpu: this node has no GPU to use (looked at {}); "
        "give a number or use --nproc-per-node=auto",
        source);
    return false;
  }
  config->spec.nproc = CountCpus();
  return true;
}

bool FindInPath(const std::string& name, const std::string& path_env, std::string* found,
                bool cwd_last) {
  if (name.empty()) return false;
  if (name.find('/') != std::string::npos) {
    if (!IsExecutableFile(name)) return false;
    *found = name;
    return true;
  }
  for (const std::string& dir : Split(path_env.empty() ? "/usr/local/bin:/usr/bin:/bin" : path_env, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (IsExecutableFile(candidate)) {
      *found = candidate;
      return true;
    }
  }
  // slurmstepd looks in the working directory after PATH: `srun train.sh` runs
  // ./train.sh, so `srun --elastic train.sh` must too.
  if (cwd_last && IsExecutableFile("./" + name)) {
    *found = "./" + name;
    return true;
  }
  return false;
}

bool BuildWorkerCommand(const LaunchConfig& config, const EnvMap& env, std::string* path,
                        std::vector<std::string>* argv, std::string* err) {
  std::string path_env = Get(env, "PATH");
  bool use_python = !config.spec.no_python &&
                    (config.spec.module || config.spec.run_path || EndsWith(config.spec.program, ".py"));
  argv->clear();
  if (use_python) {
    if (!FindInPath(config.spec.python, path_env, path)) {
      bool is_path = config.spec.python.find('/') != std::string::npos;
      *err = fmt::format("--python: '{}' is not an executable file{} (the interpreter must have torch)",
                         config.spec.python, is_path ? WhyNotExecutable(config.spec.python) : " in PATH");
      return false;
    }
    // A missing script is an error here, before the rendezvous (exit 2), not a
    // failure of every worker (exit 1 after the restarts are burnt).
    if (!config.spec.module && access(config.spec.program.c_str(), R_OK) != 0) {
      int saved = errno;
      char cwd[4096];
      *err = fmt::format("cannot run '{}': {} (in {})", config.spec.program, std::strerror(saved),
                         getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "the working directory");
      return false;
    }
    argv->push_back(config.spec.python);
    argv->push_back("-u");
    if (config.spec.module) argv->push_back("-m");
    argv->push_back(config.spec.program);
  } else {
    if (!FindInPath(config.spec.program, path_env, path, config.agent.spank_wrapped)) {
      *err = fmt::format("cannot execute '{}': not an executable file{}", config.spec.program,
                         config.spec.program.find('/') != std::string::npos ? WhyNotExecutable(config.spec.program)
                         : config.agent.spank_wrapped ? " in PATH or the working directory"
                                                : " in PATH");
      return false;
    }
    argv->push_back(config.spec.program);
  }
  argv->insert(argv->end(), config.spec.args.begin(), config.spec.args.end());
  return true;
}

}  // namespace elastic
