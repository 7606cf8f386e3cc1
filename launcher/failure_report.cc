#include "launcher/failure_report.h"

#include <time.h>

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/log_escape.h"
#include "common/parse.h"
#include "launcher/child_process.h"

namespace elastic {

bool ReadErrorFile(const std::string& path, std::string* message, std::string* traceback) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("message")) return false;
  const nlohmann::json& m = doc["message"];
  if (m.is_string()) {
    *message = m.get<std::string>();
    return true;
  }
  if (!m.is_object()) return false;
  if (m.contains("message") && m["message"].is_string()) *message = m["message"].get<std::string>();
  if (m.contains("extraInfo") && m["extraInfo"].is_object()) {
    const nlohmann::json& extra = m["extraInfo"];
    if (extra.contains("py_callstack") && extra["py_callstack"].is_string()) {
      *traceback = extra["py_callstack"].get<std::string>();
    }
  }
  return !message->empty() || !traceback->empty();
}

std::string DescribeExit(const WorkerFailure& failure) {
  if (failure.signal != 0) return fmt::format("signal {} ({})", SignalName(failure.signal), failure.signal);
  return fmt::format("exit code {}", failure.exit_code);
}

std::string FormatUnixMillis(int64_t ms) {
  time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  gmtime_r(&seconds, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms % 1000));
}

std::string FormatRejoinLine(const WorkerFailure& f, int restarts_used, int max_restarts,
                             const std::string& restarts_flag) {
  if (restarts_used < max_restarts) {
    return fmt::format("restarting the workers after rank {} failed (restart {} of {}, {})",
                       f.global_rank, restarts_used + 1, max_restarts, restarts_flag);
  }
  return fmt::format("rank {} failed and no restart is left ({}={}, {} used): the job ends",
                     f.global_rank, restarts_flag, max_restarts, restarts_used);
}

namespace {

// No worker failed: the rendezvous ended the job for a lost node (it names the
// node in host, and what it saw in message).
std::string FormatNodeLossSummary(const WorkerFailure& f, int restarts_used, int max_restarts,
                                  EndReason reason, const std::string& restarts_flag) {
  // The rendezvous names an agent "host:pid"; the user lost the host.
  std::string host = f.host;
  if (size_t colon = host.rfind(':'); colon != std::string::npos && colon + 1 < host.size() &&
      host.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    host.resize(colon);
  }
  std::string name = EscapeForLog(host, kSummaryHostBytes);
  bool was_host = reason == EndReason::kHostLost || f.host_lost;
  std::string node = was_host ? "the rendezvous host" : "a node";
  if (!host.empty()) node = (was_host ? "the rendezvous host " : "node ") + name;
  std::string out = fmt::format(
      "job failed: {} was lost and no restart was left: a lost node counts against {}, which "
      "is {}\n",
      node, restarts_flag, max_restarts);
  if (!f.message.empty())
    out += fmt::format("  what:          {}\n", EscapeForLog(f.message, kSummaryMessageBytes));
  out += fmt::format("  restarts used: {} of {}\n", restarts_used, max_restarts);
  return out;
}

}  // namespace

std::string FormatFailureSummary(const WorkerFailure& f, int restarts_used, int max_restarts,
                                 EndReason reason, const std::string& restarts_flag) {
  if (f.global_rank < 0 && (reason == EndReason::kNodesLost || reason == EndReason::kHostLost)) {
    return FormatNodeLossSummary(f, restarts_used, max_restarts, reason, restarts_flag);
  }
  // Every text in a failure came from a worker (its error file) or over the
  // network (a host's job_failed): escaped as log lines from the network are
  // (common/log_escape.h), so a newline cannot forge an "elasticrun:" line and an
  // escape sequence never reaches the terminal. Only the traceback keeps its line
  // breaks, each line escaped on its own and indented under the summary.
  std::string host = f.host.empty() ? "?" : EscapeForLog(f.host, kSummaryHostBytes);
  std::string out = fmt::format("job failed: first failure: rank {} (local rank {}) on {}: {}\n",
                                f.global_rank, f.local_rank, host, DescribeExit(f));
  out += fmt::format("  rank:          {} (local rank {})\n", f.global_rank, f.local_rank);
  out += fmt::format("  host:          {}\n", EscapeForLog(f.host, kSummaryHostBytes));
  out += fmt::format("  exit:          {}\n", DescribeExit(f));
  // 0: not told (an older agent's report); never print 1970.
  if (f.time_unix_ms > 0) out += fmt::format("  time:          {}\n", FormatUnixMillis(f.time_unix_ms));
  if (restarts_used > 0) {
    out += fmt::format("  attempt:       the last one (restart {}): the first failure of each "
                       "earlier attempt is in the log above\n", restarts_used);
  }
  out += fmt::format("  restarts used: {} of {} ({})\n", restarts_used, max_restarts, restarts_flag);
  // A worker's failure ends the job with restarts left only after a node finished (the
  // rendezvous's message, below when the worker wrote no error file, names it).
  if (reason == EndReason::kWorkerFailed && restarts_used < max_restarts)
    out += "  no restart:    a node had finished (its workers all exited 0): a restart would need "
           "its workers again\n";
  if (!f.message.empty())
    out += fmt::format("  message:       {}\n", EscapeForLog(f.message, kSummaryMessageBytes));
  if (!f.traceback.empty()) {
    out += "  traceback:\n";
    for (const std::string& line : Split(f.traceback, '\n')) {
      if (!line.empty()) out += "    " + EscapeForLog(line, kSummaryMessageBytes) + "\n";
    }
  }
  if (f.message.empty() && f.traceback.empty()) {
    out += "  (no error file: decorate the worker's main with @record from "
           "torch.distributed.elastic.multiprocessing.errors to see its traceback)\n";
  }
  return out;
}

}  // namespace elastic
