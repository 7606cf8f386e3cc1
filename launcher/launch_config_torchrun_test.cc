// torchrun's command lines through elasticrun's parser (issue 22; issue 19 items 9
// and 10): static recipe, free ports, backends, repeated and empty options, `--`.
// The same lines against the real torchrun: tests/launcher/test_torchrun_compat.py.
#include <gtest/gtest.h>
#include <signal.h>

#include "launcher/launch_config.h"
#include "testing/launch_config_test_util.h"

namespace elastic {
namespace {

std::string EndpointText(const LaunchConfig& c) {
  return c.spec.rdzv.endpoint ? FormatEndpoint(*c.spec.rdzv.endpoint) : "-";
}

// Where the rendezvous is, by torchrun's rules: --rdzv-endpoint, else (static backend
// named, or --master-addr given, on more than one node) --master-addr:--master-port.
TEST(LaunchConfigTorchrunTest, RendezvousEndpointTable) {
  struct Row {
    const char* name;
    std::vector<const char*> args;
    EnvMap env;
    const char* endpoint;  // "-": none (standalone on one node, or the multi-node error later)
    int node_rank;
    const char* backend;
  } rows[] = {
      {"plain single node", {"--nproc-per-node=2", "t.py"}, {}, "-", -1, "static"},
      {"static recipe", {"--nnodes=2", "--node-rank=1", "--master-addr=10.0.0.1", "--master-port=1234", "t.py"},
       {}, "10.0.0.1:1234", 1, "static"},
      {"static recipe, underscores",
       {"--nnodes=2", "--node_rank=0", "--master_addr", "n0", "--master_port", "29501", "t.py"}, {},
       "n0:29501", 0, "static"},
      {"static recipe from PET_",
       {"t.py"}, {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"PET_MASTER_ADDR", "n0"}, {"PET_MASTER_PORT", "7"}},
       "n0:7", 1, "static"},
      {"static named: torchrun's default address",
       {"--rdzv-backend=static", "--nnodes=2", "--node-rank=1", "t.py"}, {}, "127.0.0.1:29500", 1, "static"},
      {"IPv6 master", {"--nnodes=2", "--master-addr=[fd00::1]", "--master-port=5", "t.py"}, {}, "[fd00::1]:5", -1,
       "static"},
      {"no address given: the multi-node error stays", {"--nnodes=2", "t.py"}, {}, "-", -1, "static"},
      {"static on one node: a free port", {"--master-addr=127.0.0.1", "--master-port=29500", "t.py"}, {}, "-", -1,
       "static"},
      {"endpoint wins over master", {"--nnodes=2", "--rdzv-endpoint=h:9", "--master-addr=m", "t.py"}, {}, "h:9", -1,
       "static"},
      {"c10d ignores master", {"--nnodes=2", "--rdzv-backend=c10d", "--master-addr=m", "t.py"}, {}, "-", -1, "c10d"},
      {"port 0: a free port", {"--rdzv-backend=c10d", "--rdzv-endpoint=localhost:0", "t.py"}, {}, "localhost:0", -1,
       "c10d"},
      {"standalone drops the endpoint", {"--standalone", "--rdzv-endpoint=h:9", "t.py"}, {}, "-", -1, "c10d"},
  };
  for (const Row& row : rows) {
    Parsed p = Parse(row.args, row.env);
    ASSERT_EQ(p.outcome, ParseOutcome::kRun) << row.name << ": " << p.err;
    EXPECT_EQ(EndpointText(p.config), row.endpoint) << row.name;
    EXPECT_EQ(p.config.spec.rdzv.node_rank, row.node_rank) << row.name;
    EXPECT_EQ(p.config.spec.rdzv.backend, row.backend) << row.name;
  }
}

// Each refused line names the option (or PET_ variable) and the value.
TEST(LaunchConfigTorchrunTest, RefusedLinesNameTheOption) {
  struct Row {
    const char* name;
    std::vector<const char*> args;
    EnvMap env;
    std::vector<const char*> in_err;
  } rows[] = {
      {"etcd", {"--rdzv-backend=etcd", "--rdzv-endpoint=h:2379", "t.py"}, {},
       {"--rdzv-backend: 'etcd': elasticrun has no etcd rendezvous", "use --rdzv-backend=c10d"}},
      {"etcd-v2 from the environment", {"t.py"}, {{"PET_RDZV_BACKEND", "etcd-v2"}},
       {"PET_RDZV_BACKEND: 'etcd-v2'", "use --rdzv-backend=c10d"}},
      {"unknown backend", {"--rdzv-backend=zookeeper", "t.py"}, {}, {"--rdzv-backend", "'zookeeper'"}},
      {"start method", {"--start-method=thread", "t.py"}, {}, {"--start-method", "'thread'"}},
      {"master addr with a port", {"--nnodes=2", "--master-addr=n0:5", "t.py"}, {},
       {"--master-addr: 'n0:5'", "--master-port"}},
      {"master port", {"--nnodes=2", "--master-port=99999", "t.py"}, {}, {"--master-port", "99999"}},
      {"master port from PET_", {"t.py"}, {{"PET_MASTER_PORT", "x"}}, {"PET_MASTER_PORT", "'x'"}},
      {"endpoint port out of range", {"--rdzv-endpoint=h:65536", "t.py"}, {}, {"'h:65536'", "0..65535"}},
      // Issue 19 item 9: an empty `--opt=` is an error, never the next argument's value.
      {"empty run id before an option", {"--rdzv-id=", "--nproc-per-node=2", "t.py"}, {},
       {"--rdzv-id: empty value"}},
      {"empty log dir before the program", {"--log-dir=", "t.py"}, {}, {"--log-dir: empty value"}},
      {"empty underscore spelling", {"--nproc_per_node=", "t.py"}, {}, {"--nproc_per_node: empty value"}},
      // Issue 19 item 10: run ids the rendezvous protocol refuses, refused here.
      {"run id with a newline", {"--rdzv-id=a\nelasticrun: forged", "t.py"}, {},
       {"--rdzv-id = 'a\\x0aelasticrun: forged' holds a non-printable byte"}},
      {"run id with an escape", {"t.py"}, {{"PET_RDZV_ID", "\x1b[2J"}}, {"PET_RDZV_ID", "non-printable"}},
  };
  for (const Row& row : rows) {
    Parsed p = Parse(row.args, row.env);
    ASSERT_EQ(p.outcome, ParseOutcome::kUsageError) << row.name;
    for (const char* part : row.in_err) EXPECT_NE(p.err.find(part), std::string::npos) << row.name << ": " << p.err;
  }
  std::string long_id(256, 'j');
  Parsed p = Parse({"--rdzv-id", long_id.c_str(), "t.py"});
  ASSERT_EQ(p.outcome, ParseOutcome::kUsageError);
  EXPECT_NE(p.err.find("--rdzv-id must hold 1 to 255 bytes (got 256)"), std::string::npos) << p.err;
  long_id.pop_back();
  EXPECT_EQ(Parse({"--rdzv-id", long_id.c_str(), "t.py"}).outcome, ParseOutcome::kRun);
}

// torchrun's argparse: the last of a repeated option wins (scripts append overrides).
TEST(LaunchConfigTorchrunTest, RepeatedOptionLastWins) {
  Parsed p = Parse({"--nproc-per-node=1", "--max-restarts=3", "--nproc_per_node", "2", "--max_restarts=1", "t.py"});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.spec.nproc, 2);
  EXPECT_EQ(p.config.spec.rdzv.max_restarts, 1);
  p = Parse({"--standalone", "--standalone", "--rdzv-id=a", "--rdzv-id=b", "t.py"});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
}

