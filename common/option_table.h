// The one option table of elasticrun and the SPANK plugin (issue 21): one row
// per option with elasticrun's columns (long names, PET_ variable, default,
// --help) and the plugin's (the srun/sbatch/salloc name --elastic-NAME, its
// arginfo and usage for Slurm's --help). An option is added here, once:
// elasticrun reads argv and PET_* against the rows (launcher/launch_options.cc),
// the plugin registers the srun rows with Slurm and checks each value with the
// check elasticrun's parser makes (CheckOptionValue), then hands the text on
// as PET_* (spank_plugin/task_env.cc). What a value means and the worker count
// are elasticrun's.
//
// Pure data and pure checks (no I/O, no exceptions): part of elastic_parse, so
// also compiled into spank_elastic.so.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace elastic {

// Every option, by name in the code: a misspelt one does not compile (values are
// looked up by this index, not by a string). The table's rows are in this order.
enum class Opt : size_t {
  kElastic,  // plugin-only: --elastic[=MIN:MAX|N|off]
  kStandalone, kNnodes, kNprocPerNode, kNodeRank, kMaxRestarts, kMonitorInterval,
  kRdzvBackend, kRdzvEndpoint, kRdzvId, kRdzvConf, kLocalAddr, kRole, kRedirects, kTee,
  kLogDir, kLocalRanksFilter, kNoPython, kModule, kRunPath, kSignalsToHandle,
  kShutdownTimeout, kUninterruptibleTimeout, kVirtualLocalRank, kPython, kPreload, kBind, kMembind, kTopology, kCpusAllowed,
  kGpuVendor, kVerbose, kCrashLoopCount, kCrashLoopWindow, kProgressFile, kNoProgressRestarts, kHealthCheck, kHealthCheckTimeout,
  kNodeMultiple,
  kRequeue, kSlurmCommentInterval, kGrow,
  kNativeStacks, kNativeStacksTimeout,
  kConsoleDrainTimeout,
  kEvents,
  kMasterAddr, kMasterPort, kStartMethod, kLogLinePrefixTemplate,
  kEventLogHandler, kDuplicateStdoutFilters, kDuplicateStderrFilters, kLogsSpecs, kNumaBinding,
  kRdzvPort,  // plugin-only: --elastic-rdzv-port
  kJoin,      // plugin-only: --elastic-join=JOBID
  kCount
};

// The plugin's columns: how srun, sbatch and salloc offer the option.
struct SrunColumns {
  const char* name = nullptr;     // "elastic-bind" (srun --elastic-bind); nullptr: not offered
  const char* arginfo = nullptr;  // struct spank_option's arginfo; nullptr for a flag
  const char* usage = nullptr;    // Slurm's --help line, "[elastic] ..."
  int has_arg = 0;                // as in struct spank_option: 0 none, 1 required, 2 optional
};

struct OptionRow {
  Opt id;             // its row: OptionTable()[id]
  const char* names;  // elasticrun's CLI11 names: "-r,--redirects"; "" in a plugin-only row
  const char* dest;   // torchrun's dest; PET_<DEST upper-cased> is its variable; "" plugin-only
  const char* def;    // elasticrun's default as text ("" = none)
  bool flag;          // elasticrun: takes no value
  const char* help;   // elasticrun --help (the plugin-only rows: what the option does)
  SrunColumns srun;   // {}: not an srun option

  bool PluginOnly() const { return names[0] == '\0'; }
  bool IsSrun() const { return srun.name != nullptr; }
};

// Every row, in Opt's order.
std::span<const OptionRow> OptionTable();
const OptionRow& RowOf(Opt id);

// The srun rows, in the table's order: what the plugin registers with Slurm
// (struct spank_option's val is the index here).
inline constexpr size_t kSrunOptionCount = 19;
std::span<const OptionRow* const, kSrunOptionCount> SrunRows();

// elasticrun's long name without dashes ("nproc-per-node"): the first "--" name of
// `names`; "" for a plugin-only row.
std::string LongName(const OptionRow& row);
// "PET_NPROC_PER_NODE"; "" for a plugin-only row.
std::string PetName(const OptionRow& row);

// The value check of an srun row: the parser elasticrun applies to that option's
// text (the same function, so the same verdict and message), with `what` naming
// the option as the user typed it ("--elastic-bind"). Rows whose value is any
// text (a path, a command, a template) accept anything; an srun option's empty
// value is refused by the plugin before this. Plugin-only rows and --elastic are
// the plugin's own (spank_plugin/options.cc).
bool CheckOptionValue(Opt id, std::string_view what, std::string_view text, std::string* err);

}  // namespace elastic
