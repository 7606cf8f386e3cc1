// What one Slurm task of a node hands its worker under srun --elastic with several
// tasks per node (task_group.h): a small file other processes of the job write, so
// it is read as outside input, here and nowhere else.
#pragma once

#include <map>
#include <string>

namespace elastic {

// The variables a task hands on: Slurm's per-task GPU binding and its ids.
extern const char* const kTaskVariables[];

// The variables of kTaskVariables the task has (a variable it lacks is unset in its
// worker) and its CPU affinity as a CPU list.
struct TaskRecord {
  std::map<std::string, std::string> set;
  std::string cpus;  // "0-3,8" ("" = not known: the worker inherits the agent's)
};

// The record file: "KEY=VALUE" lines, KEY one of kTaskVariables or "cpus". Values
// are printable ASCII (they become the worker's environment); cpus is a CPU list.
std::string FormatTaskRecord(const TaskRecord& record);
// False with *err naming the bad line (escaped) when the text is not such a record.
bool ParseTaskRecord(const std::string& text, TaskRecord* record, std::string* err);

}  // namespace elastic
