#include "launcher/launch_config.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "common/option_table.h"
#include "testing/launch_config_test_util.h"
#include "launcher/run.h"
#include "launcher/worker_command.h"

namespace elastic {
namespace {

TEST(LaunchConfigTest, Defaults) {
  Parsed p = Parse({"train.py"});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  const LaunchConfig& c = p.config;
  EXPECT_EQ(c.spec.nproc_spec, (NprocSpec{NprocSpec::Kind::kCount, 1}));
  EXPECT_EQ(c.spec.rdzv.max_restarts, 0);
  EXPECT_EQ(c.spec.rdzv.min_nodes, 1);
  EXPECT_EQ(c.spec.rdzv.max_nodes, 1);
  EXPECT_EQ(c.spec.rdzv.run_id, "none");
  EXPECT_EQ(c.spec.rdzv.backend, "static");  // torchrun's default
  EXPECT_EQ(c.spec.rdzv.node_rank, -1);
  EXPECT_EQ(c.agent.shutdown_timeout_ms, 30000);
  EXPECT_EQ(c.spec.role, "default");
  EXPECT_EQ(c.spec.python, "python3");
  EXPECT_EQ(c.spec.bind, BindMode::kAuto);
  EXPECT_EQ(c.spec.membind, MemBind::kPreferred);
  EXPECT_FALSE(c.spec.rdzv.endpoint);
  EXPECT_EQ(c.spec.signals_to_handle, (std::vector<int>{SIGTERM, SIGINT, SIGHUP, SIGQUIT}));
  EXPECT_EQ(c.spec.program, "train.py");
  EXPECT_TRUE(c.spec.args.empty());
}

// The deadlines that no option sets: the values they had as literals where they
// were used (users' scripts and docs name them: "checking again in 10 s").
TEST(LaunchConfigTest, FixedDeadlinesKeepTheirValues) {
  Parsed p = Parse({"train.py"});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  const AgentSettings& a = p.config.agent;
  const struct {
    const char* name;
    long long got, want;
  } rows[] = {
      {"zygote_ready_timeout_ms", a.zygote_ready_timeout_ms, 300000},
      {"zygote_spawn_timeout_ms", a.zygote_spawn_timeout_ms, 10000},
      {"stack_dump_grace_ms", a.stack_dump_grace_ms, 5000},
      {"crash_loop_answer_timeout_ms", a.crash_loop_answer_timeout_ms, 10000},
      {"progress_read_timeout_ms", a.progress_read_timeout_ms, 10000},
      {"slurm_comment_timeout_ms", a.slurm_comment_timeout_ms, 10000},
      {"health_check_recheck_ms", a.health_check_recheck_ms, 10000},
      {"health_check_give_up_ms", a.health_check_give_up_ms, 600000},
      {"node_state_timeout_ms", a.node_state_timeout_ms, 10000},
      {"node_state_recheck_ms", a.node_state_recheck_ms, 10000},
      {"node_state_min_interval_ms", a.node_state_min_interval_ms, 5000},
      {"requeue_timeout_ms", a.requeue_timeout_ms, 30000},
      {"min_kill_wait_ms", a.min_kill_wait_ms, 1000},
      {"interpreter_check_timeout_ms", a.interpreter_check_timeout_ms, 10000},
      {"task_records_timeout_ms", a.task_records_timeout_ms, 60000},
      {"task_agent_start_timeout_ms", a.task_agent_start_timeout_ms, 120000},
      {"status_connect_timeout_ms", a.status_connect_timeout_ms, 5000},
      {"status_deadline_ms", a.status_deadline_ms, 15000},
      {"guardian_kill_timeout_ms", a.guardian_kill_timeout_ms, 30000},
  };
  for (const auto& row : rows) EXPECT_EQ(row.got, row.want) << row.name;
}

TEST(LaunchConfigTest, CrashLoopSettings) {
  Parsed d = Parse({"train.py"});
  EXPECT_EQ(d.config.agent.crash_loop_count, 3);
  EXPECT_EQ(d.config.agent.crash_loop_window_ms, 60000);
  Parsed p = Parse({"--crash-loop-count=0", "--crash_loop_window", "2.5", "train.py"});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.agent.crash_loop_count, 0);
  EXPECT_EQ(p.config.agent.crash_loop_window_ms, 2500);
  Parsed e = Parse({"train.py"}, {{"PET_CRASH_LOOP_COUNT", "5"}});
  EXPECT_EQ(e.config.agent.crash_loop_count, 5);
  Parsed bad = Parse({"--crash-loop-count=-1", "train.py"});
  EXPECT_EQ(bad.outcome, ParseOutcome::kUsageError);
  EXPECT_NE(bad.err.find("--crash-loop-count"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("-1"), std::string::npos) << bad.err;
  bad = Parse({"--crash-loop-window=soon", "train.py"});
  EXPECT_EQ(bad.outcome, ParseOutcome::kUsageError);
  EXPECT_NE(bad.err.find("soon"), std::string::npos) << bad.err;
}

// --uninterruptible-timeout, PET_UNINTERRUPTIBLE_TIMEOUT, torchrun's
// TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (its 0, "no check", is the default here).
TEST(LaunchConfigTest, UninterruptibleTimeout) {
  struct Case {
    std::vector<const char*> args;
    EnvMap env;
    long long want_ms;      // -1: a usage error naming err
    const char* err;
    bool warned = false;
  };
  const char* kTorch = "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT";
  for (const Case& c : std::vector<Case>{
           {{"train.py"}, {}, 60000, nullptr},
           {{"--uninterruptible-timeout=2.5", "train.py"}, {}, 2500, nullptr},
           {{"--uninterruptible_timeout", "5", "train.py"}, {}, 5000, nullptr},
           {{"train.py"}, {{"PET_UNINTERRUPTIBLE_TIMEOUT", "7"}}, 7000, nullptr},
           {{"train.py"}, {{kTorch, "30"}}, 30000, nullptr},
           {{"--uninterruptible-timeout=3", "train.py"}, {{kTorch, "30"}}, 3000, nullptr},
           {{"train.py"}, {{kTorch, "0"}}, 60000, nullptr, true},
           {{"--uninterruptible-timeout=0", "train.py"}, {}, -1, "--uninterruptible-timeout: '0'"},
           {{"train.py"}, {{"PET_UNINTERRUPTIBLE_TIMEOUT", "0"}}, -1, "PET_UNINTERRUPTIBLE_TIMEOUT: '0'"},
           {{"train.py"}, {{kTorch, "never"}}, -1, "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT"},
       }) {
    Parsed p = Parse(c.args, c.env);
    if (c.want_ms < 0) {
      EXPECT_EQ(p.outcome, ParseOutcome::kUsageError) << c.err;
      EXPECT_NE(p.err.find(c.err), std::string::npos) << p.err;
      continue;
    }
    ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
    EXPECT_EQ(p.config.agent.uninterruptible_timeout_ms, c.want_ms) << c.args[0];
    EXPECT_EQ(!p.config.warnings.empty(), c.warned);
  }
}

TEST(LaunchConfigTest, NativeStacksSettings) {
  struct Case {
    std::vector<const char*> args;
    EnvMap env;
    const char* err;  // nullptr: parses
    NativeStacksMode mode;
    long long timeout_ms;
  } cases[] = {
      {{"train.py"}, {}, nullptr, NativeStacksMode::kAuto, 15000},
      {{"--native-stacks=gdb", "train.py"}, {}, nullptr, NativeStacksMode::kGdb, 15000},
      {{"--native_stacks", "py-spy", "--native-stacks-timeout=2.5", "train.py"}, {}, nullptr,
       NativeStacksMode::kPySpy, 2500},
      {{"train.py"}, {{"PET_NATIVE_STACKS", "off"}, {"PET_NATIVE_STACKS_TIMEOUT", "1"}}, nullptr,
       NativeStacksMode::kOff, 1000},
      {{"--native-stacks=gdb", "train.py"}, {{"PET_NATIVE_STACKS", "off"}}, nullptr, NativeStacksMode::kGdb,
       15000},
      {{"--native-stacks=lldb", "train.py"}, {}, "--native-stacks: 'lldb': expected auto, py-spy, gdb or off",
       {}, 0},
      {{"train.py"}, {{"PET_NATIVE_STACKS", "yes"}}, "PET_NATIVE_STACKS: 'yes'", {}, 0},
      {{"--native-stacks-timeout=0", "train.py"}, {}, "--native-stacks-timeout: '0': must be more than 0",
       {}, 0},
      {{"--native-stacks-timeout=soon", "train.py"}, {}, "soon", {}, 0},
  };
  for (const Case& c : cases) {
    Parsed p = Parse(c.args, c.env);
    SCOPED_TRACE(c.args[0]);
    if (c.err != nullptr) {
      EXPECT_EQ(p.outcome, ParseOutcome::kUsageError);
      EXPECT_NE(p.err.find(c.err), std::string::npos) << p.err;
      continue;
    }
    ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
    EXPECT_EQ(p.config.agent.native_stacks, c.mode);
    EXPECT_EQ(p.config.agent.native_stacks_timeout_ms, c.timeout_ms);
  }
}

TEST(LaunchConfigTest, NodeMultiple) {
  EXPECT_EQ(Parse({"train.py"}).config.spec.rdzv.node_multiple, 1);
  Parsed p = Parse({"--nnodes=2:4", "--node-multiple=2", "train.py"});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.spec.rdzv.node_multiple, 2);
  Parsed e = Parse({"--nnodes=4:8", "train.py"}, {{"PET_NODE_MULTIPLE", "4"}});
  ASSERT_EQ(e.outcome, ParseOutcome::kRun) << e.err;
  EXPECT_EQ(e.config.spec.rdzv.node_multiple, 4);
  Parsed bad = Parse({"--nnodes=3:3", "--node_multiple", "2", "train.py"});
  EXPECT_EQ(bad.outcome, ParseOutcome::kUsageError);
  EXPECT_NE(bad.err.find("--node-multiple"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("3:3 nodes holds no multiple of 2"), std::string::npos) << bad.err;
  bad = Parse({"--nnodes=2", "--node-multiple=0", "train.py"});
  EXPECT_EQ(bad.outcome, ParseOutcome::kUsageError);
  EXPECT_NE(bad.err.find("'0'"), std::string::npos) << bad.err;
}

TEST(LaunchConfigTest, DashedAndUnderscoredSpellings) {
  Parsed a = Parse({"--nproc-per-node=4", "--max-restarts", "3", "train.py"});
  Parsed b = Parse({"--nproc_per_node=4", "--max_restarts", "3", "train.py"});
  for (const Parsed* p : {&a, &b}) {
    ASSERT_EQ(p->outcome, ParseOutcome::kRun) << p->err;
    EXPECT_EQ(p->config.spec.nproc_spec, (NprocSpec{NprocSpec::Kind::kCount, 4}));
    EXPECT_EQ(p->config.spec.nproc, 4);
    EXPECT_EQ(p->config.spec.rdzv.max_restarts, 3);
  }
}

TEST(LaunchConfigTest, ProgramArgumentsAreNotParsed) {
  Parsed p = Parse({"--standalone", "python3", "train.py", "--max-restarts=9", "-v"});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.spec.program, "python3");
  EXPECT_EQ(p.config.spec.args, (std::vector<std::string>{"train.py", "--max-restarts=9", "-v"}));
  EXPECT_EQ(p.config.spec.rdzv.max_restarts, 0);
  EXPECT_FALSE(p.config.agent.verbose);
  EXPECT_TRUE(p.config.spec.rdzv.standalone);
}

TEST(LaunchConfigTest, EveryTorchrunOption) {
  Parsed p = Parse({"--nnodes=2:4", "--node-rank=1", "--rdzv-backend=c10d", "--rdzv-endpoint=host:1234",
                    "--rdzv-id=job7", "--rdzv-conf=join_timeout=5,last_call_timeout=1", "--role=trainer",
                    "-r", "0:1,1:3", "-t", "2", "--log-dir=/tmp/x", "--local-ranks-filter=0,2",
                    "--no-python", "--signals-to-handle=SIGTERM,SIGUSR1", "--shutdown-timeout=2.5",
                    "--virtual-local-rank", "--monitor-interval=5", "--local-addr=10.0.0.1", "prog"});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  const LaunchConfig& c = p.config;
  EXPECT_EQ(c.spec.rdzv.min_nodes, 2);
  EXPECT_EQ(c.spec.rdzv.max_nodes, 4);
  EXPECT_EQ(c.spec.rdzv.node_rank, 1);
  ASSERT_TRUE(c.spec.rdzv.endpoint);
  EXPECT_EQ(*c.spec.rdzv.endpoint, (Endpoint{"host", 1234}));
  EXPECT_EQ(c.spec.rdzv.run_id, "job7");
  ASSERT_EQ(c.spec.rdzv.conf.size(), 2u);
  EXPECT_EQ(c.spec.rdzv.conf[0], (std::pair<std::string, std::string>{"join_timeout", "5"}));
  EXPECT_EQ(c.spec.rdzv.local_addr, "10.0.0.1");
  EXPECT_EQ(c.spec.role, "trainer");
  EXPECT_EQ(c.agent.redirects.For(0), kStdOut);
  EXPECT_EQ(c.agent.redirects.For(1), kStdBoth);
  EXPECT_EQ(c.agent.redirects.For(2), kStdNone);
  EXPECT_EQ(c.agent.tee.For(5), kStdErr);
  EXPECT_EQ(c.agent.log_dir, "/tmp/x");
  EXPECT_EQ(c.agent.local_ranks_filter, (std::vector<int>{0, 2}));
  EXPECT_TRUE(c.spec.no_python);
  EXPECT_EQ(c.spec.signals_to_handle, (std::vector<int>{SIGTERM, SIGUSR1}));
  EXPECT_EQ(c.agent.shutdown_timeout_ms, 2500);
  EXPECT_TRUE(c.spec.virtual_local_rank);
  EXPECT_EQ(c.agent.monitor_interval_ms, 5000);
}

TEST(LaunchConfigTest, StandaloneForcesOneNode) {
  Parsed p = Parse({"--standalone", "--nnodes=3", "x"});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.spec.rdzv.max_nodes, 1);
  EXPECT_FALSE(p.config.spec.rdzv.endpoint);
}

