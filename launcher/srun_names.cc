#include "launcher/srun_names.h"

#include <cctype>
#include <string_view>

namespace elastic {
namespace {

// elasticrun flag -> what the srun user types (spank_plugin/options.h names the
// srun options; the plugin hands each over as the flag's PET_* variable).
struct Rename {
  std::string_view flag;
  std::string_view srun;
};
constexpr Rename kRenames[] = {
    {"--nnodes", "--elastic=MIN:MAX"},
    {"--nproc-per-node", "--elastic-nproc-per-node"},
    {"--max-restarts", "--elastic-max-restarts"},
    {"--rdzv-id", "--elastic-rdzv-id"},
    {"--rdzv-endpoint", "--elastic-rdzv-endpoint"},
    {"--rdzv-conf", "--elastic-rdzv-conf"},
    {"--bind", "--elastic-bind"},
    {"--log-dir", "--elastic-log-dir"},
    {"--no-python", "--elastic-no-python"},
    {"--python", "--elastic-python"},
    {"--preload", "--elastic-preload"},
    {"--health-check", "--elastic-health-check"},
    {"--node-multiple", "--elastic-node-multiple"},
    {"--requeue", "--elastic-requeue"},
    {"--events", "--elastic-events"},
    {"--log-line-prefix-template", "--elastic-log-line-prefix-template"},
};

bool FlagChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

}  // namespace

std::string SrunOptionNames(const std::string& message) {
  std::string out;
  out.reserve(message.size() + 32);
  size_t i = 0;
  while (i < message.size()) {
    bool replaced = false;
    if (message.compare(i, 2, "--") == 0 && (i == 0 || !FlagChar(message[i - 1]))) {
      for (const Rename& r : kRenames) {
        size_t end = i + r.flag.size();
        if (message.compare(i, r.flag.size(), r.flag) == 0 &&
            (end == message.size() || !FlagChar(message[end]))) {
          out += r.srun;
          i = end;
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out += message[i++];
  }
  return out;
}

}  // namespace elastic
