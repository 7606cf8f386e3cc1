// The callbacks end to end over a FakeSpank: what srun, sbatch and slurmstepd
// would see, including every "bad or missing input" path returning an error.
#include "spank_plugin/plugin.h"

#include <map>

#include <gtest/gtest.h>

#include "spank_plugin/step_token.h"
#include "testing/spank_api_fake.h"
#include "testing/spank_plugin_test_util.h"

namespace elastic::spank {
namespace {

TEST_F(PluginTest, SlurmdAndJobScriptContextsDoNothing) {
  api.context = Context::kSlurmd;
  EXPECT_EQ(Init(api, {"bogus"}), 0);
  EXPECT_EQ(TaskInit(api, nodes), 0);
  EXPECT_TRUE(api.errors.empty());
}

TEST_F(PluginTest, SrunRefusesAnElasticStepWithABadPlugstackArgumentOnce) {
  api.context = Context::kLocal;
  EXPECT_EQ(Init(api, {"colour=blue"}), 0);
  EXPECT_TRUE(api.errors.empty());
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, false), 0);
  EXPECT_EQ(InitPostOpt(api), -1);
  EXPECT_EQ(InitPostOpt(api), -1);  // srun that allocates: allocator and local contexts
  EXPECT_EQ(LocalUserInit(api), -1);
  ASSERT_EQ(api.errors.size(), 1u);
  EXPECT_NE(api.errors[0].find("unknown argument 'colour'"), std::string::npos);
  EXPECT_NE(api.errors[0].find("misconfigured"), std::string::npos);
}

TEST_F(PluginTest, APlainSrunWithABadPlugstackArgumentIsQuiet) {
  for (Context context : {Context::kLocal, Context::kAllocator}) {
    ResetState();
    api.context = context;
    EXPECT_EQ(Init(api, {"colour=blue"}), 0);
    EXPECT_EQ(InitPostOpt(api), 0);
    EXPECT_EQ(LocalUserInit(api), 0);
  }
  EXPECT_TRUE(api.errors.empty());
  EXPECT_TRUE(api.infos.empty());
}

TEST_F(PluginTest, SlurmstepdDefersBadPlugstackArgumentToTaskInit) {
  EXPECT_EQ(RemoteInit({"port=x"}), 0);
  EXPECT_TRUE(api.errors.empty());
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  EXPECT_EQ(TaskInit(api, nodes), -1);
  EXPECT_NE(api.errors.at(0).find("port: 'x'"), std::string::npos);
  // `optional` makes Slurm ignore -1: the task ends itself rather than run unwrapped.
  EXPECT_EQ(api.exit_code, kTaskInitFailedExit);
  EXPECT_EQ(api.argv[0], "python3");
}

TEST_F(PluginTest, APlainStepWithABadPlugstackArgumentRunsOnTheNode) {
  EXPECT_EQ(RemoteInit({"port=x"}), 0);
  EXPECT_EQ(TaskInit(api, nodes), 0);
  EXPECT_EQ(api.exit_code, -1);
}

TEST_F(PluginTest, SrunOptionErrorFailsAtOnce) {
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  EXPECT_EQ(OptionCallback(OptionId::kElastic, "5:2", false), -1);
  EXPECT_NE(State().option_error.find("--elastic: '5:2'"), std::string::npos);
}

TEST_F(PluginTest, RemoteOptionErrorIsReportedInTaskInitNotEarlier) {
  ASSERT_EQ(RemoteInit(), 0);
  EXPECT_EQ(OptionCallback(OptionId::kElastic, "5:2", true), 0);
  EXPECT_EQ(TaskInit(api, nodes), -1);
  EXPECT_NE(api.errors.at(0).find("'5:2'"), std::string::npos);
}