// `torchrun ... -m pkg.train -- --depth=26`: the script does not see that `--`.
TEST(LaunchConfigTorchrunTest, DashDashAfterTheProgram) {
  struct Row {
    std::vector<const char*> args;
    std::vector<std::string> script_args;
  } rows[] = {
      {{"-m", "pkg.train", "--", "--depth=26"}, {"--depth=26"}},
      {{"t.py", "--", "--depth=26", "--", "x"}, {"--depth=26", "--", "x"}},
      {{"t.py", "a", "--", "b"}, {"a", "--", "b"}},
      {{"--", "t.py", "--", "b"}, {"b"}},
      {{"--nproc-per-node", "1", "t.py", "--"}, {}},
  };
  for (const Row& row : rows) {
    Parsed p = Parse(row.args);
    ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
    EXPECT_EQ(p.config.spec.args, row.script_args) << row.args[1];
  }
  // Under srun --elastic the task's arguments are the user's, as srun gives them.
  Parsed s = Parse({"--", "x"}, {{"ELASTIC_SPANK_ARGV0", "t.py"}});
  ASSERT_EQ(s.outcome, ParseOutcome::kRun) << s.err;
  EXPECT_EQ(s.config.spec.args, (std::vector<std::string>{"--", "x"}));
}

TEST(LaunchConfigTorchrunTest, StartMethodAccepted) {
  for (const char* method : {"spawn", "fork", "forkserver"}) {
    EXPECT_EQ(Parse({"--start-method", method, "t.py"}).outcome, ParseOutcome::kRun) << method;
    EXPECT_EQ(Parse({"t.py"}, {{"PET_START_METHOD", method}}).outcome, ParseOutcome::kRun) << method;
  }
  EXPECT_EQ(Parse({"--start_method=fork", "t.py"}).outcome, ParseOutcome::kRun);
}