TEST(LaunchConfigTest, PetEnvironmentVariables) {
  Parsed p = Parse({"train.py"}, {{"PET_NPROC_PER_NODE", "3"}, {"PET_MAX_RESTARTS", "2"},
                                  {"PET_STANDALONE", "1"}, {"PET_RDZV_ID", "abc"}, {"PET_BIND", "none"}});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.spec.nproc_spec, (NprocSpec{NprocSpec::Kind::kCount, 3}));
  EXPECT_EQ(p.config.spec.rdzv.max_restarts, 2);
  EXPECT_TRUE(p.config.spec.rdzv.standalone);
  EXPECT_EQ(p.config.spec.rdzv.run_id.size(), 36u);  // --standalone: a fresh uuid, as torchrun
  EXPECT_EQ(Parse({"train.py"}, {{"PET_RDZV_ID", "abc"}}).config.spec.rdzv.run_id, "abc");
  EXPECT_EQ(p.config.spec.bind, BindMode::kNone);
}

// Where a token may come from, and which source is warned about: only the
// command line is readable by other users (/proc/PID/cmdline); PET_RDZV_CONF
// (the plugin's path) and ELASTIC_RDZV_TOKEN[_FILE] are in the environment.
TEST(LaunchConfigTest, TokenOnTheCommandLineIsFlagged) {
  struct Row {
    const char* name;
    std::vector<const char*> args;
    EnvMap env;
    bool in_argv;
    std::string token, token_file;
  };
  const Row rows[] = {
      {"--rdzv-conf token=", {"--rdzv-conf", "token=s3cret", "t.py"}, {}, true, "", ""},
      {"--rdzv-conf=...,token=", {"--rdzv-conf=join_timeout=5,token=s3cret", "t.py"}, {}, true, "", ""},
      {"--rdzv-conf token_file=", {"--rdzv-conf", "token_file=/run/t", "t.py"}, {}, false, "", ""},
      {"PET_RDZV_CONF token=", {"t.py"}, {{"PET_RDZV_CONF", "token=s3cret"}}, false, "", ""},
      {"ELASTIC_RDZV_TOKEN", {"t.py"}, {{"ELASTIC_RDZV_TOKEN", "s3cret"}}, false, "s3cret", ""},
      {"ELASTIC_RDZV_TOKEN_FILE", {"t.py"}, {{"ELASTIC_RDZV_TOKEN_FILE", "/run/t"}}, false, "", "/run/t"},
  };
  for (const Row& row : rows) {
    Parsed p = Parse(row.args, row.env);
    ASSERT_EQ(p.outcome, ParseOutcome::kRun) << row.name << ": " << p.err;
    EXPECT_EQ(p.config.spec.rdzv.token_in_argv, row.in_argv) << row.name;
    EXPECT_EQ(p.config.spec.rdzv.token, row.token) << row.name;
    EXPECT_EQ(p.config.spec.rdzv.token_file, row.token_file) << row.name;
  }
}