TEST(CmdlineIsHeterogeneous, ColonComponentsAndHetGroupButNotTheProgramsOwnOptions) {
  EXPECT_TRUE(CmdlineIsHeterogeneous({"srun", "-N1", "--elastic", "a.py", ":", "-N1", "b.py"}, "a.py"));
  EXPECT_TRUE(CmdlineIsHeterogeneous({"srun", "--het-group=0,1", "--elastic", "a.py"}, "a.py"));
  EXPECT_TRUE(CmdlineIsHeterogeneous({"srun", "--het", "0-1", "--elastic", "a.py"}, "a.py"));
  EXPECT_FALSE(CmdlineIsHeterogeneous({"srun", "-N2", "--elastic", "a.py", "--het-group=1"}, "a.py"));
  EXPECT_FALSE(CmdlineIsHeterogeneous({"srun", "-N2", "--elastic", "a.py", "--sep=:"}, "a.py"));
}

TEST_F(PluginTest, SrunRefusesAHeterogeneousStep) {
  api.context = Context::kLocal;
  api.cmdline = {"srun", "-N1", "--elastic", "python3", "train.py", ":", "-N1", "python3", "train.py"};
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, false), 0);
  ASSERT_EQ(InitPostOpt(api), 0);
  EXPECT_EQ(LocalUserInit(api), -1);
  EXPECT_NE(api.errors.at(0).find("--elastic cannot run a heterogeneous step"), std::string::npos);
}

TEST_F(PluginTest, SrunTakesOneTaskPerGpuButNotWithAWorkerCountOfItsOwn) {
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "2:3", false), 0);
  ASSERT_EQ(InitPostOpt(api), 0);
  api.items[Item::kTotalTaskCount] = 12;
  EXPECT_EQ(LocalUserInit(api), 0) << (api.errors.empty() ? "" : api.errors[0]);
  SetUp();
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "2:3", false), 0);
  ASSERT_EQ(OptionCallback(OptionId::kNprocPerNode, "4", false), 0);
  ASSERT_EQ(InitPostOpt(api), 0);
  api.items[Item::kTotalTaskCount] = 12;
  EXPECT_EQ(LocalUserInit(api), -1);
  EXPECT_NE(api.errors.at(0).find("--elastic-nproc-per-node=4 with 12 tasks on 3 nodes: with "
                                  "several tasks per node each task is one worker"),
            std::string::npos)
      << api.errors.at(0);
}

// srun --ntasks-per-node=4 --gpus-per-task=1: every task of the node is wrapped;
// each learns which of the four it is, and all ask for four workers.
TEST_F(PluginTest, EveryTaskOfANodeLearnsItsPlaceInTheGroup) {
  for (uint32_t id : {0u, 3u}) {
    SetUp();
    api.items[Item::kLocalTaskCount] = 4;
    api.items[Item::kTotalTaskCount] = 12;
    api.items[Item::kLocalTaskId] = id;
    api.env["CUDA_VISIBLE_DEVICES"] = std::to_string(id);
    ASSERT_EQ(RemoteInit(), 0);
    ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
    ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
    EXPECT_EQ(api.env["ELASTIC_SPANK_TASK_GROUP"], std::to_string(id) + "/4");
    EXPECT_EQ(api.env["PET_NPROC_PER_NODE"], "4");
    EXPECT_EQ(api.env["ELASTIC_SPANK_TASK_GROUP_KEY"], "42.0-4242");  // JOBID.STEPID-slurmstepd
  }
}

TEST_F(PluginTest, SrunRefusesMultiProg) {
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, false), 0);
  api.cmdline = {"srun", "-N3", "--elastic", "--multi", "app.conf"};
  api.argv = {"app.conf"};
  EXPECT_EQ(LocalUserInit(api), -1);
  EXPECT_NE(api.errors.at(0).find("--multi-prog"), std::string::npos);
}

TEST_F(PluginTest, MultiProgWordAfterTheCommandIsTheUsers) {
  EXPECT_FALSE(CmdlineHasMultiProg({"srun", "python3", "x.py", "--multi-prog"}, "python3"));
  EXPECT_TRUE(CmdlineHasMultiProg({"srun", "--multi-prog", "a.conf"}, "a.conf"));
}

TEST_F(PluginTest, SrunWithoutElasticIgnoresEverything) {
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(InitPostOpt(api), 0);
  api.items[Item::kTotalTaskCount] = 12;
  EXPECT_EQ(LocalUserInit(api), 0);
}

