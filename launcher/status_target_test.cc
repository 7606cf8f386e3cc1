#include "launcher/status_target.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/rdzv_port.h"

namespace elastic {
namespace {

TEST(StatusTargetTest, ParsesJobStepArgument) {
  struct Row {
    const char* text;
    bool ok;
    uint32_t job;
    std::optional<uint32_t> step;
  };
  const Row rows[] = {
      {"812", true, 812, std::nullopt},
      {"812.0", true, 812, 0},
      {"812.31", true, 812, 31},
      {"4294967293", true, 4294967293u, std::nullopt},  // Slurm's largest job id
      {"4294967294", false, 0, std::nullopt},           // NO_VAL - 1: never a job
      {"0", false, 0, std::nullopt},
      {"", false, 0, std::nullopt},
      {"812.", false, 0, std::nullopt},
      {".0", false, 0, std::nullopt},
      {"812.batch", false, 0, std::nullopt},  // not an srun step: no rendezvous
      {"812_3", false, 0, std::nullopt},      // an array task: as squeue's JOBID column shows it
      {"+812", false, 0, std::nullopt},
      {"-1", false, 0, std::nullopt},
      {"812.0.1", false, 0, std::nullopt},
      {" 812", false, 0, std::nullopt},
      {"n1:29400", false, 0, std::nullopt},
  };
  for (const Row& r : rows) {
    JobStepArg arg;
    std::string err;
    ASSERT_EQ(ParseJobStepArg(r.text, &arg, &err), r.ok) << "'" << r.text << "': " << err;
    if (!r.ok) {
      EXPECT_NE(err.find(std::string("'") + r.text + "'"), std::string::npos) << err;
      EXPECT_NE(err.find("JOBID or JOBID.STEP"), std::string::npos) << err;
      continue;
    }
    EXPECT_EQ(arg.job_id, r.job) << r.text;
    EXPECT_EQ(arg.step_id, r.step) << r.text;
  }
}

TEST(StatusTargetTest, ParsesScontrolsJobLine) {
  struct Row {
    const char* name;
    const char* text;
    bool ok;
    SlurmJobFacts job;
    const char* error;
  };
  const Row rows[] = {
      {"22.05, running",
       "JobId=1 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 "
       "Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) NodeList=n[1-2]\n",
       true, {1, "root", 0, "RUNNING"}, ""},
      {"cancelled, another user", "JobId=77 JobName=train UserId=alice(1000) GroupId=alice(1000) JobState=CANCELLED",
       true, {77, "alice", 1000, "CANCELLED"}, ""},
      {"a user the controller's host does not know", "JobId=5 UserId=4242(4242) JobState=PENDING Reason=Resources",
       true, {5, "4242", 4242, "PENDING"}, ""},
      {"not a job", "slurm_load_jobs error: Invalid job id specified\n", false, {}, "no JobId="},
      {"no user", "JobId=5 JobState=RUNNING", false, {}, "no UserId="},
      {"no state", "JobId=5 UserId=a(1)", false, {}, "no JobState="},
      {"a bad id", "JobId=x UserId=a(1) JobState=RUNNING", false, {}, "a bad JobId"},
  };
  for (const Row& r : rows) {
    SlurmJobFacts job;
    std::string err;
    ASSERT_EQ(ParseScontrolJob(r.text, &job, &err), r.ok) << r.name << ": " << err;
    if (!r.ok) {
      EXPECT_NE(err.find(r.error), std::string::npos) << r.name << ": " << err;
      continue;
    }
    EXPECT_EQ(job.job_id, r.job.job_id) << r.name;
    EXPECT_EQ(job.user, r.job.user) << r.name;
    EXPECT_EQ(job.user_id, r.job.user_id) << r.name;
    EXPECT_EQ(job.state, r.job.state) << r.name;
  }
}

// Slurm 22.05's answer for a batch job with an srun step running and one waiting.
constexpr const char* kSteps2205 =
    "StepId=1.batch UserId=0 StartTime=2026-12-04T16:50:40 TimeLimit=UNLIMITED State=RUNNING Partition=main "
    "NodeList=n1 Nodes=1 CPUs=0 Tasks=1 Name=batch Network=(null) TRES=(null) ResvPorts=(null) "
    "CPUFreqReq=Default SrunHost:Pid=(null):0\n"
    "StepId=1.0 UserId=0 StartTime=2026-12-04T16:50:40 TimeLimit=UNLIMITED State=RUNNING Partition=main "
    "NodeList=n[1-2] Nodes=2 CPUs=2 Tasks=2 Name=sleep Network=(null) TRES=cpu=2,mem=0,node=2 ResvPorts=12001 "
    "CPUFreqReq=Default Dist=Cyclic SrunHost:Pid=n1:27485\n"
    "StepId=1.TDB UserId=0 StartTime=Unknown TimeLimit=UNLIMITED State=PENDING Partition=main NodeList=n[1-2] "
    "Nodes=2 CPUs=1 Tasks=1 Name=(null) Network=(null) TRES=(null) ResvPorts=(null) SrunHost:Pid=n1:27486\n";

TEST(StatusTargetTest, ParsesScontrolsStepLines) {
  std::vector<SlurmStepFacts> steps;
  std::string err;
  ASSERT_TRUE(ParseScontrolSteps(kSteps2205, &steps, &err)) << err;
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].step, "batch");
  EXPECT_FALSE(steps[0].step_id);
  EXPECT_EQ(steps[0].resv_ports, "");
  EXPECT_EQ(steps[1].step_id, 0u);
  EXPECT_EQ(steps[1].job_id, 1u);
  EXPECT_EQ(steps[1].state, "RUNNING");
  EXPECT_EQ(steps[1].nodelist, "n[1-2]");
  EXPECT_EQ(steps[1].resv_ports, "12001");
  EXPECT_EQ(steps[1].submit_line, "");
  EXPECT_EQ(steps[2].state, "PENDING");

