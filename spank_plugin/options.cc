#include "spank_plugin/options.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/module_list.h"
#include "common/node_range.h"
#include "common/option_table.h"
#include "common/parse.h"

namespace elastic::spank {
namespace {

// A Python module list (elasticrun --preload checks the same on each node;
// checking here refuses a typo before allocation).
bool CheckModuleList(const std::string& what, std::string_view text, std::string* err) {
  std::vector<std::string> modules;
  return ParseModuleList(what, text, &modules, err);
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

// --elastic[=MIN:MAX|N|off].
bool ApplyElastic(const char* value, ElasticOptions* options, std::string* err) {
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
  if (!ParseNodeRange("--elastic", text, &range, err)) {
    *err += " or 'off'";
    return false;
  }
  options->mode = ElasticMode::kOn;
  options->nnodes = std::make_pair(range.min, range.max);
  return true;
}

// Stores the text of an option other than --elastic, already checked against
// the table (CheckOptionValue): the typed form task_env.cc passes on.
bool StoreValue(OptionId id, const std::string& what, std::string_view text,
                ElasticOptions* options, std::string* err) {
  long long n = 0;
  switch (id) {
    case OptionId::kNprocPerNode: {
      NprocSpec spec;
      if (!ParseNprocSpec(what, text, &spec, err)) return false;
      options->nproc_per_node = spec;
      return true;
    }
    case OptionId::kMaxRestarts:
      return ParseCount(what, text, 0, 1000000, &options->max_restarts, err);
    case OptionId::kRequeue:
      return ParseCount(what, text, 0, 1000000, &options->requeue, err);
    case OptionId::kNodeMultiple:
      // Against MIN:MAX once the step's node count is known (ValidateStepLayout).
      return ParseCount(what, text, 1, kMaxNodes, &options->node_multiple, err);
    case OptionId::kRdzvPort: {
      int port = 0;
      if (!ParsePort(what, text, &port, err)) return false;
      options->rdzv_port = port;
      return true;
    }
    case OptionId::kRdzvId:
      // Stricter than elasticrun's check: the plugin writes the id into
      // key=value,... lists.
      if (text.size() > 128 || text.find_first_of(" \t\n,=") != std::string_view::npos) {
        *err = fmt::format("{}: '{}' is not an id (up to 128 characters, no spaces, ',' or '=')",
                           what, text);
        return false;
      }
      options->rdzv_id = std::string(text);
      return true;
    case OptionId::kRdzvEndpoint: {
      // A port of 0 (elasticrun's "a free port", one node only) is refused here:
      // a step's nodes must meet at one port.
      Endpoint endpoint;
      if (!ParseEndpoint(what, text, &endpoint, err)) return false;
      options->endpoint = std::move(endpoint);
      return true;
    }
    case OptionId::kRdzvConf: {
      std::vector<std::pair<std::string, std::string>> pairs;
      if (!ParseKeyValues(what, text, &pairs, err)) return false;
      options->rdzv_conf = std::move(pairs);
      return true;
    }
    case OptionId::kBind: {
      BindMode mode;
      if (!ParseBindMode(what, text, &mode, err)) return false;
      options->bind = mode;
      return true;
    }
    case OptionId::kJoin:
      // Slurm's job ids are 32-bit; 0 and the special values above are not jobs.
      if (!ParseIntNamed(what, text, 1, 0xfffffff0LL, &n, err)) return false;
      options->join = static_cast<uint32_t>(n);
      return true;
    case OptionId::kNoPython:
      options->no_python = true;
      return true;
    case OptionId::kLogDir:
      options->log_dir = std::string(text);
      return true;
    case OptionId::kPython:
      options->python = std::string(text);
      return true;
    case OptionId::kPreload:
      options->preload = std::string(text);
      return true;
    case OptionId::kHealthCheck:
      options->health_check = std::string(text);
      return true;
    case OptionId::kEvents:
      options->events = std::string(text);
      return true;
    case OptionId::kLogLinePrefixTemplate:
      // Expanded by each node's agent (launcher/log_prefix.h): any text is a template.
      options->log_line_prefix_template = std::string(text);
      return true;
    case OptionId::kGrow: {
      GrowOptions grow;  // "": the defaults (a bare --elastic-grow)
      if (!ParseGrowOptions(what, text, &grow, err)) return false;
      options->grow = grow;
      return true;
    }
    default:
      *err = fmt::format("{}: not an srun option", what);
      return false;
  }
}

}  // namespace

std::array<SpankOptionFields, kSrunOptionCount> SpankOptionArray() {
  std::array<SpankOptionFields, kSrunOptionCount> out{};
  for (size_t k = 0; k < kSrunOptionCount; ++k) {
    const SrunColumns& srun = SrunRows()[k]->srun;
    out[k] = SpankOptionFields{srun.name, srun.arginfo, srun.usage, srun.has_arg, static_cast<int>(k)};
  }
  return out;
}

std::vector<std::string> OptionEnvNames() {
  std::vector<std::string> names;
  for (const OptionRow* row : SrunRows()) {
    std::string name = "_SLURM_SPANK_OPTION_elastic_";
    for (const char* p = row->srun.name; *p != '\0'; ++p) {
      name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
    }
    names.push_back("SLURM_SPANK_" + name);
    names.push_back(std::move(name));
  }
  return names;
}

bool ApplyOption(OptionId id, const char* value, ElasticOptions* options, std::string* err) {
  const OptionRow& row = RowOf(id);
  std::string what = fmt::format("--{}", row.srun.name ? row.srun.name : "?");
  std::string error;
  bool ok = false;
  if (id == OptionId::kElastic) {
    ok = ApplyElastic(value, options, &error);
  } else if (row.srun.has_arg == 0) {
    ok = StoreValue(id, what, "", options, &error);
  } else if (row.srun.has_arg == 2 &&
             (value == nullptr || value[0] == '\0' || std::string_view(value) == kSlurmNullValue)) {
    // An optional value not given (sbatch/salloc's variable form writes it "(null)").
    ok = CheckOptionValue(id, what, "", &error) && StoreValue(id, what, "", options, &error);
  } else if (value == nullptr || value[0] == '\0') {
    error = what + ": needs a value";
  } else {
    // The table's check first: elasticrun's parser, so elasticrun's verdict and message.
    ok = CheckOptionValue(id, what, value, &error) && StoreValue(id, what, value, options, &error);
  }
  if (!ok) {
    if (err) *err = error;
    return false;
  }
  if (id != OptionId::kElastic &&
      std::find(options->given.begin(), options->given.end(), what) == options->given.end()) {
    options->given.push_back(what);
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
