// The real SpankApi and NodeDirectory over Slurm's spank.h and libslurm. The
// libslurm functions are resolved at load time from the host process (srun and
// slurmstepd carry them), so the .so does not link libslurm itself.
#include "spank_plugin/spank_api_slurm.h"
#include "spank_plugin/step_token.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <iterator>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>


static_assert(elastic::spank::kBatchStep == SLURM_BATCH_SCRIPT);
static_assert(elastic::spank::kExternStep == SLURM_EXTERN_CONT);
static_assert(elastic::spank::kInteractiveStep == SLURM_INTERACTIVE_STEP);

namespace elastic::spank {

Context SlurmSpankApi::GetContext() {
  switch (spank_context()) {
    case S_CTX_LOCAL: return Context::kLocal;
    case S_CTX_REMOTE: return Context::kRemote;
    case S_CTX_ALLOCATOR: return Context::kAllocator;
    case S_CTX_SLURMD: return Context::kSlurmd;
    case S_CTX_JOB_SCRIPT: return Context::kJobScript;
    default: return Context::kError;
  }
}

bool SlurmSpankApi::GetItem(Item item, uint32_t* value) {
  spank_item_t which;
  switch (item) {
    case Item::kJobId: which = S_JOB_ID; break;
    case Item::kStepId: which = S_JOB_STEPID; break;
    case Item::kNodeId: which = S_JOB_NODEID; break;
    case Item::kNnodes: which = S_JOB_NNODES; break;
    case Item::kLocalTaskCount: which = S_JOB_LOCAL_TASK_COUNT; break;
    case Item::kTotalTaskCount: which = S_JOB_TOTAL_TASK_COUNT; break;
    case Item::kJobUid: {
      uid_t uid = 0;  // S_JOB_UID takes a uid_t*
      if (spank_get_item(sp_, S_JOB_UID, &uid) != ESPANK_SUCCESS) return false;
      *value = static_cast<uint32_t>(uid);
      return true;
    }
    case Item::kLocalTaskId: {
      int id = -1;  // S_TASK_ID takes an int*
      if (spank_get_item(sp_, S_TASK_ID, &id) != ESPANK_SUCCESS || id < 0) return false;
      *value = static_cast<uint32_t>(id);
      return true;
    }
    default: return false;
  }
  uint32_t out = 0;
  if (spank_get_item(sp_, which, &out) != ESPANK_SUCCESS) return false;
  *value = out;
  return true;
}

bool SlurmSpankApi::GetArgv(std::vector<std::string>* argv) {
  int argc = 0;
  char** args = nullptr;
  if (spank_get_item(sp_, S_JOB_ARGV, &argc, &args) != ESPANK_SUCCESS || args == nullptr) {
    return false;
  }
  argv->clear();
  for (int i = 0; i < argc && args[i] != nullptr; ++i) argv->emplace_back(args[i]);
  return true;
}

bool SlurmSpankApi::GetEnv(const std::string& name, std::string* value) {
  if (spank_context() != S_CTX_REMOTE) {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return false;
    *value = v;
    return true;
  }
  std::string buf(4096, '\0');
  while (true) {
    spank_err_t rc = spank_getenv(sp_, name.c_str(), buf.data(), static_cast<int>(buf.size()));
    if (rc == ESPANK_SUCCESS) break;
    if (rc != ESPANK_NOSPACE || buf.size() >= (1u << 20)) return false;
    buf.resize(buf.size() * 4);
  }
  buf.resize(std::strlen(buf.c_str()));
  *value = buf;
  return true;
}

bool SlurmSpankApi::SetEnv(const std::string& name, const std::string& value) {
  if (spank_context() != S_CTX_REMOTE) return ::setenv(name.c_str(), value.c_str(), 1) == 0;
  return spank_setenv(sp_, name.c_str(), value.c_str(), 1) == ESPANK_SUCCESS;
}

bool SlurmSpankApi::UnsetEnv(const std::string& name) {
  if (spank_context() != S_CTX_REMOTE) return ::unsetenv(name.c_str()) == 0;
  return spank_unsetenv(sp_, name.c_str()) == ESPANK_SUCCESS;
}

bool SlurmSpankApi::WrapTask(const std::string& launcher, bool* prepended, std::string* err) {
#if ELASTIC_SLURM_HAS_PREPEND_ARGV
  const char* args[] = {launcher.c_str(), nullptr};
  if (spank_prepend_task_argv(sp_, 1, args) != ESPANK_SUCCESS) {
    *err = "spank_prepend_task_argv failed";
    return false;
  }
  *prepended = true;
  return true;
#else
  // Slurm < 23.11: S_JOB_ARGV in task_init is the very array slurmstepd passes
  // to execve (docs/design.md). Replace argv[0] in place; the copy is
  // never freed (the process execs right after).
  int argc = 0;
  char** args = nullptr;
  if (spank_get_item(sp_, S_JOB_ARGV, &argc, &args) != ESPANK_SUCCESS || args == nullptr ||
      argc < 1) {
    *err = "Slurm did not give the task's argv";
    return false;
  }
  char* copy = ::strdup(launcher.c_str());
  if (copy == nullptr) {
    *err = "out of memory";
    return false;
  }
  args[0] = copy;
  *prepended = false;
  return true;
#endif
}

void SlurmSpankApi::Error(const std::string& message) {
  slurm_error("elastic: %s", message.c_str());
  if (spank_context() == S_CTX_REMOTE) {
    // In task_init the task's stderr is already srun's: say it there too.
    std::string line = "elastic: error: " + message + "\n";
    ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
  }
}

void SlurmSpankApi::Info(const std::string& message) {
  slurm_info("elastic: %s", message.c_str());
}

void SlurmSpankApi::ExitTask(int code) { ::_exit(code); }

bool SlurmSpankApi::IsExecutable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

int SlurmSpankApi::OpenAgentBundle(const std::string& dir, std::string* why) {
  int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    *why = ::strerror(errno);
    return -1;
  }
  for (const char* entry : {"elasticrun", "ld-linux-x86-64.so.2", "bin/elasticrun"}) {
    if (::faccessat(fd, entry, X_OK, 0) != 0) {
      *why = std::string(entry) + ": " + ::strerror(errno);
      ::close(fd);
      return -1;
    }
  }
  return fd;
}

