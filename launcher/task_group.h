// Slurm's one task per GPU under srun --elastic (docs/user.md, "One task per GPU"):
// with N tasks on a node, the task with local id 0 becomes the node's agent and
// starts N workers, worker K with task K's Slurm facts (its GPU variables, its CPU
// affinity, SLURM_PROCID/SLURM_LOCALID); tasks 1..N-1 report those facts, wait for
// the agent and exit with its code. They meet in a node-local directory keyed by
// the step and its slurmstepd (the tasks' parent), given by the plugin.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/task_record.h"

namespace elastic {

// ELASTIC_SPANK_TASK_GROUP=K/N (set by the plugin when a node runs N > 1 tasks).
struct TaskGroup {
  int local_id = 0;
  int tasks = 1;
};
// nullopt with *err naming the value when it does not parse (0 <= K < N, N >= 2).
std::optional<TaskGroup> ParseTaskGroup(const std::string& text, std::string* err);

// This process's record, from its environment and sched_getaffinity.
TaskRecord CurrentTaskRecord(const std::map<std::string, std::string>& env);

// The meeting directory: STATE_DIR/tasks-KEY, KEY = ELASTIC_SPANK_TASK_GROUP_KEY
// (JOBID.STEPID-SLURMSTEPD_PID, the same for the node's tasks of one step); "" with
// *err when it cannot be made.
std::string TaskGroupDir(const std::string& state_dir, const std::string& key, std::string* err);

// Task K > 0: writes its record, runs `after_report` (its part of a collective
// the agent's start needs: the PMIx fence), waits for the agent's exit code (or its
// end) and returns the code to exit with; an agent that has not started within
// agent_start_timeout_ms (AgentSettings::task_agent_start_timeout_ms) is an error.
// Blocking: this process runs nothing else.
int RunTaskFollower(const std::string& dir, const TaskGroup& group,
                    const std::map<std::string, std::string>& env, long long agent_start_timeout_ms,
                    const std::function<void()>& after_report = {});

// Task 0, before the agent starts: announces itself, then collects every task's
// record (index = local id), waiting up to timeout_ms. False with *err naming the
// tasks that did not report.
bool CollectTaskRecords(const std::string& dir, const TaskGroup& group,
                        const std::map<std::string, std::string>& env, long long timeout_ms,
                        std::vector<TaskRecord>* records, std::string* err);
// Task 0, at the end: hands the exit code to the other tasks, gives them a moment
// to read it, and removes the directory.
void FinishTaskGroup(const std::string& dir, const TaskGroup& group, int exit_code);

}  // namespace elastic