// Slurm 22.05 gives tasks no SLURM_JOB_END_TIME: elasticrun could not tell the
// time limit's SIGTERM from scancel's (launcher/slurm_stop.h).
TEST_F(PluginTest, SrunExportsTheJobEndTimeWhereSlurmDoesNot) {
  api.context = Context::kLocal;
  api.end_times = {{42, 1764692400}};
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, false), 0);
  ASSERT_EQ(InitPostOpt(api), 0);
  ASSERT_EQ(LocalUserInit(api), 0);
  EXPECT_EQ(api.env.at("ELASTIC_JOB_END_TIME"), "1764692400");
}

TEST_F(PluginTest, SrunAsksNothingWhereSlurmGivesTheEndTimeOrForAPlainStep) {
  api.context = Context::kLocal;
  api.end_times = {{42, 1764692400}};
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(InitPostOpt(api), 0);
  ASSERT_EQ(LocalUserInit(api), 0);  // no --elastic: no RPC
  EXPECT_TRUE(api.end_time_asked.empty());
  api.env["SLURM_JOB_END_TIME"] = "1764692400";
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, false), 0);
  ASSERT_EQ(LocalUserInit(api), 0);
  EXPECT_TRUE(api.end_time_asked.empty());
  EXPECT_EQ(api.env.count("ELASTIC_JOB_END_TIME"), 0u);
}

TEST_F(PluginTest, SrunChecksTheCombinationBeforeAllocation) {
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kNprocPerNode, "2", false), 0);
  EXPECT_EQ(InitPostOpt(api), -1);
  EXPECT_NE(api.errors.at(0).find("needs --elastic"), std::string::npos);
}

TEST_F(PluginTest, SrunAcceptsSparesAndRefusesANodeMultipleOutsideMinMax) {
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "1:2", false), 0);
  ASSERT_EQ(InitPostOpt(api), 0);
  EXPECT_EQ(LocalUserInit(api), 0);  // 3 nodes for at most 2: one stands by as a spare
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "3:3", false), 0);
  ASSERT_EQ(OptionCallback(OptionId::kNodeMultiple, "2", false), 0);
  EXPECT_EQ(LocalUserInit(api), -1);
  EXPECT_NE(api.errors.at(0).find("--elastic-node-multiple=2 with --elastic=3:3: 3:3 nodes holds "
                                  "no multiple of 2"),
            std::string::npos) << api.errors.at(0);
}

// A token given to srun is warned about (srun's argv is world-readable) and
// reaches elasticrun in its environment only, never in the task's argv.
TEST_F(PluginTest, TokenInRdzvConfIsWarnedAndKeptOutOfTheTaskArgv) {
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, false), 0);
  ASSERT_EQ(OptionCallback(OptionId::kRdzvConf, "token=s3cret", false), 0);
  ASSERT_EQ(LocalUserInit(api), 0);
  int warned = 0;
  for (const std::string& info : api.infos) {
    if (info.find("token_file=PATH") != std::string::npos) ++warned;
    EXPECT_EQ(info.find("s3cret"), std::string::npos) << info;
  }
  EXPECT_EQ(warned, 1);

  SetUp();
  ASSERT_EQ(RemoteInit(), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(OptionCallback(OptionId::kRdzvConf, "token=s3cret", true), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  for (const std::string& word : api.argv) EXPECT_EQ(word.find("s3cret"), std::string::npos) << word;
  EXPECT_NE(api.env["PET_RDZV_CONF"].find("token=s3cret"), std::string::npos);
}

TEST_F(PluginTest, TokenFileInRdzvConfIsNotWarned) {
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, false), 0);
  ASSERT_EQ(OptionCallback(OptionId::kRdzvConf, "token_file=/home/u/.elastic-token", false), 0);
  ASSERT_EQ(LocalUserInit(api), 0);
  for (const std::string& info : api.infos) EXPECT_EQ(info.find("token"), std::string::npos) << info;
}

