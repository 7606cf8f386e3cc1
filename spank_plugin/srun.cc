// srun (S_CTX_LOCAL): every check that can fail before the step starts, with a
// message that names the option, the value and what is allowed.
#include <fmt/format.h>

#include "spank_plugin/plugin.h"

namespace elastic::spank {

bool CmdlineHasMultiProg(const std::vector<std::string>& cmdline, const std::string& argv0) {
  static const std::string kOption = "--multi-prog";
  for (size_t i = 1; i < cmdline.size(); ++i) {
    const std::string& word = cmdline[i];
    if (!argv0.empty() && word == argv0) break;  // the step's command starts here
    if (word == "--") break;
    // getopt_long accepts unambiguous prefixes ("--multi").
    if (word.size() >= 4 && word.starts_with("--mu") && kOption.starts_with(word)) return true;
  }
  return false;
}

int SrunInitPostOpt(SpankApi& api, PluginState& state) {
  std::string err;
  if (!ValidateCombination(state.options, state.config, &err)) {
    api.Error(err);
    return -1;
  }
  return 0;
}

int SrunLocalUserInit(SpankApi& api, PluginState& state) {
  if (!ElasticActive(state.options, state.config)) return 0;
  std::vector<std::string> argv;
  api.GetArgv(&argv);
  if (CmdlineHasMultiProg(api.ProcessCmdline(), argv.empty() ? "" : argv[0])) {
    api.Error("--elastic cannot run a --multi-prog step (elasticrun starts one program on every "
              "node): drop --multi-prog or add --elastic=off");
    return -1;
  }
  uint32_t nnodes = 0, ntasks = 0;
  if (api.GetItem(Item::kNnodes, &nnodes) && api.GetItem(Item::kTotalTaskCount, &ntasks) &&
      nnodes > 0 && ntasks != nnodes) {
    api.Error(fmt::format(
        "--elastic needs exactly one task per node (elasticrun starts the workers), but this step "
        "has {} tasks on {} nodes: add --ntasks-per-node=1",
        ntasks, nnodes));
    return -1;
  }
  const auto& range = state.options.nnodes;
  if (range && nnodes > static_cast<uint32_t>(range->second)) {
    api.Error(fmt::format("the step has {} nodes but --elastic={}:{} allows at most {}: use -N {}-{}",
                          nnodes, range->first, range->second, range->second, range->first,
                          range->second));
    return -1;
  }
  return 0;
}

}  // namespace elastic::spank