// ELASTIC_RDZV_PEERS (issue 19 item 17): the run's candidate nodes, read at the edge;
// a bad entry is a usage error naming it.
TEST(LaunchConfigTest, PeersComeFromTheEnvironment) {
  Parsed p = Parse({"t.py"}, {{"ELASTIC_RDZV_PEERS", "10.0.0.1,10.0.0.2"}});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.spec.rdzv.peers, (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
  Parsed bad = Parse({"t.py"}, {{"ELASTIC_RDZV_PEERS", "n1,10.0.0.2"}});
  EXPECT_EQ(bad.outcome, ParseOutcome::kUsageError);
  EXPECT_NE(bad.err.find("ELASTIC_RDZV_PEERS: 'n1'"), std::string::npos) << bad.err;
}

// One source for this node's rank and the node count: the parser reads Slurm's
// step variables once (the plugin's PET_NODE_RANK and --node-rank win).
TEST(LaunchConfigTest, SlurmStepGivesNodeRankAndExpectedNodes) {
  struct Row {
    const char* name;
    std::vector<const char*> args;
    EnvMap env;
    int node_rank;
    int expected_nodes;  // -1: unset
  };
  const std::vector<Row> rows = {
      {"no slurm", {"--nnodes=1:4", "x"}, {}, -1, -1},
      {"slurm", {"--nnodes=1:4", "x"}, {{"SLURM_NODEID", "2"}, {"SLURM_NNODES", "3"}}, 2, 3},
      {"pet node rank wins", {"--nnodes=1:4", "x"}, {{"SLURM_NODEID", "2"}, {"PET_NODE_RANK", "0"}}, 0, -1},
      {"option wins", {"--nnodes=1:4", "--node-rank=1", "x"}, {{"SLURM_NODEID", "2"}}, 1, -1},
      {"count outside nnodes", {"--nnodes=1:2", "x"}, {{"SLURM_NNODES", "3"}}, -1, -1},
      {"not numbers", {"--nnodes=1:4", "x"}, {{"SLURM_NODEID", "n1"}, {"SLURM_NNODES", ""}}, -1, -1},
  };
  for (const Row& row : rows) {
    Parsed p = Parse(row.args, row.env);
    ASSERT_EQ(p.outcome, ParseOutcome::kRun) << row.name << ": " << p.err;
    EXPECT_EQ(p.config.spec.rdzv.node_rank, row.node_rank) << row.name;
    EXPECT_EQ(p.config.spec.rdzv.expected_nodes.value_or(-1), row.expected_nodes) << row.name;
  }
}

TEST(LaunchConfigTest, TokenComesFromTheEnvironmentMap) {
  Parsed p = Parse({"x"}, {{"ELASTIC_RDZV_TOKEN", "s3cret"}});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.spec.rdzv.token, "s3cret");
}

