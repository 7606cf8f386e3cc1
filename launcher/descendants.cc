#include "launcher/descendants.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <charconv>
#include <fmt/format.h>
#include <unordered_map>
#include <unordered_set>

#include "common/log.h"
#include "common/unique_fd.h"

namespace elastic {
namespace {

bool ReadStat(pid_t pid, ProcEntry* entry) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
  if (!fd) return false;
  char buf[1024];
  ssize_t n = read(fd.get(), buf, sizeof buf);
  return n > 0 && ParseProcStat(std::string_view(buf, static_cast<size_t>(n)), entry);
}

bool Exited(char state) { return state == 'Z' || state == 'X'; }

// Opens a pidfd for `pid` if it is still the descendant the walk saw (its parent
// is `root` or another descendant): after that, signals cannot reach a reused pid.
UniqueFd OpenIfDescendant(pid_t pid, pid_t root, const std::unordered_set<pid_t>& family) {
  UniqueFd fd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  ProcEntry e;
  if (!fd || !ReadStat(pid, &e) || Exited(e.state)) return UniqueFd();
  if (e.ppid != root && !family.count(e.ppid)) return UniqueFd();
  return fd;
}

// Waits until every pidfd is readable (its process exited) or `deadline`.
bool WaitExited(std::vector<UniqueFd>* fds, MonoClock::time_point deadline) {
  while (!fds->empty()) {
    auto left = std::chrono::ceil<Millis>(deadline - MonoClock::now()).count();
    if (left <= 0) return false;
    std::vector<pollfd> polled;
    for (const UniqueFd& fd : *fds) polled.push_back(pollfd{fd.get(), POLLIN, 0});
    int r = poll(polled.data(), polled.size(), static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (r < 0 && errno != EINTR) return false;
    std::vector<UniqueFd> still;
    for (size_t i = 0; i < polled.size(); ++i) {
      if (!(polled[i].revents & (POLLIN | POLLHUP | POLLERR))) still.push_back(std::move((*fds)[i]));
    }
    *fds = std::move(still);
  }
  return true;
}

}  // namespace

bool ParseProcStat(std::string_view stat, ProcEntry* entry) {
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos || close + 2 >= stat.size()) return false;
  int pid = 0;
  if (std::from_chars(stat.data(), stat.data() + stat.size(), pid).ec != std::errc()) return false;
  std::string_view rest = stat.substr(close + 2);  // "S ppid pgrp ..."
  if (rest.size() < 2 || rest[1] != ' ') return false;
  int values[2] = {0, 0};
  const char* p = rest.data() + 2;
  const char* end = rest.data() + rest.size();
  for (int& v : values) {
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc()) return false;
    p = next < end ? next + 1 : end;
  }
  *entry = ProcEntry{pid, values[0], values[1], rest[0]};
  return true;
}

ProcTable ReadProcTable() {
  ProcTable table;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return table;
  while (dirent* d = readdir(dir)) {
    int pid = 0;
    const char* end = d->d_name + strlen(d->d_name);
    if (std::from_chars(d->d_name, end, pid).ptr != end || pid <= 0) continue;
    ProcEntry e;
    if (ReadStat(pid, &e)) table.push_back(e);
  }
  closedir(dir);
  return table;
}

std::vector<pid_t> LiveDescendants(const ProcTable& table, pid_t root) {
  std::unordered_multimap<pid_t, const ProcEntry*> children;
  for (const ProcEntry& e : table) children.emplace(e.ppid, &e);
  std::vector<pid_t> live;
  std::vector<pid_t> todo{root};
  std::unordered_set<pid_t> seen{root};
  for (size_t i = 0; i < todo.size(); ++i) {
    auto [first, last] = children.equal_range(todo[i]);
    for (auto it = first; it != last; ++it) {
      const ProcEntry& c = *it->second;
      if (!seen.insert(c.pid).second) continue;
      todo.push_back(c.pid);
      if (!Exited(c.state)) live.push_back(c.pid);
    }
  }
  return live;
}

std::vector<pid_t> OwnGroups(const ProcTable& table, pid_t root, const std::vector<pid_t>& pgids) {
  std::unordered_set<pid_t> live_groups;
  std::unordered_map<pid_t, pid_t> pgid;
  for (const ProcEntry& e : table) pgid[e.pid] = e.pgid;
  for (pid_t pid : LiveDescendants(table, root)) live_groups.insert(pgid[pid]);
  std::vector<pid_t> own;
  for (pid_t g : pgids)
    if (g > 1 && live_groups.count(g) && std::find(own.begin(), own.end(), g) == own.end())
      own.push_back(g);
  return own;
}

int SignalDescendants(pid_t root, int sig, const std::vector<pid_t>& skip_pgids) {
  ProcTable table = ReadProcTable();
  std::vector<pid_t> pids = LiveDescendants(table, root);
  std::unordered_set<pid_t> family(pids.begin(), pids.end());
  std::unordered_map<pid_t, pid_t> pgid;
  for (const ProcEntry& e : table) pgid[e.pid] = e.pgid;
  int sent = 0;
  for (pid_t pid : pids) {
    if (std::count(skip_pgids.begin(), skip_pgids.end(), pgid[pid])) continue;
    UniqueFd fd = OpenIfDescendant(pid, root, family);
    if (fd && syscall(SYS_pidfd_send_signal, fd.get(), sig, nullptr, 0) == 0) ++sent;
  }
  return sent;
}

