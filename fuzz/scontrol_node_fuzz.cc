// `scontrol --oneliner show node NAME`'s answer, read by the agent before a round
// (launcher/slurm_node_state.h). Whatever the text: a parsed node has a name and a
// state; its verdict is one of the three or none; the line it makes is one line.
#include <cstdlib>
#include <string>
#include <string_view>

#include "launcher/slurm_node_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  elastic::SlurmNodeState node;
  std::string err;
  if (!elastic::ParseScontrolNode(text, &node, &err)) {
    if (err.empty()) std::abort();
    return 0;
  }
  if (node.name.empty() || node.state.empty()) std::abort();
  std::string verdict = elastic::NodeVerdict(node.state);
  if (!verdict.empty() && verdict != "DRAIN" && verdict != "DOWN" && verdict != "FAIL") std::abort();
  std::string line = elastic::StandByReason(node);
  if (line.empty() != verdict.empty() || line.find('\n') != std::string::npos ||
      line.find('\x1b') != std::string::npos)
    std::abort();
  return 0;
}