TEST(MergePmixInfoTest, HostFromPmixPortFromThePlugin) {
  Parsed p = Parse({"x"}, {{"ELASTIC_SPANK_ARGV0", "x"}, {"PET_NNODES", "2:3"}, {"PET_NODE_RANK", "1"},
                           {"PET_RDZV_ENDPOINT", "n1:61000"}});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  PmixInfo info;
  info.node_rank = 2;
  info.nnodes = 3;
  info.host_address = "fd00::1";
  MergePmixInfo(info, &p.config.spec.rdzv);
  EXPECT_EQ(*p.config.spec.rdzv.endpoint, (Endpoint{"fd00::1", 61000}));
  EXPECT_EQ(p.config.spec.rdzv.node_rank, 2);
  EXPECT_EQ(p.config.spec.rdzv.expected_nodes, 3);
  info.nnodes = 5;  // outside --nnodes: not a count to wait for
  p.config.spec.rdzv.expected_nodes.reset();
  MergePmixInfo(info, &p.config.spec.rdzv);
  EXPECT_FALSE(p.config.spec.rdzv.expected_nodes);
}

TEST(LaunchConfigTest, CommandLineBeatsPetBeatsDefault) {
  Parsed p = Parse({"--max-restarts=5", "train.py"}, {{"PET_MAX_RESTARTS", "2"}, {"PET_ROLE", "r"}});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.spec.rdzv.max_restarts, 5);
  EXPECT_EQ(p.config.spec.role, "r");
  EXPECT_EQ(p.config.agent.shutdown_timeout_ms, 30000);
}

