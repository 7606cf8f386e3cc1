// `elasticrun status JOBID[.STEP]` (launcher/status_target.h): the argument a user
// types and scontrol's answers about a job and its steps. Whatever the text: a
// parsed argument prints back to the same text (no sign, no leading zeros kept
// aside); a failure names what is wrong; a plan's port is a port and its refusal
// comes with a message.
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "launcher/status_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace elastic;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string err;
  JobStepArg arg;
  if (ParseJobStepArg(text, &arg, &err)) {
    JobStepArg again;
    std::string printed = arg.step_id ? fmt::format("{}.{}", arg.job_id, *arg.step_id) : std::to_string(arg.job_id);
    if (arg.job_id == 0 || !ParseJobStepArg(printed, &again, &err) || again.job_id != arg.job_id ||
        again.step_id != arg.step_id)
      std::abort();
  } else if (err.empty()) {
    std::abort();
  }
  SlurmJobFacts job;
  err.clear();
  bool found = ParseScontrolJob(text, &job, &err);
  if (!found && err.empty()) std::abort();
  std::vector<SlurmStepFacts> steps;
  err.clear();
  if (!ParseScontrolSteps(text, &steps, &err) && err.empty()) std::abort();
  JobStepArg asked{job.job_id == 0 ? 1u : job.job_id, std::nullopt};
  StatusTarget target;
  err.clear();
  StatusRefusal refusal = PlanStatusTarget(found, job, steps, asked, job.user_id, {}, &target, &err);
  if (refusal == StatusRefusal::kNone ? (target.port < 1 || target.port > 65535 || target.rdzv_id.empty())
                                      : err.empty())
    std::abort();
  return 0;
}