// srun knows the step's node count: a step that can never reach MIN is refused
// before anything starts, with the options that fix it (issue: the README's
// `srun --elastic=2:8 ...` without -N waited 600 s, then looked like a lost node).
TEST_F(PluginTest, SrunRefusesAStepWithFewerNodesThanMin) {
  api.context = Context::kLocal;
  api.items[Item::kNnodes] = 1;
  api.items[Item::kTotalTaskCount] = 1;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "2:8", false), 0);
  ASSERT_EQ(InitPostOpt(api), 0);
  EXPECT_EQ(LocalUserInit(api), -1);
  ASSERT_EQ(api.errors.size(), 1u);
  EXPECT_NE(api.errors[0].find("the step has 1 node and --elastic=2:8 needs at least 2: add "
                               "-N2-8 --no-kill"),
            std::string::npos) << api.errors[0];
  // Meant to be joined by another step (scale-up): allowed.
  api.errors.clear();
  ASSERT_EQ(OptionCallback(OptionId::kRdzvId, "job7.train", false), 0);
  EXPECT_EQ(LocalUserInit(api), 0) << api.errors.at(0);
}

// Slurm 22.05 hands a bare `#SBATCH --elastic` to the job's sruns as "(null)".
TEST_F(PluginTest, SrunReadsSlurmsNullFromABareJobLevelElastic) {
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "(null)", false), 0) << State().option_error;
  ASSERT_EQ(InitPostOpt(api), 0);
  EXPECT_EQ(LocalUserInit(api), 0);
  EXPECT_TRUE(ElasticActive(State().options, State().config));
  EXPECT_FALSE(State().options.nnodes);
}

// sruns started by the workers must not inherit a job-level --elastic.
TEST_F(PluginTest, TaskInitRemovesTheOptionVariablesFromTheTask) {
  api.env["SLURM_SPANK__SLURM_SPANK_OPTION_elastic_elastic"] = "2:3";
  api.env["_SLURM_SPANK_OPTION_elastic_elastic"] = "2:3";
  api.env["SLURM_SPANK__SLURM_SPANK_OPTION_elastic_elastic_max_restarts"] = "3";
  api.env["SLURM_SPANK__SLURM_SPANK_OPTION_other_plugin"] = "kept";
  ASSERT_EQ(RemoteInit(), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "2:3", true), 0);
  ASSERT_EQ(OptionCallback(OptionId::kMaxRestarts, "3", true), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << api.errors.at(0);
  EXPECT_FALSE(api.env.contains("SLURM_SPANK__SLURM_SPANK_OPTION_elastic_elastic"));
  EXPECT_FALSE(api.env.contains("_SLURM_SPANK_OPTION_elastic_elastic"));
  EXPECT_FALSE(api.env.contains("SLURM_SPANK__SLURM_SPANK_OPTION_elastic_elastic_max_restarts"));
  EXPECT_EQ(api.env["SLURM_SPANK__SLURM_SPANK_OPTION_other_plugin"], "kept");
  EXPECT_EQ(api.env["PET_MAX_RESTARTS"], "3");  // the task keeps its options as PET_*
}

// `#SBATCH --no-kill` does not reach the steps: a job-level --elastic makes each
// srun of the job --no-kill (srun reads SLURM_NO_KILL after the plugin's init).
TEST_F(PluginTest, JobLevelElasticMakesTheJobsSrunsNoKill) {
  struct Row {
    const char* name;
    std::map<std::string, std::string> env;
    const char* expected;  // SLURM_NO_KILL after init; "" = unset
  } rows[] = {
      {"job-level --elastic=4:8", {{kJobLevelElasticVar, "4:8"}}, "set"},
      {"bare job-level --elastic (Slurm's \"(null)\")", {{kJobLevelElasticVar, "(null)"}}, "set"},
      {"job-level --elastic=off", {{kJobLevelElasticVar, "off"}}, ""},
      {"the user's own SLURM_NO_KILL wins", {{kJobLevelElasticVar, "4:8"}, {"SLURM_NO_KILL", "off"}},
       "off"},
      {"no job-level --elastic", {}, ""},
  };
  for (const Row& row : rows) {
    ResetState();
    api.context = Context::kLocal;
    api.env = row.env;
    ASSERT_EQ(Init(api, {}), 0) << row.name;
    std::string value = api.env.contains("SLURM_NO_KILL") ? api.env["SLURM_NO_KILL"] : "";
    EXPECT_EQ(value, row.expected) << row.name;
  }
}