// The job's end time tells the time limit's SIGTERM (launcher/slurm_stop.h):
// Slurm's own variable (24.11 and later) first, the plugin's (22.05) otherwise.
TEST(LaunchConfigTest, JobEndTimeFromSlurmElseFromThePlugin) {
  Parsed slurm = Parse({"x"}, {{"SLURM_JOB_END_TIME", "1764692400"}, {"ELASTIC_JOB_END_TIME", "5"}});
  ASSERT_EQ(slurm.outcome, ParseOutcome::kRun) << slurm.err;
  EXPECT_EQ(slurm.config.agent.job_end_time, std::optional<int64_t>(1764692400));
  Parsed plugin = Parse({"x"}, {{"ELASTIC_JOB_END_TIME", "1764692401"}});
  EXPECT_EQ(plugin.config.agent.job_end_time, std::optional<int64_t>(1764692401));
  Parsed bad = Parse({"x"}, {{"SLURM_JOB_END_TIME", "0"}, {"ELASTIC_JOB_END_TIME", "1764692402"}});
  EXPECT_EQ(bad.config.agent.job_end_time, std::optional<int64_t>(1764692402));
  EXPECT_EQ(Parse({"x"}, {}).config.agent.job_end_time, std::nullopt);
}

TEST(LaunchConfigTest, SpankWrappedReadsNoOptionsFromArgv) {
  Parsed p = Parse({"--max-restarts=5", "data.txt"},
                   {{"ELASTIC_SPANK_ARGV0", "train.py"}, {"PET_MAX_RESTARTS", "1"}});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_TRUE(p.config.agent.spank_wrapped);
  EXPECT_EQ(p.config.spec.program, "train.py");
  EXPECT_EQ(p.config.spec.args, (std::vector<std::string>{"--max-restarts=5", "data.txt"}));
  EXPECT_EQ(p.config.spec.rdzv.max_restarts, 1);
}

// How the plugin wraps the task differs by Slurm version; the program the user
// typed (ELASTIC_SPANK_ARGV0) is run once, with its arguments, in both.
TEST(LaunchConfigTest, SpankWrappedProgramIsTheTasksOwnOnEverySlurm) {
  struct Case {
    const char* slurm;
    std::vector<const char*> argv;  // after elasticrun's own argv[0]
    EnvMap env;
  };
  std::vector<Case> cases = {
      {"22.05: argv[0] replaced", {"train.py", "--epochs", "2"}, {}},
      {"23.11+: launcher prepended", {"/usr/bin/python3", "train.py", "--epochs", "2"},
       {{"ELASTIC_SPANK_ARGV_PREPENDED", "1"}}},
  };
  for (const auto& c : cases) {
    EnvMap env = c.env;
    env["ELASTIC_SPANK_ARGV0"] = "python3";
    Parsed p = Parse(c.argv, env);
    ASSERT_EQ(p.outcome, ParseOutcome::kRun) << c.slurm << ": " << p.err;
    EXPECT_EQ(p.config.spec.program, "python3") << c.slurm;
    EXPECT_EQ(p.config.spec.args, (std::vector<std::string>{"train.py", "--epochs", "2"})) << c.slurm;
  }
}

struct BadCase {
  std::vector<const char*> args;
  EnvMap env;
  std::string expect;  // the message must contain this
};

