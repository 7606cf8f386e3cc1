// A SpankApi and NodeDirectory for unit tests: items, environment and argv are
// plain maps the test fills in; every message the plugin shows is recorded.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "spank_plugin/spank_api.h"

namespace elastic::spank {

class FakeSpank : public SpankApi {
 public:
  Context context = Context::kRemote;
  std::map<Item, uint32_t> items;
  std::map<std::string, std::string> env;
  std::vector<std::string> argv = {"python3", "train.py", "--epochs", "2"};
  std::vector<std::string> cmdline = {"srun", "-N3", "--elastic", "python3", "train.py"};
  long parent_pid = 4242;
  std::vector<std::string> errors;
  std::vector<std::string> infos;
  std::vector<std::string> executables = {"/usr/bin/elasticrun"};
  bool prepend = false;  // behave like Slurm >= 23.11
  bool fail_setenv = false;

  Context GetContext() override { return context; }
  bool GetItem(Item item, uint32_t* value) override {
    auto it = items.find(item);
    if (it == items.end()) return false;
    *value = it->second;
    return true;
  }
  bool GetArgv(std::vector<std::string>* out) override {
    *out = argv;
    return true;
  }
  bool GetEnv(const std::string& name, std::string* value) override {
    auto it = env.find(name);
    if (it == env.end()) return false;
    *value = it->second;
    return true;
  }
  bool SetEnv(const std::string& name, const std::string& value) override {
    if (fail_setenv) return false;
    env[name] = value;
    return true;
  }
  bool UnsetEnv(const std::string& name) override {
    env.erase(name);
    return true;
  }
  bool WrapTask(const std::string& launcher, bool* prepended, std::string*) override {
    if (prepend) {
      argv.insert(argv.begin(), launcher);
    } else {
      argv[0] = launcher;
    }
    *prepended = prepend;
    return true;
  }
  void Error(const std::string& message) override { errors.push_back(message); }
  void Info(const std::string& message) override { infos.push_back(message); }
  int exit_code = -1;  // ExitTask's code; -1: not called
  void ExitTask(int code) override { exit_code = code; }
  bool IsExecutable(const std::string& path) override {
    for (const auto& e : executables) {
      if (e == path) return true;
    }
    return false;
  }
  std::vector<std::string> ProcessCmdline() override { return cmdline; }
  std::map<std::string, int> bundles;  // agent bundle dir -> its fd; others fail
  std::vector<int> kept_fds;           // KeepAcrossExec calls
  int OpenAgentBundle(const std::string& dir, std::string* why) override {
    auto it = bundles.find(dir);
    if (it != bundles.end()) return it->second;
    *why = "No such file or directory";
    return -1;
  }
  bool KeepAcrossExec(int fd) override {
    kept_fds.push_back(fd);
    return true;
  }
  // ReadTokenKey's answers: path -> key; others fail with "No such file".
  std::map<std::string, std::string> token_keys;
  bool ReadTokenKey(const std::string& path, std::string* key, std::string* err) override {
    auto it = token_keys.find(path);
    if (it == token_keys.end()) {
      *err = "plugstack.conf: token_key '" + path + "': No such file or directory";
      return false;
    }
    *key = it->second;
    return true;
  }
  std::vector<std::string> handed;  // HandToTask's contents; fd = 100 + index
  int HandToTask(const std::string& content, std::string*) override {
    handed.push_back(content);
    return 99 + static_cast<int>(handed.size());
  }
  std::vector<std::string> host_runners;  // StartHostRunner's programs
  std::string host_runner_error;          // non-empty: StartHostRunner fails with it
  int StartHostRunner(const std::string& program, std::string* err) override {
    host_runners.push_back(program);
    if (!host_runner_error.empty()) {
      *err = host_runner_error;
      return -1;
    }
    return 77;
  }
  std::vector<std::string> listening_runners;  // StartListeningHostRunner's programs
  bool StartListeningHostRunner(const std::string& program, const std::string& prefix, std::string* name,
                                std::string* err) override {
    listening_runners.push_back(program);
    if (!host_runner_error.empty()) {
      *err = host_runner_error;
      return false;
    }
    *name = "@" + prefix + ".0123";
    return true;
  }
  long ParentPid() override { return parent_pid; }
  SlurmRelease release = {24, 11};
  SlurmRelease Release() override { return release; }
  std::map<uint32_t, int64_t> end_times;  // job id -> end time; others: Slurm does not say
  std::vector<uint32_t> end_time_asked;
  bool JobEndTime(uint32_t job_id, int64_t* end_time) override {
    end_time_asked.push_back(job_id);
    auto it = end_times.find(job_id);
    if (it == end_times.end()) return false;
    *end_time = it->second;
    return true;
  }
  std::map<uint32_t, TargetJob> jobs;  // LoadJob's answers; others: no such job
  std::string load_job_error;          // set: LoadJob fails with it (Slurm unreachable)
  std::vector<uint32_t> jobs_loaded;
  bool LoadJob(uint32_t job_id, TargetJob* job, std::string* err) override {
    jobs_loaded.push_back(job_id);
    if (!load_job_error.empty()) {
      *err = load_job_error;
      return false;
    }
    auto it = jobs.find(job_id);
    *job = it != jobs.end() ? it->second : TargetJob{};
    job->job_id = job_id;
    return true;
  }
  uint32_t uid = 1000;
  uint32_t UserId() override { return uid; }
  int srun_exit_code = -1;  // ExitSrun's code; -1: not called (the fake returns)
  void ExitSrun(int code) override { srun_exit_code = code; }
  std::vector<std::string> cancelled;  // CancelJobsNamed's names
  std::string cancel_error;            // non-empty: CancelJobsNamed fails with it
  bool CancelJobsNamed(const std::string& name, std::string* err) override {
    cancelled.push_back(name);
    if (cancel_error.empty()) return true;
    *err = cancel_error;
    return false;
  }
};

class FakeNodes : public NodeDirectory {
 public:
  std::map<std::string, std::string> dns;        // name -> address
  std::map<std::string, std::string> node_addr;  // Slurm NodeAddr
  int resolve_calls = 0;
  int slurm_calls = 0;

