#include "launcher/status_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "common/endpoint.h"
#include "common/log_escape.h"
#include "common/parse.h"
#include "common/rdzv_port.h"

namespace elastic {
namespace {

// Slurm's largest job id it issues (NO_VAL and INFINITE are above), and its
// largest numbered step (SLURM_MAX_NORMAL_STEP_ID).
constexpr long long kMaxJobId = 0xfffffffdLL;
constexpr long long kMaxStepId = 0xfffffeffLL;

// Where `key` (with its '=') starts a field: at the start or after a space.
std::optional<size_t> FieldValue(std::string_view line, std::string_view key) {
  for (size_t pos = line.find(key); pos != std::string_view::npos; pos = line.find(key, pos + 1))
    if (pos == 0 || line[pos - 1] == ' ') return pos + key.size();
  return std::nullopt;
}

std::string Token(std::string_view line, std::string_view key) {
  std::optional<size_t> start = FieldValue(line, key);
  if (!start) return "";
  size_t end = line.find(' ', *start);
  std::string value(line.substr(*start, end == std::string_view::npos ? std::string_view::npos : end - *start));
  return value == "(null)" ? "" : value;
}

bool Digits(std::string_view text, long long max, long long* out) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  return ParseInt(text, 0, max, out);
}

}  // namespace

bool ParseJobStepArg(std::string_view text, JobStepArg* out, std::string* err) {
  auto fail = [&] {
    *err = fmt::format("'{}' is not a job: give JOBID or JOBID.STEP (as squeue shows them, e.g. 812 or 812.0)",
                       EscapeForLog(text, 64));
    return false;
  };
  size_t dot = text.find('.');
  long long job = 0, step = 0;
  if (!Digits(text.substr(0, dot), kMaxJobId, &job) || job == 0) return fail();
  JobStepArg arg;
  arg.job_id = static_cast<uint32_t>(job);
  if (dot != std::string_view::npos) {
    if (!Digits(text.substr(dot + 1), kMaxStepId, &step)) return fail();
    arg.step_id = static_cast<uint32_t>(step);
  }
  *out = arg;
  return true;
}

bool ParseScontrolJob(std::string_view text, SlurmJobFacts* out, std::string* err) {
  std::string_view line = text.substr(0, text.find('\n'));
  auto fail = [&](std::string why) {
    *err = fmt::format("{} in scontrol's answer '{}'", why, EscapeForLog(line, 120));
    return false;
  };
  if (line.rfind("JobId=", 0) != 0) return fail("no JobId= at its start");
  SlurmJobFacts job;
  long long id = 0;
  if (!Digits(Token(line, "JobId="), kMaxJobId, &id)) return fail("a bad JobId");
  job.job_id = static_cast<uint32_t>(id);
  // UserId=NAME(UID); a user unknown to the controller's host prints as UID(UID).
  std::string user = Token(line, "UserId=");
  size_t open = user.rfind('(');
  long long uid = 0;
  if (open == std::string::npos || user.back() != ')' ||
      !Digits(std::string_view(user).substr(open + 1, user.size() - open - 2), 0xffffffffLL, &uid))
    return fail("no UserId=NAME(UID)");
  job.user = user.substr(0, open);
  job.user_id = static_cast<uint32_t>(uid);
  job.state = Token(line, "JobState=");
  if (job.state.empty()) return fail("no JobState=");
  *out = std::move(job);
  return true;
}

bool ParseScontrolSteps(std::string_view text, std::vector<SlurmStepFacts>* out, std::string* err) {
  std::vector<SlurmStepFacts> steps;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (line.starts_with("No job steps exist")) continue;  // scontrol's words for none
    auto fail = [&](std::string why) {
      *err = fmt::format("{} in scontrol's answer '{}'", why, EscapeForLog(line, 120));
      return false;
    };
    if (line.rfind("StepId=", 0) != 0) return fail("no StepId= at its start");
    std::string id = Token(line, "StepId=");
    size_t dot = id.find('.');
    // A heterogeneous job's component prints as JOBID+K.STEP: the job is JOBID.
    long long job = 0;
    if (dot == std::string::npos || !Digits(id.substr(0, std::min(dot, id.find('+'))), kMaxJobId, &job))
      return fail("a bad StepId");
    SlurmStepFacts step;
    step.job_id = static_cast<uint32_t>(job);
    step.step = id.substr(dot + 1);
    long long n = 0;
    if (Digits(step.step, kMaxStepId, &n)) step.step_id = static_cast<uint32_t>(n);
    step.state = Token(line, "State=");
    step.nodelist = Token(line, "NodeList=");
    step.resv_ports = Token(line, "ResvPorts=");
    if (std::optional<size_t> at = FieldValue(line, "SubmitLine=")) step.submit_line = std::string(line.substr(*at));
    steps.push_back(std::move(step));
  }
  *out = std::move(steps);
  return true;
}