bool SlurmSpankApi::KeepAcrossExec(int fd) {
  int flags = ::fcntl(fd, F_GETFD);
  return flags >= 0 && ::fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) == 0;
}

bool SlurmSpankApi::ReadTokenKey(const std::string& path, std::string* key, std::string* err) {
  return spank::ReadTokenKey(path, key, err);
}

int SlurmSpankApi::HandToTask(const std::string& content, std::string* err) {
  return MakeSealedMemfd("elastic-rdzv-token", content, err);
}

namespace {

// The runner is the grandchild of the task's process (the middle process exits at
// once): not the task's child, so neither slurmstepd's task nor elasticrun, a
// child subreaper, ever sees it; in a session of its own, so the signals Slurm
// sends the task's group (scancel --signal) do not reach it; in the step's cgroup,
// so Slurm's end of the step does. As the job's user and groups, with the node's
// PATH; fds[i] becomes its descriptor 3 + i, nothing else stays open but stdio.
bool ForkRunnerAsUser(spank_t sp, const std::vector<std::string>& args, const std::vector<int>& fds,
                      std::string* err) {
  uid_t uid = 0;
  gid_t gid = 0;
  gid_t* gids = nullptr;
  int ngids = 0;
  if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
    *err = "Slurm did not give the job's user and group";
    return false;
  }
  if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &gids, &ngids) != ESPANK_SUCCESS) {
    gids = nullptr;
    ngids = 0;
  }
  // Everything the child uses is made before fork.
  const char* node_path = getenv("PATH");
  std::string path_var = std::string("PATH=") + (node_path ? node_path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  const char* envp[] = {path_var.c_str(), nullptr};
  bool drop = geteuid() == 0 && uid != 0;
  pid_t middle = fork();
  if (middle < 0) {
    *err = fmt::format("fork: {}", strerror(errno));
    return false;
  }
  if (middle == 0) {
    if (fork() != 0) _exit(0);
    setsid();
    if (drop && (setgroups(static_cast<size_t>(ngids), gids) != 0 || setgid(gid) != 0 || setuid(uid) != 0 ||
                 getuid() != uid)) {
      _exit(126);
    }
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0 && null != 0) {
      dup2(null, 0);
      close(null);
    }
    // Out of the way first (a descriptor may sit where another one goes), then in place.
    std::vector<int> high;
    for (int fd : fds) {
      int h = fcntl(fd, F_DUPFD_CLOEXEC, 100);
      if (h < 0) _exit(126);
      high.push_back(h);
    }
    for (size_t i = 0; i < high.size(); ++i)
      if (dup2(high[i], 3 + static_cast<int>(i)) < 0) _exit(126);  // dup2 clears close-on-exec
    close_range(3 + static_cast<unsigned>(high.size()), ~0U, 0);
    execve(argv[0], const_cast<char* const*>(argv.data()), const_cast<char* const*>(envp));
    dprintf(2, "elastic: cannot start the host runner %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *err = "fork of the runner failed";
    return false;
  }
  return true;
}

}  // namespace

