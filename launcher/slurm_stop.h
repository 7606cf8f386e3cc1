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

// The one console line for Slurm's SIGTERM, given the job's end time (if known)
// and the wall clock now (unix seconds). Slurm's controller enforces time limits
// on a timer, so its SIGTERM comes at or after the end time; a few seconds of
// clock skew between the controller and this node are allowed for.
std::string SlurmStopLine(std::optional<int64_t> job_end_time, int64_t now);

}  // namespace elastic