TEST(LaunchConfigTest, BadValuesNameOptionAndValue) {
  std::vector<BadCase> cases = {
      {{"--nproc-per-node=zero", "x"}, {}, "--nproc-per-node: 'zero' is not N (1..4096), gpu, cpu or auto"},
      {{"x"}, {{"PET_NPROC_PER_NODE", "gpus"}}, "PET_NPROC_PER_NODE: 'gpus'"},
      {{"--rdzv-endpoint=node1:", "x"}, {}, "--rdzv-endpoint: 'node1:'"},
      {{"x"}, {{"PET_RDZV_ENDPOINT", "a b:1"}}, "PET_RDZV_ENDPOINT: 'a b:1'"},
      {{"x"}, {{"PET_BIND", "socket"}}, "PET_BIND: 'socket' is not a binding mode"},
      {{"x"}, {{"PET_MEMBIND", "loose"}}, "PET_MEMBIND: 'loose' is not a memory policy"},
      {{"--nproc-per-node=0", "x"}, {}, "--nproc-per-node: '0'"},
      {{"--max-restarts=-1", "x"}, {}, "--max-restarts: '-1'"},
      {{"--nnodes=4:2", "x"}, {}, "--nnodes: '4:2'"},
      {{"--nnodes=a", "x"}, {}, "--nnodes: 'a'"},
      {{"--rdzv-endpoint=host:99999", "x"}, {}, "port '99999'"},
      {{"--rdzv-conf=novalue", "x"}, {}, "--rdzv-conf: 'novalue'"},
      {{"--redirects=4", "x"}, {}, "--redirects: '4'"},
      {{"--tee=0:9", "x"}, {}, "--tee: '0:9'"},
      {{"--local-ranks-filter=a", "x"}, {}, "--local-ranks-filter: 'a'"},
      {{"--signals-to-handle=SIGFOO", "x"}, {}, "--signals-to-handle: 'SIGFOO'"},
      {{"--shutdown-timeout=soon", "x"}, {}, "--shutdown-timeout: 'soon'"},
      {{"--monitor-interval=-1", "x"}, {}, "--monitor-interval: '-1'"},
      {{"--bind=socket", "x"}, {}, "--bind: 'socket'"},
      {{"--membind=loose", "x"}, {}, "--membind: 'loose'"},
      {{"--gpu-vendor=intel", "x"}, {}, "--gpu-vendor: 'intel'"},
      {{"--cpus-allowed=3-1", "x"}, {}, "--cpus-allowed: '3-1'"},
      {{"--topology=/nonexistent.xml", "x"}, {}, "--topology: '/nonexistent.xml'"},
      {{"--print-binding=yaml"}, {}, "--print-binding: 'yaml'"},
      {{"--preload=torch,,numpy", "x"}, {}, "--preload: 'torch,,numpy' is not a list of Python modules: '' is not a module name"},
      {{"--preload=torch-nightly", "x"}, {}, "--preload: 'torch-nightly'"},
      {{"--preload=.torch", "x"}, {}, "--preload: '.torch'"},
      {{"--preload=a..b", "x"}, {}, "--preload: 'a..b'"},
      {{"--preload=1torch", "x"}, {}, "--preload: '1torch'"},
      {{"x"}, {{"PET_PRELOAD", "torch numpy"}}, "PET_PRELOAD: 'torch numpy'"},
      {{"x"}, {{"PET_MAX_RESTARTS", "many"}}, "PET_MAX_RESTARTS: 'many'"},
      {{"x"}, {{"PET_STANDALONE", "maybe"}}, "PET_STANDALONE: 'maybe'"},
      {{"-m", "--no-python", "x"}, {}, "--no-python"},
      {{"--no-such-option", "x"}, {}, "--no-such-option"},
      {{}, {}, "missing the program"},
  };
  for (const BadCase& c : cases) {
    Parsed p = Parse(c.args, c.env);
    EXPECT_EQ(p.outcome, ParseOutcome::kUsageError) << c.expect;
    EXPECT_NE(p.err.find(c.expect), std::string::npos) << "got: " << p.err;
  }
}

TEST(LaunchConfigTest, HelpListsEveryOptionWithDefaults) {
  Parsed p = Parse({"--help"});
  ASSERT_EQ(p.outcome, ParseOutcome::kExitOk);
  for (const char* text : {"--nproc-per-node", "--max-restarts", "--shutdown-timeout", "[default: 30]",
                           "PET_NPROC_PER_NODE", "--bind", "--print-binding", "Exit status"}) {
    EXPECT_NE(p.out.find(text), std::string::npos) << text;
  }
}

TEST(LaunchConfigTest, PreloadModuleList) {
  EXPECT_TRUE(Parse({"x"}).config.spec.preload.empty());
  EXPECT_EQ(Parse({"--preload=torch", "x"}).config.spec.preload, (std::vector<std::string>{"torch"}));
  EXPECT_EQ(Parse({"--preload", "torch,numpy.random,_my_mod2", "x"}).config.spec.preload,
            (std::vector<std::string>{"torch", "numpy.random", "_my_mod2"}));
  EXPECT_EQ(Parse({"x"}, {{"PET_PRELOAD", "torch"}}).config.spec.preload, (std::vector<std::string>{"torch"}));
}

TEST(LaunchConfigTest, Version) {
  Parsed p = Parse({"--version"});
  ASSERT_EQ(p.outcome, ParseOutcome::kExitOk);
  EXPECT_NE(p.out.find("elasticrun"), std::string::npos);
}

TEST(LaunchConfigTest, PrintBindingNeedsNoProgram) {
  Parsed p = Parse({"--print-binding=json"});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.agent.print_binding, "json");
  EXPECT_EQ(Parse({"--print-binding"}).config.agent.print_binding, "table");
}

// The config as the parser makes it from the environment (GPU lists included).
LaunchConfig WithEnv(const char* nproc, const EnvMap& env) {
  Parsed p = Parse({"--nproc-per-node", nproc, "x"}, env);
  EXPECT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  return p.config;
}

