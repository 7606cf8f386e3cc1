#include "launcher/task_group.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/log.h"
#include "common/parse.h"
#include "rendezvous/regime_record.h"

namespace elastic {

namespace {

long long NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void SleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

bool ReadFile(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

// Written whole under a temporary name, then renamed: a reader never sees half.
bool WriteFileAtomic(const std::string& path, const std::string& text, std::string* err) {
  std::string tmp = fmt::format("{}.tmp{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      *err = fmt::format("cannot write {}: {}", tmp, strerror(errno));
      return false;
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    *err = fmt::format("cannot rename {} to {}: {}", tmp, path, strerror(errno));
    return false;
  }
  return true;
}

std::string RecordPath(const std::string& dir, int id) { return fmt::format("{}/task-{}", dir, id); }

bool Alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

std::string CpuListOf(const cpu_set_t& set) {
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!out.empty()) out += ',';
    out += last == cpu ? std::to_string(cpu) : fmt::format("{}-{}", cpu, last);
    cpu = last;
  }
  return out;
}

}  // namespace

std::optional<TaskGroup> ParseTaskGroup(const std::string& text, std::string* err) {
  size_t slash = text.find('/');
  long long id = 0, tasks = 0;
  if (slash == std::string::npos || !ParseInt(text.substr(0, slash), 0, 1 << 16, &id) ||
      !ParseInt(text.substr(slash + 1), 2, 1 << 16, &tasks) || id >= tasks) {
    *err = fmt::format("ELASTIC_SPANK_TASK_GROUP: '{}' is not K/N (local task K of N >= 2 tasks)",
                       text);
    return std::nullopt;
  }
  return TaskGroup{static_cast<int>(id), static_cast<int>(tasks)};
}

TaskRecord CurrentTaskRecord(const std::map<std::string, std::string>& env) {
  TaskRecord r;
  for (const char* const* v = kTaskVariables; *v; ++v) {
    auto it = env.find(*v);
    if (it != env.end()) r.set[*v] = it->second;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) r.cpus = CpuListOf(set);
  return r;
}

std::string TaskGroupDir(const std::string& state_dir, const std::string& key, std::string* err) {
  if (key.empty() || key.find('/') != std::string::npos || key[0] == '.') {
    *err = fmt::format("ELASTIC_SPANK_TASK_GROUP_KEY: '{}' is not a file name", key);
    return {};
  }
  std::string base = RegimeDir(state_dir, err);
  if (base.empty()) return {};
  std::string dir = fmt::format("{}/tasks-{}", base, key);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *err = fmt::format("cannot create {}: {}", dir, strerror(errno));
    return {};
  }
  return dir;
}

int RunTaskFollower(const std::string& dir, const TaskGroup& group,
                    const std::map<std::string, std::string>& env, long long agent_start_timeout_ms,
                    const std::function<void()>& after_report) {
  std::string err;
  std::string record = RecordPath(dir, group.local_id);
  if (!WriteFileAtomic(record, FormatTaskRecord(CurrentTaskRecord(env)), &err)) {
    Log(LogLevel::kError, "task {} of this node: {}", group.local_id, err);
    return 1;
  }
  if (after_report) after_report();
  long long start = NowMs();
  for (;;) {
    std::string text;
    if (ReadFile(dir + "/exit", &text)) {
      long long code = 1;
      ParseInt(Split(text, '\n')[0], 0, 255, &code);
      unlink(record.c_str());
      return static_cast<int>(code);
    }
    std::string pid_text;
    long long pid = 0;
    if (ReadFile(dir + "/agent.pid", &pid_text) && ParseInt(Split(pid_text, '\n')[0], 1, 1 << 30, &pid)) {
      if (!Alive(static_cast<pid_t>(pid)) && !ReadFile(dir + "/exit", &text)) {
        Log(LogLevel::kError, "task {} of this node: the node's agent (task 0, pid {}) ended without "
            "an exit code", group.local_id, pid);
        unlink(record.c_str());
        return 1;
      }
    } else if (NowMs() - start > agent_start_timeout_ms) {
      Log(LogLevel::kError, "task {} of this node: task 0 did not start the node's agent within {} s",
          group.local_id, agent_start_timeout_ms / 1000);
      unlink(record.c_str());
      return 1;
    }
    SleepMs(100);
  }
}

bool CollectTaskRecords(const std::string& dir, const TaskGroup& group,
                        const std::map<std::string, std::string>& env, long long timeout_ms,
                        std::vector<TaskRecord>* records, std::string* err) {
  unlink((dir + "/exit").c_str());  // of an earlier run in a reused directory
  if (!WriteFileAtomic(dir + "/agent.pid", fmt::format("{}\n", getpid()), err)) return false;
  records->assign(group.tasks, TaskRecord{});
  (*records)[0] = CurrentTaskRecord(env);
  std::vector<bool> have(group.tasks, false);
  have[0] = true;
  long long start = NowMs();
  for (;;) {
    int missing = 0;
    for (int k = 1; k < group.tasks; ++k) {
      if (have[k]) continue;
      std::string text;
      if (ReadFile(RecordPath(dir, k), &text)) {
        if (!ParseTaskRecord(text, &(*records)[k], err)) return false;
        have[k] = true;
      } else {
        ++missing;
      }
    }
    if (missing == 0) return true;
    if (NowMs() - start > timeout_ms) {
      std::vector<std::string> names;
      for (int k = 1; k < group.tasks; ++k) {
        if (!have[k]) names.push_back(std::to_string(k));
      }
      *err = fmt::format("local task{} {} of {} did not report to task 0 within {} s (in {})",
                         names.size() == 1 ? "" : "s", fmt::join(names, ","), group.tasks,
                         timeout_ms / 1000, dir);
      return false;
    }
    SleepMs(20);
  }
}

void FinishTaskGroup(const std::string& dir, const TaskGroup& group, int exit_code) {
  std::string err;
  if (!WriteFileAtomic(dir + "/exit", fmt::format("{}\n", exit_code), &err)) {
    Log(LogLevel::kWarning, "the other tasks of this node: {}", err);
    return;
  }
  // Each follower removes its record once it read the code.
  long long start = NowMs();
  for (;;) {
    bool any = false;
    for (int k = 1; k < group.tasks; ++k) any = any || access(RecordPath(dir, k).c_str(), F_OK) == 0;
    if (!any || NowMs() - start > 3000) break;
    SleepMs(20);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace elastic
