// spank_elastic.so's C ABI: the plugin identity, the option table handed to
// Slurm, and one catch-all shell per callback. Nothing else is exported
// (spank_elastic.map), and no exception ever crosses into Slurm.
#include <array>
#include <exception>

#include "elastic_version.h"
#include "spank_plugin/plugin.h"
#include "spank_plugin/spank_api_slurm.h"

// The target builds with hidden visibility; only what follows is exported
// (and spank_elastic.map limits the export list to it).
#pragma GCC visibility push(default)
extern "C" {
// SPANK_PLUGIN() would give these internal linkage in C++ (docs/design.md).
extern const char plugin_name[] = "elastic";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
#if ELASTIC_SLURM_HAS_INIT_FAILURE_MODE
// A failing callback is the user's mistake (a bad --elastic value, a missing
// launcher): fail the job, never drain the node.
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif
}

namespace {

using elastic::kSrunOptionCount;
using elastic::SrunRows;

int Guard(const char* where, auto&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    slurm_error("elastic: internal error in %s: %s", where, e.what());
  } catch (...) {
    slurm_error("elastic: internal error in %s", where);
  }
  return -1;
}

int OnOption(int val, const char* optarg, int remote) {
  return Guard("option callback", [&] {
    if (val < 0 || static_cast<size_t>(val) >= kSrunOptionCount) return -1;
    int rc = elastic::spank::OptionCallback(SrunRows()[val]->id, optarg, remote != 0);
    if (rc != 0) slurm_error("elastic: %s", elastic::spank::State().option_error.c_str());
    return rc;
  });
}

// Slurm's option array: the option table's srun rows (SpankOptionArray, unit-
// tested) with the callback. struct spank_option wants char* (Slurm only reads
// them). Static: Slurm may keep the pointer it is given.
spank_option* Option(size_t i) {
  static std::array<spank_option, kSrunOptionCount> options = [] {
    std::array<spank_option, kSrunOptionCount> out{};
    auto fields = elastic::spank::SpankOptionArray();
    for (size_t k = 0; k < kSrunOptionCount; ++k) {
      const auto& f = fields[k];
      out[k] = spank_option{const_cast<char*>(f.name), const_cast<char*>(f.arginfo),
                            const_cast<char*>(f.usage), f.has_arg, f.val, OnOption};
    }
    return out;
  }();
  return &options[i];
}

}  // namespace

extern "C" {

int slurm_spank_init(spank_t sp, int ac, char** av) {
  return Guard("init", [&] {
    elastic::spank::SlurmSpankApi api(sp);
    std::vector<std::string> args;
    for (int i = 0; i < ac && av != nullptr && av[i] != nullptr; ++i) args.emplace_back(av[i]);
    int rc = elastic::spank::Init(api, args);
    auto context = elastic::spank::State().context;
    // One load line: slurmstepd's here (slurmd's log at verbose level); srun's
    // in local_user_init, the first hook that runs after `-v` took effect.
    if (context == elastic::spank::Context::kRemote) slurm_verbose("elastic: %s", ELASTIC_VERSION_LINE);
    if (context == elastic::spank::Context::kLocal ||
        context == elastic::spank::Context::kAllocator ||
        context == elastic::spank::Context::kRemote) {
      for (size_t i = 0; i < kSrunOptionCount; ++i) {
        if (spank_option_register(sp, Option(i)) != ESPANK_SUCCESS) {
          slurm_error("elastic: cannot register option --%s", SrunRows()[i]->srun.name);
          if (context != elastic::spank::Context::kRemote) return -1;
        }
      }
    }
    return rc;
  });
}

int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  return Guard("init_post_opt", [&] {
    elastic::spank::SlurmSpankApi api(sp);
    if (elastic::spank::State().context == elastic::spank::Context::kRemote) {
      elastic::spank::SlurmNodeDirectory nodes;
      return elastic::spank::RemoteInitPostOpt(api, nodes);
    }
    elastic::spank::SlurmNodeDirectory nodes;
    return elastic::spank::InitPostOpt(api, nodes);
  });
}

int slurm_spank_local_user_init(spank_t sp, int, char**) {
  return Guard("local_user_init", [&] {
    slurm_verbose("elastic: %s", ELASTIC_VERSION_LINE);  // shown by `srun -v`
    elastic::spank::SlurmSpankApi api(sp);
    return elastic::spank::LocalUserInit(api);
  });
}

int slurm_spank_exit(spank_t sp, int, char**) {
  return Guard("exit", [&] {
    elastic::spank::SlurmSpankApi api(sp);
    return elastic::spank::SrunExit(api);
  });
}

int slurm_spank_task_init_privileged(spank_t sp, int, char**) {
  return Guard("task_init_privileged", [&] {
    elastic::spank::SlurmSpankApi api(sp);
    return elastic::spank::TaskInitPrivileged(api);
  });
}

int slurm_spank_task_init(spank_t sp, int, char**) {
  return Guard("task_init", [&] {
    elastic::spank::SlurmSpankApi api(sp);
    elastic::spank::SlurmNodeDirectory nodes;
    return elastic::spank::TaskInit(api, nodes);
  });
}

}  // extern "C"
#pragma GCC visibility pop