  ASSERT_TRUE(ParseScontrolSteps("StepId=7+1.2 State=RUNNING NodeList=n3 SubmitLine=srun --elastic=2:4 x\n",
                                 &steps, &err))
      << err;
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].job_id, 7u);
  EXPECT_EQ(steps[0].submit_line, "srun --elastic=2:4 x");
  ASSERT_TRUE(ParseScontrolSteps("No job steps exist for this job\n", &steps, &err)) << err;
  EXPECT_TRUE(steps.empty());
  EXPECT_FALSE(ParseScontrolSteps("StepId=1 State=RUNNING", &steps, &err));
  EXPECT_NE(err.find("a bad StepId"), std::string::npos) << err;
  EXPECT_FALSE(ParseScontrolSteps("garbage\n", &steps, &err));
  EXPECT_NE(err.find("no StepId="), std::string::npos) << err;
}

SlurmStepFacts Step(uint32_t job, std::optional<uint32_t> id, const std::string& state, const std::string& nodes,
                    const std::string& ports = "", const std::string& line = "") {
  SlurmStepFacts s;
  s.job_id = job;
  s.step_id = id;
  s.step = id ? std::to_string(*id) : "batch";
  s.state = state;
  s.nodelist = nodes;
  s.resv_ports = ports;
  s.submit_line = line;
  return s;
}