bool SlurmJobFinished(std::string_view state) {
  for (std::string_view s : {"COMPLETED", "COMPLETING", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                             "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"})
    if (state == s) return true;
  return false;
}

StatusRefusal PlanStatusTarget(bool found, const SlurmJobFacts& job, const std::vector<SlurmStepFacts>& steps,
                               const JobStepArg& arg, uint32_t uid, const StatusOverrides& given,
                               StatusTarget* target, std::string* err) {
  std::string asked = arg.step_id ? fmt::format("{}.{}", arg.job_id, *arg.step_id) : std::to_string(arg.job_id);
  if (!found) {
    *err = fmt::format("job {}: Slurm knows no such job (a typo, or it ended long enough ago to be "
                       "forgotten: MinJobAge)", arg.job_id);
    return StatusRefusal::kNoSuchJob;
  }
  if (SlurmJobFinished(job.state)) {
    *err = fmt::format("job {} has finished ({}): there is no live status; its event record "
                       "(--elastic-events, LOG_DIR/events.jsonl) tells what happened", arg.job_id, job.state);
    return StatusRefusal::kFinished;
  }
  if (job.state != "RUNNING") {
    *err = fmt::format("job {} is not running ({}): ask again once it runs", arg.job_id, job.state);
    return StatusRefusal::kNotRunning;
  }
  if (job.user_id != uid) {
    // Nothing of the job (its nodes, ports) is said to another user.
    *err = fmt::format("job {} belongs to another user ({}): only its owner may see its status", arg.job_id,
                       job.user);
    return StatusRefusal::kAnotherUser;
  }
  const SlurmStepFacts* chosen = nullptr;
  std::string running;
  for (const SlurmStepFacts& s : steps) {
    if (!s.step_id || s.job_id != arg.job_id || s.state != "RUNNING") continue;
    running += (running.empty() ? "" : ", ") + fmt::format("{}.{}", arg.job_id, *s.step_id);
    if (arg.step_id) {
      if (*s.step_id == *arg.step_id) chosen = &s;
      continue;
    }
    // The first elastic step; where Slurm does not show command lines, the first step.
    bool elastic = SubmitLineIsElastic(s.submit_line);
    bool better = chosen == nullptr || (elastic && !SubmitLineIsElastic(chosen->submit_line)) ||
                  (elastic == SubmitLineIsElastic(chosen->submit_line) && *s.step_id < *chosen->step_id);
    if (better) chosen = &s;
  }
  if (chosen == nullptr) {
    *err = arg.step_id ? fmt::format("step {} is not running ({})", asked,
                                     running.empty() ? fmt::format("job {} runs no srun step now", arg.job_id)
                                                     : "the job's running steps: " + running)
                       : fmt::format("job {} runs no srun step now (its elastic step has not started, or has "
                                     "ended)", arg.job_id);
    return StatusRefusal::kNoStep;
  }
  StatusTarget t;
  t.job_id = arg.job_id;
  t.step_id = *chosen->step_id;
  t.nodelist = chosen->nodelist;
  std::optional<std::string> id = LastLongOption(chosen->submit_line, "elastic-rdzv-id");
  t.rdzv_id = given.rdzv_id ? *given.rdzv_id
              : id && !id->empty() ? *id
                                   : fmt::format("{}.{}", t.job_id, t.step_id);
  long long port = 0;
  Endpoint endpoint;
  std::string ignored;
  if (given.port) {
    t.port = *given.port;
    t.port_source = "given";
  } else if (std::optional<std::string> p = LastLongOption(chosen->submit_line, "elastic-rdzv-port");
             p && ParseInt(*p, 1, 65535, &port)) {
    t.port = static_cast<int>(port);
    t.port_source = "--elastic-rdzv-port";
  } else if (std::optional<std::string> e = LastLongOption(chosen->submit_line, "elastic-rdzv-endpoint");
             e && ParseEndpoint("--elastic-rdzv-endpoint", *e, &endpoint, &ignored) && endpoint.port) {
    t.port = *endpoint.port;
    t.port_source = "--elastic-rdzv-endpoint";
  } else if (ParseInt(chosen->resv_ports.substr(0, chosen->resv_ports.find_first_of("-,")), 1, 65535, &port)) {
    t.port = static_cast<int>(port);
    t.port_source = "the step's reserved ports";
  } else {
    t.port = DerivedRdzvPort(t.job_id, t.step_id);
    t.port_source = fmt::format("derived from job {} step {} in {}-{}", t.job_id, t.step_id, kDerivedRdzvPortLo,
                                kDerivedRdzvPortHi);
  }
  *target = std::move(t);
  return StatusRefusal::kNone;
}

}  // namespace elastic