// torchrun --standalone: a fresh uuid4 run id each time, whatever --rdzv-id says.
TEST(LaunchConfigTorchrunTest, StandaloneRunIdIsAFreshUuid) {
  Parsed a = Parse({"--standalone", "--rdzv-id=mine", "t.py"});
  Parsed b = Parse({"--standalone", "t.py"});
  ASSERT_EQ(a.outcome, ParseOutcome::kRun) << a.err;
  const std::string& id = a.config.spec.rdzv.run_id;
  ASSERT_EQ(id.size(), 36u) << id;
  EXPECT_EQ(id[8], '-');
  EXPECT_EQ(id[14], '4');
  EXPECT_NE(id, b.config.spec.rdzv.run_id);
  EXPECT_EQ(Parse({"t.py"}).config.spec.rdzv.run_id, "none");
}

// The flag, then PET_ (every option's rule), then torchrun's own variable.
TEST(LaunchConfigTorchrunTest, LogLinePrefixTemplateSources) {
  EnvMap env = {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "${hostname}:${rank} "}};
  EXPECT_EQ(Parse({"t.py"}).config.agent.log_line_prefix_template, "");
  EXPECT_EQ(Parse({"t.py"}, env).config.agent.log_line_prefix_template, "${hostname}:${rank} ");
  env["PET_LOG_LINE_PREFIX_TEMPLATE"] = "[${rank}] ";
  EXPECT_EQ(Parse({"t.py"}, env).config.agent.log_line_prefix_template, "[${rank}] ");
  EXPECT_EQ(Parse({"--log_line_prefix_template=${local_rank}>", "t.py"}, env).config.agent.log_line_prefix_template,
            "${local_rank}>");
}