TEST(StatusTargetTest, PlansTheTargetOrRefusesNamingWhy) {
  const SlurmJobFacts mine{812, "me", 1000, "RUNNING"};
  const std::vector<SlurmStepFacts> two_steps = {Step(812, std::nullopt, "RUNNING", "n1"),
                                                 Step(812, 0, "RUNNING", "n[1-4]"),
                                                 Step(812, 1, "RUNNING", "n[5-6]", "12001-12002")};
  struct Row {
    const char* name;
    bool found;
    SlurmJobFacts job;
    std::vector<SlurmStepFacts> steps;
    JobStepArg arg;
    StatusOverrides given;
    StatusRefusal refusal;
    const char* text;  // a part of the message (refused) or the port source (planned)
    uint32_t step = 0;
    int port = 0;
    const char* rdzv_id = "";
    const char* nodelist = "";
  };
  const int derived = DerivedRdzvPort(812, 0);
  const Row rows[] = {
      {"unknown job", false, {}, {}, {812, {}}, {}, StatusRefusal::kNoSuchJob, "job 812: Slurm knows no such job"},
      {"finished job", true, {812, "me", 1000, "COMPLETED"}, {}, {812, {}}, {}, StatusRefusal::kFinished,
       "job 812 has finished (COMPLETED)"},
      {"a finished job of another user: says it finished, nothing more", true, {812, "bob", 7, "TIMEOUT"}, {},
       {812, {}}, {}, StatusRefusal::kFinished, "finished (TIMEOUT)"},
      {"pending job", true, {812, "me", 1000, "PENDING"}, {}, {812, {}}, {}, StatusRefusal::kNotRunning,
       "job 812 is not running (PENDING)"},
      {"another user's running job", true, {812, "bob", 7, "RUNNING"}, two_steps, {812, {}}, {},
       StatusRefusal::kAnotherUser, "belongs to another user (bob)"},
      {"no srun step yet", true, mine, {Step(812, std::nullopt, "RUNNING", "n1")}, {812, {}}, {},
       StatusRefusal::kNoStep, "job 812 runs no srun step now"},
      {"the asked step is not running", true, mine, two_steps, {812, 7}, {}, StatusRefusal::kNoStep,
       "step 812.7 is not running (the job's running steps: 812.0, 812.1)"},
      {"the first step, port derived as the plugin does", true, mine, two_steps, {812, {}}, {},
       StatusRefusal::kNone, "derived from job 812 step 0 in 61000-65535", 0, derived, "812.0", "n[1-4]"},
      {"an asked step with reserved ports", true, mine, two_steps, {812, 1}, {}, StatusRefusal::kNone,
       "the step's reserved ports", 1, 12001, "812.1", "n[5-6]"},
      {"a pending step is not chosen", true, mine, {Step(812, 0, "PENDING", "n1"), Step(812, 2, "RUNNING", "n2")},
       {812, {}}, {}, StatusRefusal::kNone, "derived", 2, DerivedRdzvPort(812, 2), "812.2", "n2"},
      {"the elastic step before a lower plain one (23.02+ shows command lines)", true, mine,
       {Step(812, 0, "RUNNING", "n1", "", "srun hostname"),
        Step(812, 3, "RUNNING", "n[2-3]", "", "srun --elastic=2:4 --elastic-rdzv-id=big --elastic-rdzv-port=5555 x")},
       {812, {}}, {}, StatusRefusal::kNone, "--elastic-rdzv-port", 3, 5555, "big", "n[2-3]"},
      {"the endpoint's port from its command line", true, mine,
       {Step(812, 0, "RUNNING", "n1", "12001", "srun --elastic --elastic-rdzv-endpoint=n9:6000 x")}, {812, {}}, {},
       StatusRefusal::kNone, "--elastic-rdzv-endpoint", 0, 6000, "812.0", "n1"},
      {"the user's --rdzv-id and --rdzv-port win", true, mine, two_steps, {812, 0}, {"train", 7000},
       StatusRefusal::kNone, "given", 0, 7000, "train", "n[1-4]"},
  };
  for (const Row& r : rows) {
    StatusTarget t;
    std::string err;
    StatusRefusal got = PlanStatusTarget(r.found, r.job, r.steps, r.arg, 1000, r.given, &t, &err);
    ASSERT_EQ(got, r.refusal) << r.name << ": " << err;
    if (got != StatusRefusal::kNone) {
      EXPECT_NE(err.find(r.text), std::string::npos) << r.name << ": " << err;
      if (got == StatusRefusal::kAnotherUser || got == StatusRefusal::kFinished) {
        EXPECT_EQ(err.find("n["), std::string::npos) << r.name << ": no node of the job is named: " << err;
      }
      continue;
    }
    EXPECT_EQ(t.step_id, r.step) << r.name;
    EXPECT_EQ(t.port, r.port) << r.name;
    EXPECT_NE(t.port_source.find(r.text), std::string::npos) << r.name << ": " << t.port_source;
    EXPECT_EQ(t.rdzv_id, r.rdzv_id) << r.name;
    EXPECT_EQ(t.nodelist, r.nodelist) << r.name;
  }
}

}  // namespace
}  // namespace elastic