TEST(NprocTest, NumberAndGpuSources) {
  std::string err;
  LaunchConfig c = WithEnv("3", {});
  ASSERT_TRUE(ResolveNproc(&c, &err));
  EXPECT_EQ(c.spec.nproc, 3);
  c = WithEnv("gpu", {{"CUDA_VISIBLE_DEVICES", "0,2"}, {"SLURM_STEP_GPUS", "0,1,2"}});
  ASSERT_TRUE(ResolveNproc(&c, &err));
  EXPECT_EQ(c.spec.nproc, 2);
  c = WithEnv("gpu", {{"SLURM_STEP_GPUS", "4,5,6"}, {"SLURM_JOB_GPUS", "0"}});
  ASSERT_TRUE(ResolveNproc(&c, &err));
  EXPECT_EQ(c.spec.nproc, 3);
  c = WithEnv("gpu", {{"SLURM_JOB_GPUS", "1"}});
  ASSERT_TRUE(ResolveNproc(&c, &err));
  EXPECT_EQ(c.spec.nproc, 1);
}

TEST(NprocTest, GpuWithNoneIsAnError) {
  LaunchConfig c = WithEnv("gpu", {{"CUDA_VISIBLE_DEVICES", ""}});
  std::string err;
  EXPECT_FALSE(ResolveNproc(&c, &err));
  EXPECT_NE(err.find("no GPU"), std::string::npos) << err;
}

TEST(NprocTest, AutoWithoutGpusIsCpuCount) {
  std::string err;
  LaunchConfig c = WithEnv("auto", {{"CUDA_VISIBLE_DEVICES", ""}});
  ASSERT_TRUE(ResolveNproc(&c, &err));
  LaunchConfig cpu = WithEnv("cpu", {});
  ASSERT_TRUE(ResolveNproc(&cpu, &err));
  EXPECT_EQ(c.spec.nproc, cpu.spec.nproc);
  EXPECT_GE(cpu.spec.nproc, 1);
}

TEST(NprocTest, GpuCountsOfEveryListForm) {
  struct Row {
    const char* name;
    const char* list;
    int gpus;
  };
  const Row rows[] = {
      {"CUDA_VISIBLE_DEVICES", "NoDevFiles", 0}, {"CUDA_VISIBLE_DEVICES", "0", 1},
      {"CUDA_VISIBLE_DEVICES", "GPU-aaa,GPU-bbb", 2}, {"CUDA_VISIBLE_DEVICES", "-1", 0},
      // Slurm may write ranges: 0-3 is four GPUs (it started one worker).
      {"SLURM_STEP_GPUS", "0-3", 4}, {"SLURM_JOB_GPUS", "0-1,5", 3},
  };
  for (const Row& row : rows) {
    LaunchConfig c = WithEnv("auto", {{row.name, row.list}});
    std::string err;
    ASSERT_TRUE(ResolveNproc(&c, &err)) << row.list << ": " << err;
    if (row.gpus > 0) {
      EXPECT_EQ(c.spec.nproc, row.gpus) << row.name << "=" << row.list;
    }
    ASSERT_TRUE(c.spec.gpus.cuda_visible_devices || c.spec.gpus.step_gpus);
    const GpuList& list = c.spec.gpus.cuda_visible_devices ? *c.spec.gpus.cuda_visible_devices : *c.spec.gpus.step_gpus;
    EXPECT_EQ(list.name, row.name);
    EXPECT_EQ(static_cast<int>(list.devices.size()), row.gpus) << row.list;
  }
}

TEST(NprocTest, GpuModeCountsSlurmRangesAndNamesABadList) {
  std::string err;
  LaunchConfig c = WithEnv("gpu", {{"SLURM_STEP_GPUS", "0-3"}});
  ASSERT_TRUE(ResolveNproc(&c, &err)) << err;
  EXPECT_EQ(c.spec.nproc, 4);
  c = WithEnv("gpu", {{"SLURM_STEP_GPUS", "0-x"}});
  EXPECT_FALSE(ResolveNproc(&c, &err));
  EXPECT_NE(err.find("--nproc-per-node=gpu: SLURM_STEP_GPUS='0-x'"), std::string::npos) << err;
}

TEST(NprocTest, ABadGpuListIsNoErrorWhereNothingReadsIt) {
  LaunchConfig c = WithEnv("2", {{"CUDA_VISIBLE_DEVICES", "0-3"}});
  std::string err;
  ASSERT_TRUE(ResolveNproc(&c, &err)) << err;
  EXPECT_EQ(c.spec.nproc, 2);
  ASSERT_TRUE(c.spec.gpus.cuda_visible_devices);
  EXPECT_FALSE(c.spec.gpus.cuda_visible_devices->ok);
  EXPECT_NE(c.spec.gpus.cuda_visible_devices->error.find("CUDA_VISIBLE_DEVICES='0-3'"), std::string::npos);
}

TEST(WorkerCommandTest, PyRunsUnderPython) {
  LaunchConfig c;
  c.spec.program = ::testing::TempDir() + "/worker_command_train.py";  // must exist
  std::ofstream(c.spec.program) << "\n";
  c.spec.args = {"--lr", "1"};
  c.spec.python = "/bin/sh";  // any executable stands in for the interpreter
  std::string path, err;
  std::vector<std::string> argv;
  ASSERT_TRUE(BuildWorkerCommand(c, {{"PATH", "/usr/bin:/bin"}}, &path, &argv, &err)) << err;
  EXPECT_EQ(path, "/bin/sh");
  EXPECT_EQ(argv, (std::vector<std::string>{"/bin/sh", "-u", c.spec.program, "--lr", "1"}));
}

