// Slurm ends a step the same way for scancel, preemption and the job's time
// limit: SIGCONT, then SIGTERM to every process. What the user reads must say
// which (docs/user.md, "Preemption and signals"): the job's end time tells the
// time limit apart. Slurm 24.11 and later give every task SLURM_JOB_END_TIME; on older
// releases the plugin exports kJobEndTimeVar from srun (spank_plugin/srun.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace elastic {

inline constexpr const char* kJobEndTimeVar = "ELASTIC_JOB_END_TIME";

// Unix seconds from the variable's text; nullopt unless a positive integer
// (Slurm writes 0 or nothing when it has no end time).
std::optional<int64_t> ParseJobEndTime(const std::string& text);

// The job is at (or past) its time limit: `now` (unix seconds, this node's wall
// clock) within a few seconds of clock skew of its end time, or later. Slurm is then
// ending every step of the job, in no set order between the nodes: a peer that is
// gone, or a controller that refuses an update ("Job has already finished"), is that
// end reaching this node first, not news (the time limit's own line tells it).
bool AtJobEnd(std::optional<int64_t> job_end_time, int64_t now);

// The one console line for Slurm's SIGTERM, given the job's end time (if known)
// and the wall clock now (unix seconds). Slurm's controller enforces time limits
// on a timer, so its SIGTERM comes at or after the end time; a few seconds of
// clock skew between the controller and this node are allowed for.
std::string SlurmStopLine(std::optional<int64_t> job_end_time, int64_t now);

}  // namespace elastic
