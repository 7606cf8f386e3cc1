#include "spank_plugin/options.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/module_list.h"
#include "common/node_range.h"
#include "common/parse.h"

namespace elastic::spank {
namespace {

// A Python module list (elasticrun --preload checks the same on each node;
// checking here refuses a typo before allocation).
bool CheckModuleList(const std::string& what, std::string_view text, std::string* err) {
  std::vector<std::string> modules;
  return ParseModuleList(what, text, &modules, err);
}

const char* OptionName(OptionId id) {
  for (const OptionSpec& spec : kOptionTable) {
    if (spec.id == id) return spec.name;
  }
  return "?";
}

bool ParsePort(std::string_view what, std::string_view text, int* port, std::string* err) {
  long long value = 0;
  if (!ParseIntNamed(what, text, 1, 65535, &value, err)) return false;
  *port = static_cast<int>(value);
  return true;
}

// A count option (--elastic-max-restarts, --elastic-node-multiple, --elastic-requeue
// and their plugstack.conf keys): an integer in [lo, hi].
bool ParseCount(std::string_view what, std::string_view text, long long lo, long long hi,
                std::optional<int>* out, std::string* err) {
  long long n = 0;
  if (!ParseIntNamed(what, text, lo, hi, &n, err)) return false;
  *out = static_cast<int>(n);
  return true;
}

bool NonEmptyValue(OptionId id, const char* value, std::string* err) {
  if (value != nullptr && value[0] != '\0') return true;
  *err = fmt::format("--{}: needs a value", OptionName(id));
  return false;
}

}  // namespace

std::vector<std::string> OptionEnvNames() {
  std::vector<std::string> names;
  for (const OptionSpec& spec : kOptionTable) {
    std::string name = "_SLURM_SPANK_OPTION_elastic_";
    for (const char* p = spec.name; *p != '\0'; ++p) {
      name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
    }
    names.push_back("SLURM_SPANK_" + name);
    names.push_back(std::move(name));
  }
  return names;
}

bool ApplyOption(OptionId id, const char* value, ElasticOptions* options, std::string* err) {
  std::string error;
  bool ok = false;
  switch (id) {
    case OptionId::kElastic: {
      // Bare --elastic given to sbatch/salloc reaches the job's sruns as the
      // variable SLURM_SPANK__SLURM_SPANK_OPTION_elastic_elastic; Slurm (22.05 at
      // least) writes a missing value there as the string "(null)".
      if (value == nullptr || value[0] == '\0' || std::string_view(value) == kSlurmNullValue) {
        options->mode = ElasticMode::kOn;
        options->nnodes.reset();
        return true;
      }
      std::string_view text = value;
      std::string lower(text);
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (lower == "off" || lower == "no" || lower == "0") {  // as documented, any case
        options->mode = ElasticMode::kOff;
        options->nnodes.reset();
        return true;
      }
      NodeRange range;
      ok = ParseNodeRange("--elastic", text, &range, &error);
      if (ok) {
        options->mode = ElasticMode::kOn;
        options->nnodes = std::make_pair(range.min, range.max);
      } else {
        error += " or 'off'";
      }
      break;
    }
    case OptionId::kNprocPerNode: {
      NprocSpec spec;
      ok = NonEmptyValue(id, value, &error) &&
           ParseNprocSpec("--elastic-nproc-per-node", value, &spec, &error);
      if (ok) options->nproc_per_node = spec;
      break;
    }
    case OptionId::kMaxRestarts:
      ok = NonEmptyValue(id, value, &error) &&
           ParseCount("--elastic-max-restarts", value, 0, 1000000, &options->max_restarts, &error);
      break;
    case OptionId::kRdzvPort: {
      int port = 0;
      ok = NonEmptyValue(id, value, &error) &&
           ParsePort("--elastic-rdzv-port", value, &port, &error);
      if (ok) options->rdzv_port = port;
      break;
    }
    case OptionId::kRdzvId: {
      ok = NonEmptyValue(id, value, &error);
      std::string_view text = ok ? value : "";
      if (ok && (text.size() > 128 || text.find_first_of(" \t\n,=") != std::string_view::npos)) {
        error = fmt::format(
            "--elastic-rdzv-id: '{}' is not an id (up to 128 characters, no spaces, ',' or '=')",
            text);
        ok = false;
      }
      if (ok) options->rdzv_id = std::string(text);
      break;
    }
    case OptionId::kRdzvEndpoint: {
      Endpoint endpoint;
      ok = NonEmptyValue(id, value, &error) &&
           ParseEndpoint("--elastic-rdzv-endpoint", value, &endpoint, &error);
      if (ok) options->endpoint = std::move(endpoint);
      break;
    }
    case OptionId::kRdzvConf: {
      std::vector<std::pair<std::string, std::string>> pairs;
      ok = NonEmptyValue(id, value, &error) &&
           ParseKeyValues("--elastic-rdzv-conf", value, &pairs, &error);
      if (ok) options->rdzv_conf = std::move(pairs);
      break;
    }
    case OptionId::kBind: {
      BindMode mode;
      ok = NonEmptyValue(id, value, &error) && ParseBindMode("--elastic-bind", value, &mode, &error);
      if (ok) options->bind = mode;
      break;
    }
    case OptionId::kLogDir:
      ok = NonEmptyValue(id, value, &error);
      if (ok) options->log_dir = value;
      break;
    case OptionId::kNoPython:
      ok = true;
      options->no_python = true;
      break;
    case OptionId::kPython:
      ok = NonEmptyValue(id, value, &error);
      if (ok) options->python = value;
      break;
    case OptionId::kEvents:
      ok = NonEmptyValue(id, value, &error);
      if (ok) options->events = value;
      break;
    case OptionId::kLogLinePrefixTemplate:
      // Expanded by each node's agent (launcher/log_prefix.h): any text is a template.
      ok = NonEmptyValue(id, value, &error);
      if (ok) options->log_line_prefix_template = value;
      break;
    case OptionId::kPreload:
      ok = NonEmptyValue(id, value, &error) && CheckModuleList("--elastic-preload", value, &error);
      if (ok) options->preload = value;
      break;
    case OptionId::kHealthCheck:
      ok = NonEmptyValue(id, value, &error);
      if (ok) options->health_check = value;
      break;
    case OptionId::kNodeMultiple:
      // Against MIN:MAX once the step's node count is known (ValidateStepLayout).
      ok = NonEmptyValue(id, value, &error) &&
           ParseCount("--elastic-node-multiple", value, 1, kMaxNodes, &options->node_multiple, &error);
      break;
    case OptionId::kJoin: {
      long long job = 0;
      // Slurm's job ids are 32-bit; 0 and the special values above are not jobs.
      ok = NonEmptyValue(id, value, &error) &&
           ParseIntNamed("--elastic-join", value, 1, 0xfffffff0LL, &job, &error);
      if (ok) options->join = static_cast<uint32_t>(job);
      break;
    }
    case OptionId::kGrow: {
      GrowOptions grow;
      ok = ParseGrowOptions("--elastic-grow", value ? value : "", &grow, &error);
      if (ok) options->grow = grow;
      break;
    }
    case OptionId::kRequeue:
      ok = NonEmptyValue(id, value, &error) &&
           ParseCount("--elastic-requeue", value, 0, 1000000, &options->requeue, &error);
      break;
  }
  if (!ok) {
    if (err) *err = error;
    return false;
  }
  if (id != OptionId::kElastic) {
    std::string name = std::string("--") + OptionName(id);
    if (std::find(options->given.begin(), options->given.end(), name) == options->given.end()) {
      options->given.push_back(name);
    }
  }
  return true;
}

bool ParsePluginArgs(const std::vector<std::string>& args, const std::string& default_launcher,
                     PluginConfig* config, std::string* err) {
  PluginConfig result;
  result.launcher = default_launcher;
  for (const std::string& arg : args) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      *err = fmt::format("plugstack.conf: argument '{}' is not key=value (keys: launcher, "
                         "agent_bundle, max_restarts, port, bind, python, preload, health_check, "
                         "node_multiple, requeue, token_key, default)", arg);
      return false;
    }
    std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
    std::string what = "plugstack.conf: " + key;
    if (key == "launcher") {
      if (value.empty() || value.front() != '/') {
        *err = fmt::format("{}: '{}' is not an absolute path", what, value);
        return false;
      }
      result.launcher = value;
    } else if (key == "agent_bundle") {
      // The self-contained elasticrun for container images (docs/containers.md).
      if (value.empty() || value.front() != '/') {
        *err = fmt::format("{}: '{}' is not an absolute path", what, value);
        return false;
      }
      result.agent_bundle = value;
    } else if (key == "token_key") {
      // The per-step token's key (step_token.h): read by slurmstepd as root, where
      // its owner, mode and size are checked (srun may not even see the file).
      if (value.empty() || value.front() != '/') {
        *err = fmt::format("{}: '{}' is not an absolute path", what, value);
        return false;
      }
      result.token_key = value;
    } else if (key == "max_restarts") {
      if (!ParseCount(what, value, 0, 1000000, &result.max_restarts, err)) return false;
    } else if (key == "port") {
      size_t dash = value.find('-');
      long long lo = 0, hi = 0;
      if (dash == std::string::npos) {
        if (!ParseIntNamed(what, value, 1, 65535, &lo, err)) return false;
        result.fixed_port = static_cast<int>(lo);
      } else if (!ParseInt(value.substr(0, dash), 1, 65535, &lo) ||
                 !ParseInt(value.substr(dash + 1), 1, 65535, &hi) || lo > hi) {
        *err = fmt::format("{}: '{}' is not PORT or LO-HI (1..65535, LO <= HI)", what, value);
        return false;
      } else {
        result.port_lo = static_cast<int>(lo);
        result.port_hi = static_cast<int>(hi);
      }
    } else if (key == "bind") {
      BindMode mode;
      if (!ParseBindMode(what, value, &mode, err)) return false;
      result.bind = mode;
    } else if (key == "python") {
      if (value.empty()) {
        *err = what + ": needs a value";
        return false;
      }
      result.python = value;
    } else if (key == "preload") {
      if (!CheckModuleList(what, value, err)) return false;
      result.preload = value;
    } else if (key == "health_check") {
      if (value.empty()) {
        *err = what + ": needs a value";
        return false;
      }
      result.health_check = value;
    } else if (key == "node_multiple") {
      if (!ParseCount(what, value, 1, kMaxNodes, &result.node_multiple, err)) return false;
    } else if (key == "requeue") {
      if (!ParseCount(what, value, 0, 1000000, &result.requeue, err)) return false;
    } else if (key == "default") {
      if (value != "on" && value != "off") {
        *err = fmt::format("{}: '{}' is not on or off", what, value);
        return false;
      }
      result.default_on = value == "on";
    } else {
      *err = fmt::format("plugstack.conf: unknown argument '{}' (keys: launcher, agent_bundle, "
                         "max_restarts, port, bind, python, preload, health_check, node_multiple, requeue, default)", key);
      return false;
    }
  }
  *config = std::move(result);
  return true;
}

