// The shell of `elasticrun status JOBID[.STEP]` (status_target.h): scontrol for the
// job, its steps and their nodes, then the question a latecomer agent asks.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "common/event_loop.h"
#include "common/log_escape.h"
#include "common/net.h"
#include "common/unique_fd.h"
#include "launcher/scontrol.h"
#include "launcher/slurm_node_state.h"
#include "launcher/status_target.h"
#include "rendezvous/host_discovery.h"

namespace elastic {
namespace {

std::string ReadText(const std::string& path) {
  std::string text;
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  char buf[4096];
  for (ssize_t n; fd && text.size() < kScontrolMaxOutput && (n = read(fd.get(), buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(n));
  return text;
}

// A private directory for scontrol's output and messages, gone with it.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/elasticrun-status.XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// One scontrol run, waited for on a loop of its own (the command is short-lived
// and has nothing else to do). *output: stdout; on failure *why says what failed,
// with scontrol's own first line of complaint (*said).
bool RunScontrol(const ScratchDir& dir, const std::vector<std::string>& env, int timeout_ms,
                 const std::string& args, std::string* output, std::string* why, std::string* said) {
  ScontrolSpec spec;
  spec.timeout = std::chrono::milliseconds(timeout_ms);
  spec.log_path = dir.path() + "/scontrol.log";
  spec.output_path = dir.path() + "/scontrol.out";
  spec.env = env;
  spec.label = "scontrol " + args;
  sigprocmask(SIG_SETMASK, nullptr, &spec.child_mask);
  // Each run's messages alone (the runner appends).
  UniqueFd(open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  EventLoop loop;
  Scontrol scontrol(loop, spec);
  std::optional<bool> ok;
  scontrol.Run(args, [&](bool passed, std::string out, std::string failed) {
    ok = passed;
    *output = std::move(out);
    *why = std::move(failed);
  });
  while (!ok) loop.RunOnce(std::chrono::milliseconds(100));
  // The log holds a header line, then scontrol's stderr: its first line of complaint.
  std::string log = ReadText(spec.log_path);
  size_t nl = log.find('\n');
  std::string rest = nl == std::string::npos ? "" : log.substr(nl + 1);
  *said = EscapeForLog(rest.substr(0, rest.find('\n')), 200);
  return *ok;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!line.empty()) out.push_back(line);
    start = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

}  // namespace

bool FindJobRendezvous(const JobStepArg& arg, const StatusOverrides& given, const std::vector<std::string>& env,
                       int timeout_ms, FoundRendezvous* out, StatusRefusal* refusal, std::string* err) {
  *refusal = StatusRefusal::kNone;
  ScratchDir dir;
  if (dir.path().empty()) {
    *err = "cannot make a private directory for scontrol's answers in $TMPDIR or /tmp";
    return false;
  }
  std::string text, why, said;
  auto failed = [&](const std::string& what) {
    *err = fmt::format("scontrol {}: {}{}", what, why, said.empty() ? "" : ": " + said);
    return false;
  };
  // The job: known? finished? whose?
  std::string show_job = fmt::format("--oneliner show job {}", arg.job_id);
  bool found = RunScontrol(dir, env, timeout_ms, show_job, &text, &why, &said);
  if (!found && said.find("Invalid job id") == std::string::npos) return failed(show_job);
  SlurmJobFacts job;
  if (found && !ParseScontrolJob(text, &job, err)) return false;
  // Its steps, only once it is this user's running job.
  std::vector<SlurmStepFacts> steps;
  if (found && job.state == "RUNNING" && job.user_id == getuid()) {
    std::string show_step = fmt::format("--oneliner show step {}", arg.job_id);
    // No step yet: scontrol says so (on stdout or, failing, on stderr): none.
    if (!RunScontrol(dir, env, timeout_ms, show_step, &text, &why, &said)) {
      if (said.find("No job steps exist") == std::string::npos) return failed(show_step);
      text.clear();
    }
    if (!ParseScontrolSteps(text, &steps, err)) return false;
  }
  StatusTarget target;
  *refusal = PlanStatusTarget(found, job, steps, arg, getuid(), given, &target, err);
  if (*refusal != StatusRefusal::kNone) return false;
  // Its first nodes, and where Slurm reaches them. The node list passes through
  // /bin/sh: Slurm's host lists hold no quotes, but quote it anyway.
  std::string hostnames = fmt::format("show hostnames '{}'", target.nodelist);
  if (target.nodelist.find('\'') != std::string::npos ||
      !RunScontrol(dir, env, timeout_ms, hostnames, &text, &why, &said))
    return failed(hostnames);
  std::vector<std::string> nodes = Lines(text);
  if (nodes.size() > kStatusCandidates) nodes.resize(kStatusCandidates);
  std::string names;
  for (const std::string& n : nodes) names += (names.empty() ? "" : ",") + n;
  std::vector<std::string> addresses;
  std::string show_nodes = fmt::format("--oneliner show node '{}'", names);
  bool have_addrs = !nodes.empty() && RunScontrol(dir, env, timeout_ms, show_nodes, &text, &why, &said);
  for (const std::string& n : nodes) {
    // As the plugin chose the host (spank_plugin/task_env.h): the name, else NodeAddr.
    SocketAddress resolved;
    std::string ignored;
    std::string addr = n;  // numeric below, as AskPeers needs
    if (ResolveAddress(n, target.port, &resolved, &ignored)) {
      addr = AddressText(resolved.storage);
    } else if (have_addrs) {
      for (const std::string& line : Lines(text)) {
        SlurmNodeState node;
        if (ParseScontrolNode(line, &node, &ignored) && node.name == n && !node.addr.empty()) addr = node.addr;
      }
    }
    addresses.push_back(addr);
  }
  // Each ask lasts at most 2 s, as a latecomer's (rendezvous/c10d_rendezvous.cc):
  // the members' failover sockets accept and stay silent. Only silent sockets and
  // no host: a takeover may be under way, asked again until the deadline.
  std::vector<PeerAnswer> answers;
  std::optional<size_t> host;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  do {
    answers = AskPeers(addresses, target.port, target.rdzv_id, std::min(timeout_ms, 2000));
    for (PeerAnswer wanted : {PeerAnswer::kRunning, PeerAnswer::kFresh}) {
      for (size_t i = 0; i < answers.size() && !host; ++i)
        if (answers[i] == wanted) host = i;
      if (host) break;
    }
  } while (!host && std::count(answers.begin(), answers.end(), PeerAnswer::kSilent) > 0 &&
           std::chrono::steady_clock::now() < deadline);
  if (!host) {
    std::string seen;
    for (size_t i = 0; i < answers.size(); ++i)
      seen += fmt::format("{}{} {}", i ? ", " : "", nodes[i], PeerAnswerName(answers[i]));
    *err = fmt::format("no host of run {} answers on port {} ({}) of step {}.{}'s first nodes ({}): has its "
                       "elastic step ended, or was it started with its own --elastic-rdzv-id or port (give "
                       "them: --rdzv-id=ID --rdzv-port=PORT)?",
                       target.rdzv_id, target.port, target.port_source, target.job_id, target.step_id,
                       seen.empty() ? "none" : seen);
    return false;
  }
  out->target = target;
  out->node = nodes[*host];
  out->address = addresses[*host];
  out->moved = *host != 0;
  return true;
}

}  // namespace elastic
