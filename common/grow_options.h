// --elastic-grow[=OPTIONS] (srun/sbatch/salloc) and elasticrun --grow OPTIONS
// (PET_GROW): the running step keeps one-node helper jobs queued for the nodes
// it misses below MAX (launcher/grow_keeper.h). OPTIONS, parsed once here into a
// type, are what the helper jobs are submitted with:
//   partition=P  qos=Q  account=A  time=T  nice=N  interval=SECONDS
// comma-separated, each at most once; "" or "on" alone: the defaults (the main
// job's partition and account, the site's QOS and time limit, squeue every 10 s).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace elastic {

inline constexpr int kGrowDefaultIntervalS = 10;

struct GrowOptions {
  std::string partition;  // "": the main job's (SLURM_JOB_PARTITION)
  std::string qos;        // "": the site's default
  std::string account;    // "": the main job's (SLURM_JOB_ACCOUNT)
  std::string time;       // "": the partition's default; Slurm's forms (MM, HH:MM:SS, D-HH...)
  std::optional<int> nice;  // sbatch --nice (a user may only lower a job's priority)
  int interval_s = kGrowDefaultIntervalS;  // how often the helper jobs are looked at (squeue)
  bool operator==(const GrowOptions&) const = default;
};

// `what` names the option in errors ("--elastic-grow", "--grow"); the error names
// the bad word or value and what is allowed.
bool ParseGrowOptions(std::string_view what, std::string_view text, GrowOptions* out, std::string* err);

// The text ParseGrowOptions reads back ("on" for the defaults): what the plugin
// hands elasticrun as PET_GROW.
std::string FormatGrowOptions(const GrowOptions& options);

// sbatch's options for them (each one word, safe for /bin/sh: the values are checked).
std::vector<std::string> GrowSbatchArgs(const GrowOptions& options);

}  // namespace elastic
