// sbatch/salloc (S_CTX_ALLOCATOR): check the options before the job is
// submitted; sbatch exports them to the job, where every srun inherits them.
#include "spank_plugin/plugin.h"

namespace elastic::spank {

int AllocatorInitPostOpt(SpankApi& api, PluginState& state) {
  std::string err;
  if (!ValidateCombination(state.options, state.config, &err)) {
    api.Error(err);
    return -1;
  }
  return 0;
}

}  // namespace elastic::spank
