#include "launcher/stuck_worker.h"

#include <algorithm>
#include <fmt/format.h>
#include <tuple>
#include <unordered_map>

#include "common/log_escape.h"

namespace elastic {
namespace {

bool Exited(char state) { return state == 'Z' || state == 'X'; }

const char* StateWords(char state) {
  switch (state) {
    case 'D': return "is in uninterruptible sleep";
    case 'R': return "is still running";
    case 'T': case 't': return "is stopped";
    default: return "is still alive";
  }
}

}  // namespace

KillCheck JudgeKill(const ProcTable& table, const std::vector<UnreapedWorker>& workers) {
  std::unordered_map<pid_t, const ProcEntry*> by_pid;
  for (const ProcEntry& e : table) by_pid[e.pid] = &e;
  KillCheck check;
  std::vector<StuckProcess> found;
  for (const UnreapedWorker& w : workers) {
    auto leader = by_pid.find(w.pid);
    // Gone, or a zombie: its exit is an event the loop reads next.
    if (leader == by_pid.end() || Exited(leader->second->state)) continue;
    check.verdict = KillVerdict::kStuck;
    for (const ProcEntry& e : table) {
      if (e.pgid != w.pid || Exited(e.state)) continue;
      found.push_back(StuckProcess{e.pid, w.local_rank, w.global_rank, e.pid == w.pid, e.state, ""});
    }
  }
  // D first (the cause), then the leaders, then by rank and pid: a stable report.
  std::sort(found.begin(), found.end(), [](const StuckProcess& a, const StuckProcess& b) {
    auto key = [](const StuckProcess& p) { return std::tuple(p.state != 'D', !p.leader, p.local_rank, p.pid); };
    return key(a) < key(b);
  });
  if (found.size() > kMaxReported) {
    check.unreported = found.size() - kMaxReported;
    found.resize(kMaxReported);
  }
  check.processes = std::move(found);
  return check;
}

KillCheck CheckKill(const ProcReader& reader, const std::vector<UnreapedWorker>& workers) {
  KillCheck check = JudgeKill(reader.Table(), workers);
  for (StuckProcess& p : check.processes) p.wchan = ParseWchan(reader.Wchan(p.pid));
  return check;
}

std::string ParseWchan(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty() || text == "0") return "";
  return EscapeForLog(text, 64);
}

std::string DescribeStuck(const StuckProcess& p) {
  std::string who = p.leader ? fmt::format("local rank {} (rank {}, pid {})", p.local_rank, p.global_rank, p.pid)
                             : fmt::format("pid {} of local rank {} (rank {})", p.pid, p.local_rank, p.global_rank);
  std::string wchan = p.wchan.empty() ? "" : ", wchan " + p.wchan;
  return fmt::format("{} {} (state {}{})", who, StateWords(p.state), p.state, wchan);
}

}  // namespace elastic