int SlurmSpankApi::StartHostRunner(const std::string& program, std::string* err) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    *err = fmt::format("socketpair: {}", strerror(errno));
    return -1;
  }
  bool started = ForkRunnerAsUser(sp_, {program, "host-runner", "--fd=3"}, {sv[0]}, err);
  close(sv[0]);
  if (!started) {
    close(sv[1]);
    return -1;
  }
  return sv[1];
}

bool SlurmSpankApi::StartListeningHostRunner(const std::string& program, const std::string& prefix,
                                             std::string* name, std::string* err) {
  unsigned char random[8];
  if (getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
    *err = fmt::format("getrandom: {}", strerror(errno));
    return false;
  }
  std::string at = "@" + prefix + ".";
  for (unsigned char c : random) at += fmt::format("{:02x}", c);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string abstract = at.substr(1);
  if (abstract.size() > sizeof(addr.sun_path) - 1) {
    *err = fmt::format("the socket name '{}' is too long", at);
    return false;
  }
  memcpy(addr.sun_path + 1, abstract.data(), abstract.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract.size());
  int listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener < 0 || bind(listener, reinterpret_cast<const sockaddr*>(&addr), len) != 0 || listen(listener, 8) != 0) {
    *err = fmt::format("a listening socket '{}': {}", at, strerror(errno));
    if (listener >= 0) close(listener);
    return false;
  }
  int task = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (task < 0) {
    *err = fmt::format("pidfd_open: {}", strerror(errno));
    close(listener);
    return false;
  }
  bool started = ForkRunnerAsUser(sp_, {program, "host-runner", "--listen-fd=3", "--task-pidfd=4"},
                                  {listener, task}, err);
  close(listener);
  close(task);
  if (started) *name = at;
  return started;
}

long SlurmSpankApi::ParentPid() { return static_cast<long>(getppid()); }

SlurmRelease SlurmSpankApi::Release() {
  return {static_cast<int>(SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER)),
          static_cast<int>(SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER))};
}

bool SlurmSpankApi::JobEndTime(uint32_t job_id, int64_t* end_time) {
  time_t end = 0;
  if (SlurmJobEndTime(job_id, &end) != SLURM_SUCCESS || end <= 0) return false;
  *end_time = static_cast<int64_t>(end);
  return true;
}

