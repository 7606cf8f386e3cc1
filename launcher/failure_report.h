// The end-of-run summary of a failed job, and reading PyTorch's @record error
// file (TORCHELASTIC_ERROR_FILE) into it.
#pragma once

#include <cstddef>
#include <string>

#include "rendezvous/rendezvous_handler.h"

namespace elastic {

// Reads torch.distributed.elastic's error file:
//   {"message": {"message": "RuntimeError: boom", "extraInfo": {"py_callstack": "Traceback ..."}}}
// (or "message" as a plain string). False if missing or not that format.
bool ReadErrorFile(const std::string& path, std::string* message, std::string* traceback);

// The multi-line summary naming the first failure of the last attempt:
//   "job failed: first failure: rank 3 (local rank 3) on h: exit code 1" and details.
// A job ended by a lost node (`reason` kNodesLost or kHostLost, no worker failure: the
// rendezvous names only the node) says so instead of a rank -1 that "exited 0".
// `restarts_flag` is the option the user typed (--elastic-max-restarts under srun).
// Host, message and each traceback line are escaped (EscapeForLog) and bounded:
// they come from a worker's error file or from the network.
inline constexpr size_t kSummaryHostBytes = 255;
inline constexpr size_t kSummaryMessageBytes = 4096;
std::string FormatFailureSummary(const WorkerFailure& failure, int restarts_used, int max_restarts,
                                 EndReason reason = EndReason::kWorkerFailed,
                                 const std::string& restarts_flag = "--max-restarts");

// The console line when a worker failed here and this node joins the next round
// (issue 19 item 11): a restart while --max-restarts leaves one (`restarts_used`: the
// job-wide count of the round that failed), else the end the host will answer the join
// with. Worker ranks are numbers: nothing foreign to escape.
//   "restarting the workers after rank 0 failed (restart 1 of 3, --max-restarts)"
//   "rank 0 failed and no restart is left (--max-restarts=3, 3 used): the job ends"
std::string FormatRejoinLine(const WorkerFailure& failure, int restarts_used, int max_restarts,
                             const std::string& restarts_flag = "--max-restarts");

// "exit code 1" / "signal SIGKILL (9)".
std::string DescribeExit(const WorkerFailure& failure);

// ISO-8601 UTC time of a unix time in milliseconds.
std::string FormatUnixMillis(int64_t ms);

}  // namespace elastic
