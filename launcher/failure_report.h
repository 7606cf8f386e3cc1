// The end-of-run summary of a failed job, and reading PyTorch's @record error
// file (TORCHELASTIC_ERROR_FILE) into it.
#pragma once

#include <string>

#include "rendezvous/rendezvous_handler.h"

namespace elastic {

// Reads torch.distributed.elastic's error file:
//   {"message": {"message": "RuntimeError: boom", "extraInfo": {"py_callstack": "Traceback ..."}}}
// (or "message" as a plain string). False if missing or not that format.
bool ReadErrorFile(const std::string& path, std::string* message, std::string* traceback);

// The multi-line summary naming the first failure of the last attempt:
//   "job failed: first failure: rank 3 (local rank 3) on h: exit code 1" and details.
// A job ended by a lost node (`reason` kNodesLost, no worker failure: the
// rendezvous names only the node) says so instead of a rank -1 that "exited 0".
// `restarts_flag` is the option the user typed (--elastic-max-restarts under srun).
std::string FormatFailureSummary(const WorkerFailure& failure, int restarts_used, int max_restarts,
                                 EndReason reason = EndReason::kWorkerFailed,
                                 const std::string& restarts_flag = "--max-restarts");

// "exit code 1" / "signal SIGKILL (9)".
std::string DescribeExit(const WorkerFailure& failure);

// ISO-8601 UTC time of a unix time in milliseconds.
std::string FormatUnixMillis(int64_t ms);

}  // namespace elastic