std::vector<pid_t> Leftovers(const ProcTable& table, pid_t root, const std::vector<pid_t>& spare) {
  std::vector<pid_t> pids = LiveDescendants(table, root);
  std::unordered_set<pid_t> spared(spare.begin(), spare.end());
  for (pid_t s : spare) {
    for (pid_t d : LiveDescendants(table, s)) spared.insert(d);
  }
  std::erase_if(pids, [&](pid_t pid) { return spared.count(pid) > 0; });
  return pids;
}

KillStep NextKillStep(size_t left, MonoClock::time_point now, MonoClock::time_point deadline) {
  if (left == 0) return KillStep::kDone;
  return now >= deadline ? KillStep::kGiveUp : KillStep::kKill;
}

namespace {

std::string StillAlive(const std::vector<pid_t>& pids, pid_t root) {
  return fmt::format("{} descendant process(es) of pid {} still alive after SIGKILL (first: {})", pids.size(),
                     root, pids.front());
}

// SIGKILLs `pids` (descendants of `root`); the pidfds of those signalled.
std::vector<UniqueFd> KillAll(const std::vector<pid_t>& pids, pid_t root) {
  std::unordered_set<pid_t> family(pids.begin(), pids.end());
  std::vector<UniqueFd> fds;
  for (pid_t pid : pids) {
    UniqueFd fd = OpenIfDescendant(pid, root, family);
    if (fd && syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0) == 0) fds.push_back(std::move(fd));
  }
  return fds;
}

}  // namespace

bool KillDescendants(pid_t root, MonoClock::time_point deadline, std::string* err,
                     const std::vector<pid_t>& spare) {
  while (true) {
    std::vector<pid_t> pids = Leftovers(ReadProcTable(), root, spare);
    switch (NextKillStep(pids.size(), MonoClock::now(), deadline)) {
      case KillStep::kDone:
        return true;
      case KillStep::kGiveUp:
        *err = StillAlive(pids, root);
        return false;
      case KillStep::kKill:
        break;
    }
    std::vector<UniqueFd> fds = KillAll(pids, root);
    WaitExited(&fds, deadline);  // then walk again: a process may have forked meanwhile
  }
}

bool LeftoverKiller::Start(pid_t root, const std::vector<pid_t>& spare, MonoClock::time_point deadline,
                           Done done) {
  Forget();
  root_ = root;
  spare_ = spare;
  deadline_ = deadline;
  std::vector<pid_t> pids = Leftovers(ReadProcTable(), root_, spare_);
  if (pids.empty()) return true;
  done_ = std::move(done);
  deadline_timer_ = loop_.After(std::chrono::ceil<Millis>(deadline_ - loop_.Now()), [this] {
    Forget();
    Walk();  // gives up if some are left
  });
  Step(pids);
  return false;
}

void LeftoverKiller::Walk() { Step(Leftovers(ReadProcTable(), root_, spare_)); }

void LeftoverKiller::Step(const std::vector<pid_t>& pids) {
  switch (NextKillStep(pids.size(), loop_.Now(), deadline_)) {
    case KillStep::kDone:
      Finish("");
      return;
    case KillStep::kGiveUp:
      Finish(StillAlive(pids, root_));
      return;
    case KillStep::kKill:
      break;
  }
  dying_ = KillAll(pids, root_);
  for (const UniqueFd& fd : dying_) {
    int raw = fd.get();
    std::string err;
    if (!loop_.Add(raw, EPOLLIN, [this, raw](uint32_t) { OnExited(raw); }, &err)) {
      Log(LogLevel::kWarning, "following a killed process: {}", err);
    }
  }
  // None could be signalled (they exited meanwhile): look again on a later turn.
  if (dying_.empty()) again_ = loop_.After(Millis(10), [this] { Walk(); });
}

void LeftoverKiller::Finish(const std::string& err) {
  Forget();
  Done done = std::exchange(done_, nullptr);
  posted_.Post([done, err] { done(err); });
}

void LeftoverKiller::OnExited(int fd) {
  loop_.Remove(fd);
  std::erase_if(dying_, [fd](const UniqueFd& f) { return f.get() == fd; });
  if (dying_.empty()) Walk();
}

void LeftoverKiller::Forget() {
  for (const UniqueFd& fd : dying_) {
    if (loop_.Watching(fd.get())) loop_.Remove(fd.get());
  }
  dying_.clear();
  again_.Cancel();
  deadline_timer_.Cancel();
}

int ReapExited(const std::vector<pid_t>& keep) {
  pid_t self = getpid();
  int reaped = 0;
  for (const ProcEntry& e : ReadProcTable()) {
    if (e.ppid != self || e.state != 'Z') continue;
    if (std::count(keep.begin(), keep.end(), e.pid)) continue;
    if (waitpid(e.pid, nullptr, WNOHANG) == e.pid) ++reaped;
  }
  return reaped;
}

}  // namespace elastic