// torchrun 2.x's other options: the same meaning, or accepted with one warning each.
TEST(LaunchConfigTorchrunTest, OptionsWithoutAMeaningHereWarnOnce) {
  struct Row {
    std::vector<const char*> args;
    EnvMap env;
    std::vector<const char*> warnings;  // one each, in this order
    BindMode bind;
  } rows[] = {
      {{"t.py"}, {}, {}, BindMode::kAuto},
      {{"--event-log-handler=null", "t.py"}, {}, {}, BindMode::kAuto},
      {{"--event_log_handler", "console", "t.py"}, {}, {}, BindMode::kAuto},
      {{"--event-log-handler=dynamic_rendezvous", "t.py"}, {}, {}, BindMode::kAuto},
      {{"--event-log-handler=kafka", "t.py"}, {}, {"--event-log-handler: 'kafka' ignored"}, BindMode::kAuto},
      {{"--duplicate-stdout-filters=loss,,acc", "--duplicate_stderr_filters=err", "t.py"}, {}, {}, BindMode::kAuto},
      {{"--logs-specs=mine", "t.py"}, {}, {"--logs-specs: 'mine' ignored"}, BindMode::kAuto},
      {{"--logs_specs=default", "t.py"}, {}, {}, BindMode::kAuto},
      {{"--signals-to-handle=SIGTERM,SIGUSR1", "t.py"}, {{"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGUSR1"}},
       {}, BindMode::kAuto},
      {{"t.py"}, {{"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGUSR2"}},
       {"TORCHELASTIC_SIGNALS_TO_HANDLE=SIGUSR2: ignored, as torchrun does"}, BindMode::kAuto},
      {{"--numa-binding=node", "t.py"}, {}, {}, BindMode::kGpu},
      {{"--numa_binding=exclusive", "t.py"}, {}, {}, BindMode::kGpuExclusive},
      {{"--numa-binding=socket", "t.py"}, {}, {"--numa-binding=socket: binding each worker"}, BindMode::kGpu},
      {{"--numa-binding=core-complex", "--bind=none", "t.py"}, {},
       {"--numa-binding=core-complex: ignored: --bind says"}, BindMode::kNone},
  };
  for (const Row& row : rows) {
    Parsed p = Parse(row.args, row.env);
    ASSERT_EQ(p.outcome, ParseOutcome::kRun) << row.args[0] << ": " << p.err;
    ASSERT_EQ(p.config.warnings.size(), row.warnings.size()) << row.args[0];
    for (size_t i = 0; i < row.warnings.size(); ++i) {
      EXPECT_NE(p.config.warnings[i].find(row.warnings[i]), std::string::npos) << p.config.warnings[i];
    }
    EXPECT_EQ(p.config.spec.bind, row.bind) << row.args[0];
  }
  // The event record: --events / PET_EVENTS; torchrun's console handler echoes it.
  EXPECT_TRUE(Parse({"--event-log-handler=console", "t.py"}).config.agent.events_to_console);
  EXPECT_FALSE(Parse({"--event-log-handler=null", "t.py"}).config.agent.events_to_console);
  EXPECT_EQ(Parse({"--events=/x/e.jsonl", "t.py"}).config.agent.events_path, "/x/e.jsonl");
  EXPECT_EQ(Parse({"t.py"}, {{"PET_EVENTS", "/y.jsonl"}}).config.agent.events_path, "/y.jsonl");
  Parsed bad = Parse({"--numa-binding=rack", "t.py"});
  ASSERT_EQ(bad.outcome, ParseOutcome::kUsageError);
  EXPECT_NE(bad.err.find("--numa-binding"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("'rack'"), std::string::npos) << bad.err;
}

// torchrun's own variables, after the flag and PET_, named in errors.
TEST(LaunchConfigTorchrunTest, TorchrunVariables) {
  Parsed p = Parse({"t.py"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "120"}, {"PYTHON_EXEC", "/opt/py/bin/python3"},
                              {"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGUSR1"}});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.agent.shutdown_timeout_ms, 120000);
  EXPECT_EQ(p.config.spec.python, "/opt/py/bin/python3");
  // torchrun 2.14 sets TORCHELASTIC_SIGNALS_TO_HANDLE from its flag, never reads the user's.
  EXPECT_EQ(p.config.spec.signals_to_handle, (std::vector<int>{SIGTERM, SIGINT, SIGHUP, SIGQUIT}));
  EXPECT_EQ(p.config.spec.signals_to_handle_text, "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
  p = Parse({"--signals_to_handle=SIGTERM,SIGUSR1", "t.py"});
  EXPECT_EQ(p.config.spec.signals_to_handle_text, "SIGTERM,SIGUSR1");
  p = Parse({"--shutdown-timeout=5", "t.py"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "120"}, {"PET_PYTHON", "py"},
                                               {"PYTHON_EXEC", "other"}});
  ASSERT_EQ(p.outcome, ParseOutcome::kRun) << p.err;
  EXPECT_EQ(p.config.agent.shutdown_timeout_ms, 5000);
  EXPECT_EQ(p.config.spec.python, "py");
  p = Parse({"t.py"}, {{"TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "soon"}});
  ASSERT_EQ(p.outcome, ParseOutcome::kUsageError);
  EXPECT_NE(p.err.find("TORCH_ELASTIC_SHUTDOWN_TIMEOUT"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace elastic
