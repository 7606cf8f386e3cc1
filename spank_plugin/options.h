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
#include "common/rdzv_port.h"

namespace elastic::spank {

enum class OptionId {
  kElastic,
  kNprocPerNode,
  kMaxRestarts,
  kRdzvPort,
  kRdzvId,
  kRdzvEndpoint,
  kRdzvConf,
  kBind,
  kLogDir,
  kNoPython,
  kPython,
  kPreload,
  kHealthCheck,
  kNodeMultiple,
  kRequeue,
  kEvents,
  kLogLinePrefixTemplate,
  kJoin,
  kGrow,
};

// One row of the option table; has_arg as in struct spank_option (0 none,
// 1 required, 2 optional).
struct OptionSpec {
  const char* name;
  const char* arginfo;
  const char* usage;
  int has_arg;
  OptionId id;
};

inline constexpr std::array<OptionSpec, 19> kOptionTable = {{
    {"elastic", "MIN:MAX|N|off",
     "[elastic] Run the step's command under elasticrun, one agent per node: MIN:MAX or N nodes "
     "(no value: exactly the step's nodes; off: disable a site or job default)",
     2, OptionId::kElastic},
    {"elastic-nproc-per-node", "N|gpu|cpu|auto",
     "[elastic] Workers per node (default: the step's GPUs on the node, else 1)", 1,
     OptionId::kNprocPerNode},
    {"elastic-max-restarts", "N",
     "[elastic] Restarts of the worker group after a failure or a lost node (default: the "
     "site's, else the step's node count minus MIN)", 1,
     OptionId::kMaxRestarts},
    {"elastic-rdzv-port", "PORT",
     "[elastic] Rendezvous port (default: the step's reserved port with --resv-ports, else derived "
     "from the job id)",
     1, OptionId::kRdzvPort},
    {"elastic-rdzv-id", "ID", "[elastic] Rendezvous id (default: JOBID.STEPID)", 1,
     OptionId::kRdzvId},
    {"elastic-rdzv-endpoint", "HOST[:PORT]",
     "[elastic] Rendezvous host (default: the step's first node)", 1, OptionId::kRdzvEndpoint},
    {"elastic-rdzv-conf", "K=V,...", "[elastic] Extra rendezvous settings (elasticrun --rdzv-conf)",
     1, OptionId::kRdzvConf},
    {"elastic-bind", "MODE", "[elastic] Worker CPU/memory binding: auto|gpu|gpu-exclusive|numa|none",
     1, OptionId::kBind},
    {"elastic-log-dir", "DIR", "[elastic] Worker logs under DIR/NODE/RUN/attempt_N/LOCAL_RANK (also on the console)", 1,
     OptionId::kLogDir},
    {"elastic-no-python", nullptr, "[elastic] Run the command as given, even a .py file", 0,
     OptionId::kNoPython},
    {"elastic-python", "PATH", "[elastic] Python interpreter for a .py command (must have torch)",
     1, OptionId::kPython},
    {"elastic-preload", "MODULES",
     "[elastic] Python modules (e.g. torch) imported once per node: every worker is forked from "
     "that interpreter (elasticrun --preload)",
     1, OptionId::kPreload},
    {"elastic-health-check", "PROG",
     "[elastic] Run PROG on each node before it joins a round; a failing node stays out "
     "(elasticrun --health-check)",
     1, OptionId::kHealthCheck},
    {"elastic-node-multiple", "K",
     "[elastic] Rounds form only with a multiple of K nodes; the other nodes stand by as spares "
     "(elasticrun --node-multiple)",
     1, OptionId::kNodeMultiple},
    {"elastic-requeue", "N",
     "[elastic] In a batch job: when too few nodes are left to go on, ask Slurm to requeue the "
     "job, at most N times (elasticrun --requeue; default 0, or the site's)",
     1, OptionId::kRequeue},
    {"elastic-events", "PATH",
     "[elastic] Append the job's event record (JSON lines: rounds, failures, the end) to PATH "
     "(elasticrun --events)",
     1, OptionId::kEvents},
    {"elastic-log-line-prefix-template", "TEMPLATE",
     "[elastic] Prefix of each worker's console lines instead of [rankN]: with ${role_name}, "
     "${rank}, ${local_rank} and ${hostname} replaced (elasticrun --log-line-prefix-template)",
     1, OptionId::kLogLinePrefixTemplate},
    {"elastic-join", "JOBID",
     "[elastic] Join the running elastic step of job JOBID (yours): this step's nodes train in "
     "its run, as guests, up to its MAX (its rendezvous is found through Slurm)",
     1, OptionId::kJoin},
    {"elastic-grow", "OPTIONS",
     "[elastic] While the world is below MAX, keep one-node helper jobs queued that join this step "
     "(--elastic-join); cancelled when the step ends. OPTIONS: partition=P,qos=Q,account=A,time=T,"
     "nice=N,interval=SECONDS",
     2, OptionId::kGrow},
}};

// --elastic's value.
enum class ElasticMode { kUnset, kOn, kOff };

// The user's options. Every field is "set or not", so an option callback that
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

// Validates `value` (nullptr: no value) for option `id` and stores it. The
// error names the option, the value and what is allowed.
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
