// What --elastic-join reads of the target job from Slurm (spank_plugin/join_target.h):
// its steps' srun lines, node lists and reserved ports. Input lines, per step:
//   3k srun line   3k+1 node list   3k+2 reserved ports
// Invariants: a plan has a port in 1..65535, a node and a run id; a refusal says why
// and names the job.
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_input.h"
#include "spank_plugin/join_target.h"
#include "testing/spank_api_fake.h"

using namespace elastic::spank;
using elastic::fuzz::Field;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  elastic::fuzz::FuzzInput in(data, size);
  std::vector<std::string> f = in.Lines();
  TargetJob job;
  job.found = true;
  job.job_id = 4321;
  job.user_id = 7;
  job.state = TargetState::kRunning;
  for (size_t i = 0; i + 2 < f.size() && i < 24; i += 3)
    job.steps.push_back({static_cast<uint32_t>(i / 3), Field(f, i + 1), Field(f, i + 2), Field(f, i)});
  job.job_elastic = !f.empty() && f.size() % 2 == 0;
  (void)elastic::SubmitLineIsElastic(Field(f, 0));
  FakeNodes nodes;
  JoinPlan plan;
  std::string err;
  if (PlanJoin(job, 7, PluginConfig{}, nodes, &plan, &err) == JoinRefusal::kNone) {
    if (plan.port < 1 || plan.port > 65535 || plan.rdzv_id.empty()) std::abort();
  } else if (err.find("--elastic-join=4321") == std::string::npos) {
    std::abort();
  }
  return 0;
}