  bool FirstHost(const std::string& nodelist, std::string* host) override {
    // Enough of Slurm's syntax for tests: "n[1-3]" -> "n1", "a,b" -> "a".
    std::string list = nodelist.substr(0, nodelist.find(','));
    size_t open = list.find('[');
    if (open == std::string::npos) {
      *host = list;
      return !list.empty();
    }
    size_t end = list.find_first_of("-,]", open + 1);
    *host = list.substr(0, open) + list.substr(open + 1, end - open - 1);
    return true;
  }
  bool FirstHosts(const std::string& nodelist, size_t limit, std::string* hosts) override {
    // Tests give plain lists ("a,b,c").
    hosts->clear();
    size_t pos = 0, n = 0;
    while (pos <= nodelist.size() && n < limit) {
      size_t end = std::min(nodelist.find(',', pos), nodelist.size());
      if (end > pos) *hosts += (n++ ? "," : "") + nodelist.substr(pos, end - pos);
      pos = end + 1;
    }
    return !hosts->empty();
  }
  bool Resolve(const std::string& host, std::string* address, std::string* why) override {
    ++resolve_calls;
    auto it = dns.find(host);
    if (it == dns.end()) {
      *why = "getaddrinfo(" + host + "): Name or service not known";
      return false;
    }
    *address = it->second;
    return true;
  }
  bool SlurmNodeAddr(const std::string& node, std::string* address, std::string* why) override {
    ++slurm_calls;
    auto it = node_addr.find(node);
    if (it == node_addr.end()) {
      *why = "slurm_load_node_single(" + node + "): Invalid node name specified";
      return false;
    }
    *address = it->second;
    return true;
  }
};

}  // namespace elastic::spank