namespace {

// Slurm's names of the base job states (job_state_string is not in slurm.h).
std::string JobStateName(uint32_t state) {
  static const char* const kNames[] = {"PENDING",   "RUNNING",   "SUSPENDED", "COMPLETED",
                                       "CANCELLED", "FAILED",    "TIMEOUT",   "NODE_FAIL",
                                       "PREEMPTED", "BOOT_FAIL", "DEADLINE",  "OUT_OF_MEMORY"};
  uint32_t base = state & JOB_STATE_BASE;
  return base < std::size(kNames) ? kNames[base] : fmt::format("state {}", base);
}

// The job-level --elastic (sbatch/salloc --elastic[=X]) on the job's submit line,
// where Slurm keeps one (slurm_compat.h, SlurmJobSubmitLine: 26.05).
bool JobLevelElastic(const slurm_job_info_t& info, std::string* value) {
  std::string line = SlurmJobSubmitLine(info);
  std::string word, found;
  bool elastic = false;
  for (size_t pos = 0; pos < line.size();) {
    size_t end = std::min(line.find(' ', pos), line.size());
    word = line.substr(pos, end - pos);
    pos = end + 1;
    if (word == "--elastic" || word.starts_with("--elastic=")) {
      elastic = true;
      found = word == "--elastic" ? "" : word.substr(10);
    }
  }
  if (!elastic) return false;
  *value = found;
  std::string lower = found;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower != "off" && lower != "no" && lower != "0";
}

std::string OrEmpty(const char* text) { return text != nullptr ? text : ""; }

}  // namespace

bool SlurmSpankApi::LoadJob(uint32_t job_id, TargetJob* job, std::string* err) {
  *job = TargetJob{};
  job->job_id = job_id;
  job_info_msg_t* info = nullptr;
  if (SlurmLoadJob(job_id, &info) != SLURM_SUCCESS || info == nullptr) {
    int code = SlurmErrno();
    if (code == ESLURM_INVALID_JOB_ID) return true;  // found = false
    *err = fmt::format("slurm_load_job({}): {}", job_id, slurm_strerror(code));
    return false;
  }
  for (uint32_t i = 0; i < info->record_count; ++i) {
    const slurm_job_info_t& rec = info->job_array[i];
    job->found = true;
    job->user_id = rec.user_id;
    job->state_name = JobStateName(rec.job_state);
    switch (rec.job_state & JOB_STATE_BASE) {
      case JOB_PENDING: job->state = TargetState::kPending; break;
      case JOB_RUNNING: job->state = TargetState::kRunning; break;
      case JOB_SUSPENDED: job->state = TargetState::kSuspended; break;
      default: job->state = TargetState::kFinished; break;
    }
    job->job_elastic = JobLevelElastic(rec, &job->job_elastic_value);
    break;  // one record: a job id names one job (a het job's leader comes first)
  }
  slurm_free_job_info_msg(info);
  if (!job->found || job->state != TargetState::kRunning) return true;
  job_step_info_response_msg_t* steps = nullptr;
  if (SlurmGetJobSteps(job_id, &steps) != SLURM_SUCCESS || steps == nullptr) {
    *err = fmt::format("slurm_get_job_steps({}): {}", job_id, slurm_strerror(SlurmErrno()));
    return false;
  }
  for (uint32_t i = 0; i < steps->job_step_count; ++i) {
    const job_step_info_t& rec = steps->job_steps[i];
    uint32_t id = rec.step_id.step_id;
    if (rec.step_id.job_id != job_id || id == kBatchStep || id == kExternStep ||
        id == kInteractiveStep || (rec.state & JOB_STATE_BASE) != JOB_RUNNING)
      continue;
    job->steps.push_back({id, OrEmpty(rec.nodes), OrEmpty(rec.resv_ports), OrEmpty(rec.submit_line)});
  }
  slurm_free_job_step_info_response_msg(steps);
  return true;
}

uint32_t SlurmSpankApi::UserId() { return static_cast<uint32_t>(::getuid()); }

void SlurmSpankApi::ExitSrun(int code) { std::exit(code); }

