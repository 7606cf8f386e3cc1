// --grow (docs/user.md "Grow into free nodes"): the pure part of keeping helper
// jobs queued. The rendezvous host (grow_keeper.h) asks Slurm for its helper jobs
// (squeue), and DecideGrow says, from what it knows and a clock, how many to
// submit and how many to cancel:
//   missing  = MAX - world nodes - helpers that started and have not joined yet
//   pending  > missing: cancel the surplus (never more pending than missing)
//   pending  < missing: submit one (the shell decides again after each sbatch),
//                       unless the last submission failed less than the backoff ago
// The backoff doubles with each failure in a row, from backoff_min to backoff_max.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace elastic {

struct GrowSettings {
  Millis interval{10000};       // squeue this often (GrowOptions::interval_s)
  Millis backoff_min{10000};    // after a failed sbatch, then doubled...
  Millis backoff_max{300000};   // ...up to this
  Millis start_grace{60000};    // a running helper counts as joining this long
};

struct GrowView {
  int world_nodes = 0;   // the group's nodes in the last round (and joined since)
  int max_nodes = 0;     // MAX
  int pending = 0;       // helper jobs Slurm has queued (PD)
  int starting = 0;      // helper jobs running for less than start_grace
  int failures = 0;      // sbatch failures in a row
  std::optional<MonoClock::time_point> last_failure;
};

struct GrowDecision {
  int submit = 0;  // 0 or 1
  int cancel = 0;  // pending helper jobs to cancel (the newest)
  std::optional<MonoClock::time_point> retry_at;  // backing off: decide again then
  bool operator==(const GrowDecision&) const = default;
};

Millis GrowBackoff(int failures, const GrowSettings& settings);
GrowDecision DecideGrow(const GrowView& view, MonoClock::time_point now, const GrowSettings& settings);

// One helper job in squeue's `-h -o "%i %t"` output.
struct HelperJob {
  std::string id;
  std::string state;  // Slurm's compact state: PD, R, CF, CG, ...
  bool operator==(const HelperJob&) const = default;
};
// False with *err naming the bad line (not "ID STATE", or an id that is not digits).
bool ParseHelperJobs(std::string_view text, std::vector<HelperJob>* out, std::string* err);
// The job id sbatch --parsable printed ("ID" or "ID;CLUSTER"); false when it is not one.
bool ParseSbatchJobId(std::string_view text, std::string* id);

}  // namespace elastic