TEST(NoKillRequested, OptionsBeforeTheCommandAndTheEnvironment) {
  struct Row {
    std::vector<std::string> cmdline;
    std::string env;
    bool expected;
  } rows[] = {
      {{"srun", "-N3", "--no-kill", "--elastic=2:3", "train.py"}, "", true},
      {{"srun", "-N3", "-k", "--elastic=2:3", "train.py"}, "", true},
      {{"srun", "-N3", "--no-k", "--elastic=2:3", "train.py"}, "", true},
      {{"srun", "-N3", "--no-kill=off", "--elastic=2:3", "train.py"}, "", false},
      {{"srun", "-N3", "--elastic=2:3", "train.py", "--no-kill"}, "", false},  // the program's
      {{"srun", "-N3", "--elastic=2:3", "train.py"}, "set", true},
      {{"srun", "-N3", "--elastic=2:3", "train.py"}, "off", false},
      {{"srun", "-N3", "--elastic=2:3", "train.py"}, "", false},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(NoKillRequested(row.cmdline, "train.py", row.env), row.expected)
        << row.cmdline[2] << " env=" << row.env;
  }
}

TEST_F(PluginTest, SrunWarnsWhenMinIsBelowTheNodeCountWithoutNoKill) {
  api.context = Context::kLocal;
  api.argv = {"train.py"};
  api.cmdline = {"srun", "-N3", "--elastic=2:3", "train.py"};
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "2:3", false), 0);
  EXPECT_EQ(LocalUserInit(api), 0);
  ASSERT_EQ(api.infos.size(), 1u);
  EXPECT_NE(api.infos[0].find("--elastic=2:3 on 3 nodes without --no-kill"), std::string::npos)
      << api.infos[0];
  api.infos.clear();
  api.cmdline = {"srun", "-N3", "--no-kill", "--elastic=2:3", "train.py"};
  EXPECT_EQ(LocalUserInit(api), 0);
  EXPECT_TRUE(api.infos.empty());
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "3:3", false), 0);  // MIN = the node count
  api.cmdline = {"srun", "-N3", "--elastic=3:3", "train.py"};
  EXPECT_EQ(LocalUserInit(api), 0);
  EXPECT_TRUE(api.infos.empty());
}

TEST(IsTorchrunCommand, TorchrunAndItsModulesButNotAScriptsArguments) {
  using V = std::vector<std::string>;
  EXPECT_TRUE(IsTorchrunCommand(V{"torchrun", "--nnodes=2", "train.py"}));
  EXPECT_TRUE(IsTorchrunCommand(V{"/usr/bin/torchrun", "train.py"}));
  EXPECT_TRUE(IsTorchrunCommand(V{"python3", "-m", "torch.distributed.run", "train.py"}));
  EXPECT_TRUE(IsTorchrunCommand(V{"python", "-u", "-m", "torch.distributed.launch", "x.py"}));
  EXPECT_FALSE(IsTorchrunCommand(V{"python3", "train.py", "-m", "torch.distributed.run"}));
  EXPECT_FALSE(IsTorchrunCommand(V{"python3", "-m", "mypkg.train"}));
  EXPECT_FALSE(IsTorchrunCommand(V{"train.py"}));
}

TEST_F(PluginTest, SrunRefusesTorchrunUnderElastic) {
  api.context = Context::kLocal;
  api.argv = {"torchrun", "--nnodes=3", "--nproc-per-node=8", "train.py"};
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, false), 0);
  EXPECT_EQ(LocalUserInit(api), -1);
  EXPECT_NE(api.errors.at(0).find("drop torchrun: srun --elastic replaces it"), std::string::npos)
      << api.errors.at(0);
}

TEST_F(PluginTest, SbatchChecksTheCombination) {
  api.context = Context::kAllocator;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kNprocPerNode, "2", false), 0);
  EXPECT_EQ(InitPostOpt(api), -1);
  EXPECT_NE(api.errors.at(0).find("needs --elastic"), std::string::npos);
}