bool ElasticActive(const ElasticOptions& options, const PluginConfig& config) {
  if (options.mode == ElasticMode::kUnset) return options.join.has_value() || config.default_on;
  return options.mode == ElasticMode::kOn;
}

bool ValidateCombination(const ElasticOptions& options, const PluginConfig& config,
                         std::string* err) {
  // --elastic=off says it: a setup step of a job whose sbatch line carries
  // --elastic=MIN:MAX --elastic-max-restarts=N inherits both and opts out.
  if (options.join) {
    // The target's rendezvous (host, port, id) is found through Slurm: one typed
    // by hand would contradict it.
    if (options.mode == ElasticMode::kOff) {
      *err = fmt::format("--elastic-join={} with --elastic=off: a joining step runs elastic; drop "
                         "one of them", *options.join);
      return false;
    }
    for (const char* manual : {"--elastic-rdzv-endpoint", "--elastic-rdzv-id", "--elastic-rdzv-port"}) {
      if (std::find(options.given.begin(), options.given.end(), manual) != options.given.end()) {
        *err = fmt::format("--elastic-join={} with {}: the join finds job {}'s rendezvous through "
                           "Slurm; drop {}", *options.join, manual, *options.join, manual);
        return false;
      }
    }
    if (options.grow) {
      *err = fmt::format("--elastic-join={} with --elastic-grow: the helper jobs are the joined job's "
                         "(job {}'s own step grows); drop --elastic-grow", *options.join, *options.join);
      return false;
    }
  }
  if (options.mode == ElasticMode::kUnset && !options.join && !config.default_on &&
      !options.given.empty()) {
    *err = fmt::format("{} needs --elastic (add --elastic or --elastic=MIN:MAX)", options.given[0]);
    return false;
  }
  if (options.rdzv_port && options.endpoint && options.endpoint->port &&
      *options.rdzv_port != *options.endpoint->port) {
    *err = fmt::format("--elastic-rdzv-port={} and the port of --elastic-rdzv-endpoint ({}) differ",
                       *options.rdzv_port, *options.endpoint->port);
    return false;
  }
  return true;
}

}  // namespace elastic::spank
