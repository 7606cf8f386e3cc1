// The plugin's settings: the user's --elastic* options (one declarative table)
// and the admin's plugstack.conf arguments. Precedence: flags (and Slurm's
// SLURM_SPANK__SLURM_SPANK_OPTION_elastic_* environment form of them, which
// Slurm turns into the same option callbacks) > plugstack.conf defaults.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/bind_mode.h"
#include "common/endpoint.h"
#include "common/grow_options.h"
#include "common/nproc_spec.h"
#include "common/option_table.h"
#include "common/rdzv_port.h"

namespace elastic::spank {

// An option of srun/sbatch/salloc: a row of the one option table
// (common/option_table.h) with srun columns. Slurm's struct spank_option array
// is built from those rows (plugin.cc), and each value is checked with the
// check elasticrun makes for that option (CheckOptionValue).
using OptionId = Opt;

// What plugin.cc registers with Slurm, one per srun row, in SrunRows()' order:
// struct spank_option's fields but the callback (val: the row's index).
struct SpankOptionFields {
  const char* name;
  const char* arginfo;
  const char* usage;
  int has_arg;
  int val;
};
std::array<SpankOptionFields, kSrunOptionCount> SpankOptionArray();

// --elastic's value.
enum class ElasticMode { kUnset, kOn, kOff };

// The user's options, the texts checked and parsed once. Every field is "set or not", so an option callback that
// runs twice with the same value leaves the same state (idempotent).
struct ElasticOptions {
  ElasticMode mode = ElasticMode::kUnset;
  std::optional<std::pair<int, int>> nnodes;   // MIN:MAX; unset: the step's node count
  std::optional<NprocSpec> nproc_per_node;
  std::optional<int> max_restarts;
  std::optional<int> rdzv_port;
  std::optional<std::string> rdzv_id;
  std::optional<Endpoint> endpoint;            // --elastic-rdzv-endpoint
  std::vector<std::pair<std::string, std::string>> rdzv_conf;
  std::optional<BindMode> bind;
  std::optional<std::string> log_dir;
  bool no_python = false;
  std::optional<std::string> python;
  std::optional<std::string> preload;          // MODULE[,MODULE...]
  std::optional<std::string> health_check;
  std::optional<int> node_multiple;            // --elastic-node-multiple K
  std::optional<int> requeue;                  // --elastic-requeue=N
  std::optional<std::string> events;           // --elastic-events=PATH
  std::optional<std::string> log_line_prefix_template;  // --elastic-log-line-prefix-template
  // --elastic-join=JOBID: the step is elastic (unless --elastic=off, refused) and
  // joins that job's run; srun finds its rendezvous (join.cc).
  std::optional<uint32_t> join;
  // --elastic-grow[=OPTIONS]: the step keeps helper jobs queued (PET_GROW).
  std::optional<GrowOptions> grow;
  // Names of the options other than --elastic that were given (for "needs --elastic").
  std::vector<std::string> given;
};

// What Slurm's spank_set_job_env writes for an option given without a value
// (sbatch/salloc --elastic): the job's sruns read it back from the environment.
inline constexpr const char* kSlurmNullValue = "(null)";

// The environment variables through which Slurm hands the options on: srun and
// sbatch/salloc export `_SLURM_SPANK_OPTION_elastic_<option>` and (the job's
// copy, which every srun inside the job reads back as if typed)
// `SLURM_SPANK__SLURM_SPANK_OPTION_elastic_<option>`, the option's name with
// every non-alphanumeric character as '_' (Slurm's plugstack.c, _opt_env_name).
std::vector<std::string> OptionEnvNames();

// Validates `value` (nullptr: no value) for the srun option `id` and stores it:
// the table's check (elasticrun's parser for that option, naming it as the user
// typed it, --elastic-bind) and the plugin's own rules (--elastic, --elastic-join,
// --elastic-rdzv-port, an id the plugin can pass on). The error names the option,
// the value and what is allowed.
bool ApplyOption(OptionId id, const char* value, ElasticOptions* options, std::string* err);

// The admin's plugstack.conf arguments.
struct PluginConfig {
  std::string launcher;                 // launcher=PATH (absolute)
  std::string agent_bundle;             // agent_bundle=DIR (absolute; "" = run `launcher`)
  std::optional<int> max_restarts;      // max_restarts=N
  std::optional<int> fixed_port;        // port=N
  int port_lo = kDerivedRdzvPortLo;     // port=LO-HI: derived ports (outside Linux's
  int port_hi = kDerivedRdzvPortHi;     // default ephemeral range 32768-60999)
  std::optional<BindMode> bind;         // bind=MODE
  std::optional<std::string> python;    // python=PATH
  std::optional<std::string> preload;   // preload=MODULES
  std::optional<std::string> health_check;  // health_check=PROG
  std::optional<int> node_multiple;     // node_multiple=K
  std::optional<int> requeue;               // requeue=N
  bool default_on = false;              // default=on|off
  // token_key=PATH (absolute): root's key for the per-step token (step_token.h);
  // its file is checked where it is read, in slurmstepd as root.
  std::string token_key;
};

// Parses plugstack.conf's "key=value" words; unknown keys and bad values are
// errors naming them. `default_launcher` is the installed elasticrun.
bool ParsePluginArgs(const std::vector<std::string>& args, const std::string& default_launcher,
                     PluginConfig* config, std::string* err);

// Whether the user asked for an elastic step (--elastic other than off, or
// --elastic-join), whatever plugstack.conf says.
inline bool AsksElastic(const ElasticOptions& options) {
  return options.mode == ElasticMode::kOn || (options.join && options.mode != ElasticMode::kOff);
}

// Whether this step runs under elasticrun.
bool ElasticActive(const ElasticOptions& options, const PluginConfig& config);

// Checks that apply to the options as a whole (e.g. --elastic-* without
// --elastic). Run in srun and sbatch/salloc.
bool ValidateCombination(const ElasticOptions& options, const PluginConfig& config,
                         std::string* err);

}  // namespace elastic::spank