TEST_F(PluginTest, TaskInitWrapsTheCommandAndSetsTheContract) {
  ASSERT_EQ(RemoteInit(), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "2:3", true), 0);
  ASSERT_EQ(InitPostOpt(api), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  EXPECT_EQ(api.argv, (std::vector<std::string>{"/usr/bin/elasticrun", "train.py", "--epochs", "2"}));
  EXPECT_EQ(api.env["ELASTIC_SPANK_ARGV0"], "python3");
  EXPECT_EQ(api.env["PET_NNODES"], "2:3");
  EXPECT_EQ(api.env["PET_NODE_RANK"], "0");
  // No --elastic-nproc-per-node: no count forwarded, elasticrun counts the GPUs
  // (CUDA_VISIBLE_DEVICES stays the task's).
  EXPECT_FALSE(api.env.contains("PET_NPROC_PER_NODE"));
  EXPECT_EQ(api.env["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(api.env["PET_RDZV_CONF"], "expected_nodes=3,is_host=1");
  EXPECT_TRUE(api.env["PET_RDZV_ENDPOINT"].starts_with("10.200.0.11:"));
  EXPECT_FALSE(api.env.contains("ELASTIC_SPANK_ARGV_PREPENDED"));
}

// An exported PET_NPROC_PER_NODE never decided the count under srun --elastic
// (the plugin's default did); it is removed so that elasticrun's rule does.
TEST_F(PluginTest, TaskInitRemovesAnExportedWorkerCountUnlessOneIsGiven) {
  api.env["PET_NPROC_PER_NODE"] = "7";
  ASSERT_EQ(RemoteInit(), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "2:3", true), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  EXPECT_FALSE(api.env.contains("PET_NPROC_PER_NODE"));
  SetUp();
  api.env["PET_NPROC_PER_NODE"] = "7";
  ASSERT_EQ(RemoteInit(), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "2:3", true), 0);
  ASSERT_EQ(OptionCallback(OptionId::kNprocPerNode, "gpu", true), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  EXPECT_EQ(api.env["PET_NPROC_PER_NODE"], "gpu");
}

TEST_F(PluginTest, TaskInitOnNewerSlurmPrependsAndSaysSo) {
  api.prepend = true;
  ASSERT_EQ(RemoteInit(), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0);
  EXPECT_EQ(api.argv[0], "/usr/bin/elasticrun");
  EXPECT_EQ(api.argv[1], "python3");
  EXPECT_EQ(api.env["ELASTIC_SPANK_ARGV_PREPENDED"], "1");
}

// token_key=PATH: init_post_opt (root) derives the step's token; task_init hands
// it to the task as a memfd named by ELASTIC_RDZV_TOKEN_FILE, never in argv or env.
TEST_F(PluginTest, TaskInitHandsTheStepTokenAsAMemfd) {
  api.items[Item::kJobUid] = 1000;
  api.token_keys["/etc/slurm/elastic-token.key"] = std::string(64, 'k');
  ASSERT_EQ(RemoteInit({"launcher=/usr/bin/elasticrun", "token_key=/etc/slurm/elastic-token.key"}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(RemoteInitPostOpt(api, nodes), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  std::string expected, err;
  DlopenHmac hmac;
  ASSERT_TRUE(DeriveStepToken(hmac, std::string(64, 'k'), 1000, "42.0", &expected, &err)) << err;
  EXPECT_EQ(api.handed, std::vector<std::string>{expected});
  EXPECT_EQ(api.env["ELASTIC_RDZV_TOKEN_FILE"], "/proc/self/fd/100");
  for (const auto& [name, value] : api.env) EXPECT_EQ(value.find(expected), std::string::npos) << name;
  for (const auto& arg : api.argv) EXPECT_EQ(arg.find(expected), std::string::npos) << arg;
}

// A joining step (--elastic-rdzv-id of the run) derives the run's token: the
// token follows the run id, not the job.
TEST_F(PluginTest, TheTokenFollowsTheRunId) {
  api.items[Item::kJobUid] = 1000;
  api.token_keys["/k"] = std::string(64, 'k');
  ASSERT_EQ(RemoteInit({"launcher=/usr/bin/elasticrun", "token_key=/k"}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(OptionCallback(OptionId::kRdzvId, "train-7", true), 0);
  ASSERT_EQ(RemoteInitPostOpt(api, nodes), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  std::string expected, err;
  DlopenHmac hmac;
  ASSERT_TRUE(DeriveStepToken(hmac, std::string(64, 'k'), 1000, "train-7", &expected, &err)) << err;
  EXPECT_EQ(api.handed, std::vector<std::string>{expected});
}

// A key slurmstepd cannot use fails the elastic step with the key's problem (exit 2,
// never a drained node, never a silent fall back to weaker authentication); a plain
// step on the same node runs.
TEST_F(PluginTest, ABadTokenKeyFailsTheElasticStepAndNothingElse) {
  api.items[Item::kJobUid] = 1000;
  ASSERT_EQ(RemoteInit({"launcher=/usr/bin/elasticrun", "token_key=/etc/slurm/missing.key"}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(RemoteInitPostOpt(api, nodes), 0);
  EXPECT_EQ(TaskInit(api, nodes), -1);
  EXPECT_EQ(api.exit_code, kTaskInitFailedExit);
  ASSERT_EQ(api.errors.size(), 1u);
  EXPECT_NE(api.errors[0].find("token_key '/etc/slurm/missing.key': No such file or directory"),
            std::string::npos) << api.errors[0];
  EXPECT_TRUE(api.handed.empty());

  SetUp();
  ASSERT_EQ(RemoteInit({"launcher=/usr/bin/elasticrun", "token_key=/etc/slurm/missing.key"}), 0);
  ASSERT_EQ(RemoteInitPostOpt(api, nodes), 0);
  EXPECT_EQ(TaskInit(api, nodes), 0);
  EXPECT_TRUE(api.errors.empty());
}

// Slurm's OCI path gives the container only the descriptors oci.conf names: no
// token there (docs/containers.md).
TEST_F(PluginTest, AnOciContainerStepGetsNoToken) {
  api.prepend = true;
  api.items[Item::kJobUid] = 1000;
  api.token_keys["/k"] = std::string(64, 'k');
  api.env["SLURM_CONTAINER"] = "/srv/bundles/pytorch";
  api.bundles["/usr/libexec/slurm-elastic/agent"] = 7;
  ASSERT_EQ(RemoteInit({"agent_bundle=/usr/libexec/slurm-elastic/agent", "token_key=/k"}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(RemoteInitPostOpt(api, nodes), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  EXPECT_TRUE(api.handed.empty());
  EXPECT_EQ(api.env.count("ELASTIC_RDZV_TOKEN_FILE"), 0u);
}

// Where neither Slurm (22.05) nor srun's environment gave the task the job's end
// time, slurmstepd asks in init_post_opt and task_init exports it.
TEST_F(PluginTest, TaskInitExportsTheJobEndTimeAskedInInitPostOpt) {
  api.end_times = {{42, 1764692400}};
  ASSERT_EQ(RemoteInit(), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(RemoteInitPostOpt(api, nodes), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  EXPECT_EQ(api.env["ELASTIC_JOB_END_TIME"], "1764692400");
  EXPECT_EQ(api.end_time_asked, std::vector<uint32_t>{42});
}

TEST_F(PluginTest, SlurmstepdAsksNoEndTimeThatTheJobsEnvironmentHas) {
  for (const char* name : {"SLURM_JOB_END_TIME", "ELASTIC_JOB_END_TIME"}) {
    ResetState();
    api.end_times = {{42, 1764692400}};
    api.end_time_asked.clear();
    api.env.erase("SLURM_JOB_END_TIME");
    api.env.erase("ELASTIC_JOB_END_TIME");
    api.env[name] = "1764692399";
    ASSERT_EQ(RemoteInit(), 0);
    ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
    ASSERT_EQ(RemoteInitPostOpt(api, nodes), 0);
    ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
    EXPECT_TRUE(api.end_time_asked.empty()) << name;
    EXPECT_EQ(api.env[name], "1764692399") << name;
  }
}

TEST_F(PluginTest, SrunsInitPostOptNeverAsksTheNodeDirectory) {
  api.context = Context::kLocal;
  ASSERT_EQ(Init(api, {}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, false), 0);
  ASSERT_EQ(RemoteInitPostOpt(api, nodes), 0);
  EXPECT_EQ(nodes.slurm_calls, 0);
}

TEST_F(PluginTest, TaskInitSkipsBatchExternAndInteractiveSteps) {
  for (uint32_t step : {kBatchStep, kExternStep, kInteractiveStep}) {
    ResetState();
    api.items[Item::kStepId] = step;
    api.argv = {"/bin/sh", "script"};
    ASSERT_EQ(RemoteInit(), 0);
    ASSERT_EQ(OptionCallback(OptionId::kElastic, "2:3", true), 0);
    EXPECT_EQ(TaskInit(api, nodes), 0);
    EXPECT_EQ(api.argv[0], "/bin/sh");
    EXPECT_FALSE(api.env.contains("PET_NNODES"));
  }
}

TEST_F(PluginTest, TaskInitWithoutElasticLeavesTheTaskAlone) {
  ASSERT_EQ(RemoteInit(), 0);
  EXPECT_EQ(TaskInit(api, nodes), 0);
  EXPECT_EQ(api.argv[0], "python3");
}

TEST_F(PluginTest, DefaultOnWrapsUnlessOff) {
  ASSERT_EQ(RemoteInit({"default=on", "launcher=/usr/bin/elasticrun"}), 0);
  EXPECT_EQ(TaskInit(api, nodes), 0);
  EXPECT_EQ(api.argv[0], "/usr/bin/elasticrun");
  ResetState();
  api.argv = {"python3"};
  ASSERT_EQ(RemoteInit({"default=on", "launcher=/usr/bin/elasticrun"}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, "off", true), 0);
  EXPECT_EQ(TaskInit(api, nodes), 0);
  EXPECT_EQ(api.argv[0], "python3");
}

TEST_F(PluginTest, EveryMissingInputInTaskInitIsAnErrorNotACrash) {
  struct Case {
    const char* name;
    std::function<void(FakeSpank&, FakeNodes&)> break_it;
    const char* expect;
  } cases[] = {
      {"no node id", [](FakeSpank& a, FakeNodes&) { a.items.erase(Item::kNodeId); }, "node id"},
      {"no job id", [](FakeSpank& a, FakeNodes&) { a.items.erase(Item::kJobId); }, "job id"},
      {"no step id", [](FakeSpank& a, FakeNodes&) { a.items.erase(Item::kStepId); }, "step id"},
      {"no nodelist", [](FakeSpank& a, FakeNodes&) { a.env.erase("SLURM_STEP_NODELIST"); },
       "SLURM_STEP_NODELIST"},
      {"no argv", [](FakeSpank& a, FakeNodes&) { a.argv.clear(); }, "command line"},
      {"no launcher", [](FakeSpank& a, FakeNodes&) { a.executables.clear(); }, "launcher"},
      {"no address", [](FakeSpank&, FakeNodes& n) { n.node_addr.clear(); }, "first node"},
      {"setenv fails", [](FakeSpank& a, FakeNodes&) { a.fail_setenv = true; }, "cannot set"},
      {"no local task id", [](FakeSpank& a, FakeNodes&) { a.items.erase(Item::kLocalTaskId); },
       "task's local id"},
      {"node id past count", [](FakeSpank& a, FakeNodes&) { a.items[Item::kNodeId] = 7; },
       "node id 7"},
  };
  for (const auto& c : cases) {
    SetUp();
    c.break_it(api, nodes);
    ASSERT_EQ(RemoteInit(), 0) << c.name;
    ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
    EXPECT_EQ(TaskInit(api, nodes), -1) << c.name;
    ASSERT_FALSE(api.errors.empty()) << c.name;
    EXPECT_NE(api.errors[0].find(c.expect), std::string::npos) << c.name << ": " << api.errors[0];
  }
}

TEST(MungeSocket, FromAuthInfo) {
  EXPECT_EQ(MungeSocketFromSlurmConf("AuthType=auth/munge\nAuthInfo=socket=/tmp/m/s.sock\n"),
            "/tmp/m/s.sock");
  EXPECT_EQ(MungeSocketFromSlurmConf("authinfo=ttl=60,socket=/x # c\n"), "/x");
  EXPECT_EQ(MungeSocketFromSlurmConf("#AuthInfo=socket=/x\n"), "");
  EXPECT_EQ(MungeSocketFromSlurmConf(""), "");
}

}  // namespace
}  // namespace elastic::spank