TEST(WorkerCommandTest, ModuleAndNoPython) {
  LaunchConfig c;
  c.spec.program = "pkg.train";
  c.spec.module = true;
  c.spec.python = "sh";
  std::string path, err;
  std::vector<std::string> argv;
  ASSERT_TRUE(BuildWorkerCommand(c, {{"PATH", "/bin"}}, &path, &argv, &err)) << err;
  EXPECT_EQ(path, "/bin/sh");
  EXPECT_EQ(argv, (std::vector<std::string>{"sh", "-u", "-m", "pkg.train"}));
  LaunchConfig d;
  d.spec.program = "true";
  d.spec.no_python = true;
  ASSERT_TRUE(BuildWorkerCommand(d, {{"PATH", "/nonexistent:/bin"}}, &path, &argv, &err)) << err;
  EXPECT_EQ(path, "/bin/true");
  EXPECT_EQ(argv, std::vector<std::string>{"true"});
}

TEST(WorkerCommandTest, MissingProgramIsAnError) {
  LaunchConfig c;
  c.spec.program = "no-such-program-xyz";
  std::string path, err;
  std::vector<std::string> argv;
  EXPECT_FALSE(BuildWorkerCommand(c, {{"PATH", "/bin"}}, &path, &argv, &err));
  EXPECT_NE(err.find("no-such-program-xyz"), std::string::npos);
  c.spec.program = "x.py";
  c.spec.python = "no-python-here";
  EXPECT_FALSE(BuildWorkerCommand(c, {{"PATH", "/bin"}}, &path, &argv, &err));
  EXPECT_NE(err.find("--python: 'no-python-here'"), std::string::npos) << err;
}

}  // namespace
}  // namespace elastic

namespace elastic {
namespace {

// The plugin checks an srun option's value with the option table's check
// (common/option_table.h): it must be elasticrun's own verdict and message, for
// the flag and for the PET_ variable the plugin hands the value on in.
TEST(LaunchConfigTest, TheTablesValueCheckIsElasticrunsParser) {
  struct Row { Opt id; const char* bad; };
  for (const Row& r : {Row{Opt::kNprocPerNode, "lots"}, Row{Opt::kMaxRestarts, "-1"},
                       Row{Opt::kRequeue, "many"}, Row{Opt::kRdzvConf, "novalue"},
                       Row{Opt::kBind, "sometimes"}, Row{Opt::kRdzvEndpoint, "host:99999"},
                       Row{Opt::kPreload, "torch,,numpy"}, Row{Opt::kRdzvId, "a\x01" "b"}}) {
    const OptionRow& row = RowOf(r.id);
    std::string flag = "--" + LongName(row), expected;
    ASSERT_FALSE(CheckOptionValue(r.id, flag, r.bad, &expected)) << flag;
    std::string arg = flag + "=" + r.bad;
    Parsed p = Parse({arg.c_str(), "train.py"});
    EXPECT_EQ(p.outcome, ParseOutcome::kUsageError) << flag;
    EXPECT_EQ(p.err, expected);
    ASSERT_FALSE(CheckOptionValue(r.id, PetName(row), r.bad, &expected));
    p = Parse({"train.py"}, {{PetName(row), r.bad}});
    EXPECT_EQ(p.err, expected);
  }
}


// srun --elastic without --elastic-nproc-per-node: the plugin forwards no count
// and elasticrun decides, as the plugin did before (launcher/step_gpus.h).
TEST(LaunchConfigTest, UnderThePluginWithoutACountTheStepsGpusElseOne) {
  struct Row { EnvMap env; NprocSpec::Kind kind; int nproc; };
  EnvMap base = {{"ELASTIC_SPANK_ARGV0", "train.py"}};
  auto with = [&](EnvMap extra) { extra.insert(base.begin(), base.end()); return extra; };
  for (const Row& r : {Row{with({}), NprocSpec::Kind::kCount, 1},
                       Row{with({{"CUDA_VISIBLE_DEVICES", "0,1"}}), NprocSpec::Kind::kCount, 2},
                       Row{with({{"SLURM_STEP_GPUS", "0-3"}}), NprocSpec::Kind::kCount, 4},
                       Row{with({{"PET_NPROC_PER_NODE", "gpu"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}),
                           NprocSpec::Kind::kGpu, 1},
                       Row{with({{"PET_NPROC_PER_NODE", "3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}),
                           NprocSpec::Kind::kCount, 3}}) {
    Parsed p = Parse({}, r.env);
    ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
    EXPECT_EQ(p.config.spec.nproc_spec.kind, r.kind);
    if (r.kind == NprocSpec::Kind::kCount) {
      EXPECT_EQ(p.config.spec.nproc, r.nproc);
    }
  }
  // Outside the plugin the default stays torchrun's 1, whatever the GPUs.
  Parsed plain = Parse({"train.py"}, {{"CUDA_VISIBLE_DEVICES", "0,1"}});
  ASSERT_EQ(plain.outcome, ParseOutcome::kRun) << plain.err;
  EXPECT_EQ(plain.config.spec.nproc, 1);
  Parsed bad = Parse({}, with({{"SLURM_STEP_GPUS", "0,x"}}));
  EXPECT_EQ(bad.outcome, ParseOutcome::kUsageError);
  EXPECT_NE(bad.err.find("SLURM_STEP_GPUS='0,x': 'x'"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace elastic