// srun at its exit (slurm_spank_exit), no event loop: a child and a bounded wait.
bool SlurmSpankApi::CancelJobsNamed(const std::string& name, std::string* err) {
  std::string name_arg = "--name=" + name;
  std::string user_arg = fmt::format("--user={}", ::getuid());
  pid_t pid = ::fork();
  if (pid < 0) {
    *err = fmt::format("fork: {}", std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execlp("scancel", "scancel", name_arg.c_str(), user_arg.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  for (int waited_ms = 0;; waited_ms += 50) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      *err = fmt::format("waitpid: {}", std::strerror(errno));
      return false;
    }
    if (waited_ms >= 10000) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      *err = "scancel did not answer within 10 s";
      return false;
    }
    ::usleep(50 * 1000);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  *err = WIFEXITED(status) && WEXITSTATUS(status) == 127 ? "scancel not found on PATH"
                                                         : fmt::format("scancel failed (status {})", status);
  return false;
}

std::vector<std::string> SlurmSpankApi::ProcessCmdline() {
  std::vector<std::string> words;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string word;
  while (std::getline(in, word, '\0')) words.push_back(word);
  return words;
}

bool SlurmNodeDirectory::FirstHost(const std::string& nodelist, std::string* host) {
  HostlistPtr list = slurm_hostlist_create(nodelist.c_str());
  if (list == nullptr) return false;
  char* first = slurm_hostlist_shift(list);
  bool ok = first != nullptr;
  if (ok) *host = first;
  std::free(first);
  slurm_hostlist_destroy(list);
  return ok;
}

bool SlurmNodeDirectory::FirstHosts(const std::string& nodelist, size_t limit, std::string* hosts) {
  HostlistPtr list = slurm_hostlist_create(nodelist.c_str());
  if (list == nullptr) return false;
  hosts->clear();
  for (size_t i = 0; i < limit; ++i) {
    char* host = slurm_hostlist_shift(list);
    if (host == nullptr) break;
    if (!hosts->empty()) *hosts += ',';
    *hosts += host;
    std::free(host);
  }
  slurm_hostlist_destroy(list);
  return !hosts->empty();
}

bool SlurmNodeDirectory::Resolve(const std::string& host, std::string* address, std::string* why) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* result = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0) {
    *why = fmt::format("getaddrinfo({}): {}", host, ::gai_strerror(rc));
    return false;
  }
  std::string v6;
  for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (ai->ai_family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(ai->ai_addr);
      ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      *address = text;
      ::freeaddrinfo(result);
      return true;
    }
    if (ai->ai_family == AF_INET6 && v6.empty()) {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(ai->ai_addr);
      ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
      v6 = text;
    }
  }
  ::freeaddrinfo(result);
  if (v6.empty()) {
    *why = fmt::format("getaddrinfo({}): no IPv4 or IPv6 address", host);
    return false;
  }
  *address = v6;
  return true;
}

bool SlurmNodeDirectory::SlurmNodeAddr(const std::string& node, std::string* address,
                                       std::string* why) {
  node_info_msg_t* info = nullptr;
  std::string name = node;
  if (slurm_load_node_single(&info, name.data(), SHOW_ALL) != SLURM_SUCCESS || info == nullptr) {
    *why = fmt::format("slurm_load_node_single({}): {}", node, slurm_strerror(SlurmErrno()));
    return false;
  }
  bool ok = false;
  for (uint32_t i = 0; i < info->record_count; ++i) {
    const node_info_t& rec = info->node_array[i];
    if (rec.name != nullptr && node == rec.name && rec.node_addr != nullptr &&
        rec.node_addr[0] != '\0') {
      std::string resolve_why;
      // NodeAddr may itself be a name: resolve it if it is not an address.
      if (!Resolve(rec.node_addr, address, &resolve_why)) *address = rec.node_addr;
      ok = true;
      break;
    }
  }
  if (!ok) *why = fmt::format("Slurm has no NodeAddr for node {}", node);
  slurm_free_node_info_msg(info);
  return ok;
}

}  // namespace elastic::spank
