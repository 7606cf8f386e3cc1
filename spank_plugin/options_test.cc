#include "spank_plugin/options.h"

#include <set>

#include <gtest/gtest.h>

namespace elastic::spank {
namespace {

// What plugin.cc hands Slurm is the option table's srun rows (common/option_table.h),
// field for field, val their index.
TEST(OptionTable, SpankOptionArrayIsTheTablesSrunRows) {
  auto array = SpankOptionArray();
  std::set<std::string> names;
  for (size_t k = 0; k < kSrunOptionCount; ++k) {
    const OptionRow& row = *SrunRows()[k];
    EXPECT_EQ(array[k].name, row.srun.name);
    EXPECT_EQ(array[k].arginfo, row.srun.arginfo);
    EXPECT_EQ(array[k].usage, row.srun.usage);
    EXPECT_EQ(array[k].has_arg, row.srun.has_arg);
    EXPECT_EQ(array[k].val, static_cast<int>(k));
    names.insert(array[k].name);
  }
  EXPECT_EQ(names.size(), 19u);
  EXPECT_EQ(OptionEnvNames().size(), 2 * names.size());
}

// The plugin refuses a bad value with the table's check, which is elasticrun's
// parser (launcher/launch_config_test.cc proves that half): the same message,
// naming the option as typed on srun's line.
TEST(OptionTable, ABadValueGetsTheTablesMessageNamingTheSrunOption) {
  struct Row { OptionId id; const char* bad; };
  for (const Row& r : {Row{OptionId::kNprocPerNode, "lots"}, Row{OptionId::kMaxRestarts, "-1"},
                       Row{OptionId::kRequeue, "many"}, Row{OptionId::kNodeMultiple, "0"},
                       Row{OptionId::kRdzvConf, "novalue"}, Row{OptionId::kBind, "sometimes"},
                       Row{OptionId::kRdzvEndpoint, "host:99999"}, Row{OptionId::kPreload, "torch,,numpy"},
                       Row{OptionId::kRdzvId, "a\x01b"}}) {
    std::string what = std::string("--") + RowOf(r.id).srun.name, expected, err;
    ASSERT_FALSE(CheckOptionValue(r.id, what, r.bad, &expected)) << what;
    ElasticOptions o;
    EXPECT_FALSE(ApplyOption(r.id, r.bad, &o, &err)) << what;
    EXPECT_EQ(err, expected);
    EXPECT_NE(err.find(what), std::string::npos) << err;
  }
}

TEST(ElasticOption, NoValueMeansTheStepsNodes) {
  ElasticOptions o;
  std::string err;
  ASSERT_TRUE(ApplyOption(OptionId::kElastic, nullptr, &o, &err));
  EXPECT_EQ(o.mode, ElasticMode::kOn);
  EXPECT_FALSE(o.nnodes);
}

// Slurm 22.05 exports a bare `sbatch --elastic` / `salloc --elastic` to the
// job's sruns as SLURM_SPANK__SLURM_SPANK_OPTION_elastic_elastic=(null).
TEST(ElasticOption, SlurmsNullStringMeansNoValue) {
  for (const char* value : {"(null)", ""}) {
    ElasticOptions o;
    std::string err;
    ASSERT_TRUE(ApplyOption(OptionId::kElastic, "2:3", &o, &err));
    ASSERT_TRUE(ApplyOption(OptionId::kElastic, value, &o, &err)) << value << ": " << err;
    EXPECT_EQ(o.mode, ElasticMode::kOn) << value;
    EXPECT_FALSE(o.nnodes) << value;
  }
}

TEST(ElasticOption, RangeAndSingleCount) {
  ElasticOptions o;
  std::string err;
  ASSERT_TRUE(ApplyOption(OptionId::kElastic, "2:8", &o, &err));
  EXPECT_EQ(*o.nnodes, std::make_pair(2, 8));
  ASSERT_TRUE(ApplyOption(OptionId::kElastic, "4", &o, &err));
  EXPECT_EQ(*o.nnodes, std::make_pair(4, 4));
}

TEST(ElasticOption, OffDisablesAndClearsTheRange) {
  ElasticOptions o;
  std::string err;
  ASSERT_TRUE(ApplyOption(OptionId::kElastic, "2:3", &o, &err));
  ASSERT_TRUE(ApplyOption(OptionId::kElastic, "off", &o, &err));
  EXPECT_EQ(o.mode, ElasticMode::kOff);
  EXPECT_FALSE(o.nnodes);
}

TEST(ElasticOption, OffIsAlsoNoAndZeroInAnyCase) {
  // Documented (docs/user.md, the man page), as srun reads its own off/no values;
  // "OFF" used to be refused while "no" and "0" silently meant off.
  for (const char* off : {"off", "OFF", "Off", "no", "NO", "0"}) {
    ElasticOptions o;
    std::string err;
    ASSERT_TRUE(ApplyOption(OptionId::kElastic, "2:3", &o, &err));
    EXPECT_TRUE(ApplyOption(OptionId::kElastic, off, &o, &err)) << off << ": " << err;
    EXPECT_EQ(o.mode, ElasticMode::kOff) << off;
  }
}

TEST(ElasticOption, BadValuesNameOptionValueAndWhatIsAllowed) {
  for (const char* bad : {"3:2", "0:2", "a", "2:", ":3", "-1", "2:3:4", "1.5"}) {
    ElasticOptions o;
    std::string err;
    EXPECT_FALSE(ApplyOption(OptionId::kElastic, bad, &o, &err)) << bad;
    EXPECT_NE(err.find("--elastic"), std::string::npos) << err;
    EXPECT_NE(err.find(std::string("'") + bad + "'"), std::string::npos) << err;
    EXPECT_NE(err.find("MIN:MAX"), std::string::npos) << err;
    EXPECT_EQ(o.mode, ElasticMode::kUnset);
  }
}

TEST(ApplyOption, IsIdempotent) {
  ElasticOptions once, twice;
  std::string err;
  for (int i = 0; i < 2; ++i) {
    ElasticOptions* o = i == 0 ? &once : &twice;
    for (int k = 0; k <= i; ++k) {
      ASSERT_TRUE(ApplyOption(OptionId::kElastic, "2:3", o, &err));
      ASSERT_TRUE(ApplyOption(OptionId::kRdzvConf, "a=1,b=2", o, &err));
      ASSERT_TRUE(ApplyOption(OptionId::kNprocPerNode, "gpu", o, &err));
      ASSERT_TRUE(ApplyOption(OptionId::kRdzvEndpoint, "n1:29555", o, &err));
    }
  }
  EXPECT_EQ(once.rdzv_conf, twice.rdzv_conf);
  EXPECT_EQ(once.given, twice.given);
  EXPECT_EQ(once.nnodes, twice.nnodes);
  EXPECT_EQ(once.endpoint, twice.endpoint);
}

TEST(ApplyOption, NprocPerNode) {
  ElasticOptions o;
  std::string err;
  for (const char* ok : {"1", "8", "gpu", "cpu", "auto"}) {
    EXPECT_TRUE(ApplyOption(OptionId::kNprocPerNode, ok, &o, &err)) << ok;
  }
  EXPECT_FALSE(ApplyOption(OptionId::kNprocPerNode, "0", &o, &err));
  EXPECT_FALSE(ApplyOption(OptionId::kNprocPerNode, "gpus", &o, &err));
  EXPECT_NE(err.find("--elastic-nproc-per-node: 'gpus'"), std::string::npos) << err;
  EXPECT_NE(err.find("gpu, cpu or auto"), std::string::npos) << err;
  EXPECT_FALSE(ApplyOption(OptionId::kNprocPerNode, nullptr, &o, &err));
}

TEST(ApplyOption, NumbersAndPorts) {
  ElasticOptions o;
  std::string err;
  EXPECT_TRUE(ApplyOption(OptionId::kMaxRestarts, "3", &o, &err));
  EXPECT_EQ(*o.max_restarts, 3);
  EXPECT_FALSE(ApplyOption(OptionId::kMaxRestarts, "-1", &o, &err));
  EXPECT_NE(err.find("--elastic-max-restarts: '-1'"), std::string::npos) << err;
  EXPECT_TRUE(ApplyOption(OptionId::kRequeue, "0", &o, &err)) << err;
  EXPECT_EQ(*o.requeue, 0);
  EXPECT_FALSE(ApplyOption(OptionId::kRequeue, "two", &o, &err));
  EXPECT_NE(err.find("--elastic-requeue: 'two'"), std::string::npos) << err;
  EXPECT_TRUE(ApplyOption(OptionId::kRdzvPort, "29500", &o, &err));
  EXPECT_FALSE(ApplyOption(OptionId::kRdzvPort, "65536", &o, &err));
  EXPECT_NE(err.find("[1, 65535]"), std::string::npos) << err;
}

TEST(ApplyOption, Endpoints) {
  std::string err;
  struct Case {
    const char* text;
    const char* host;
    int port;
  } cases[] = {{"n1", "n1", 0}, {"n1:29555", "n1", 29555}, {"10.0.0.1:5", "10.0.0.1", 5},
               {"[fe80::1]:7", "fe80::1", 7}, {"[::1]", "::1", 0}, {"fe80::1", "fe80::1", 0}};
  for (const auto& c : cases) {
    ElasticOptions o;
    ASSERT_TRUE(ApplyOption(OptionId::kRdzvEndpoint, c.text, &o, &err)) << c.text << err;
    EXPECT_EQ(o.endpoint->host, c.host);
    EXPECT_EQ(o.endpoint->port.value_or(0), c.port);
  }
  for (const char* bad : {":1", "n1:", "n1:0", "n1:x", "n1:2:3", "[::1", "a b:1"}) {
    ElasticOptions o;
    EXPECT_FALSE(ApplyOption(OptionId::kRdzvEndpoint, bad, &o, &err)) << bad;
    EXPECT_NE(err.find("--elastic-rdzv-endpoint"), std::string::npos) << err;
  }
}

TEST(ApplyOption, ConfBindIdPython) {
  ElasticOptions o;
  std::string err;
  EXPECT_FALSE(ApplyOption(OptionId::kRdzvConf, "join_timeout", &o, &err));
  EXPECT_NE(err.find("--elastic-rdzv-conf"), std::string::npos);
  EXPECT_TRUE(ApplyOption(OptionId::kBind, "gpu-exclusive", &o, &err));
  EXPECT_FALSE(ApplyOption(OptionId::kBind, "socket", &o, &err));
  EXPECT_NE(err.find("--elastic-bind: 'socket'"), std::string::npos) << err;
  EXPECT_FALSE(ApplyOption(OptionId::kRdzvId, "a,b", &o, &err));
  EXPECT_FALSE(ApplyOption(OptionId::kPython, "", &o, &err));
  EXPECT_FALSE(ApplyOption(OptionId::kPreload, "torch numpy", &o, &err));
  EXPECT_NE(err.find("--elastic-preload: 'torch numpy'"), std::string::npos) << err;
  EXPECT_FALSE(ApplyOption(OptionId::kPreload, "torch,", &o, &err));
  ASSERT_TRUE(ApplyOption(OptionId::kPreload, "torch,numpy.random", &o, &err)) << err;
  EXPECT_EQ(o.preload, "torch,numpy.random");
  EXPECT_TRUE(ApplyOption(OptionId::kNoPython, nullptr, &o, &err));
  EXPECT_TRUE(o.no_python);
}

TEST(ApplyOption, NodeMultipleIsAPositiveCount) {
  ElasticOptions o;
  std::string err;
  for (const char* bad : {"0", "-2", "two", "", "1.5", "100001"}) {
    EXPECT_FALSE(ApplyOption(OptionId::kNodeMultiple, bad, &o, &err)) << bad;
    EXPECT_NE(err.find("--elastic-node-multiple"), std::string::npos) << err;
    EXPECT_FALSE(o.node_multiple) << bad;
  }
  ASSERT_TRUE(ApplyOption(OptionId::kNodeMultiple, "4", &o, &err)) << err;
  EXPECT_EQ(o.node_multiple, 4);
  PluginConfig c;
  EXPECT_FALSE(ParsePluginArgs({"node_multiple=0"}, "/x", &c, &err));
  EXPECT_NE(err.find("plugstack.conf: node_multiple: '0'"), std::string::npos) << err;
}

TEST(PluginArgs, DefaultsAndEveryKey) {
  PluginConfig c;
  std::string err;
  ASSERT_TRUE(ParsePluginArgs({}, "/usr/bin/elasticrun", &c, &err));
  EXPECT_EQ(c.launcher, "/usr/bin/elasticrun");
  EXPECT_FALSE(c.default_on);
  ASSERT_TRUE(ParsePluginArgs({"launcher=/opt/e/elasticrun", "max_restarts=2", "port=20000-20099",
                               "bind=numa", "python=/usr/bin/python3", "health_check=/etc/slurm/hc.sh",
                               "node_multiple=4", "requeue=2", "agent_bundle=/usr/libexec/e",
                               "default=on"},
                              "/usr/bin/elasticrun", &c, &err))
      << err;
  EXPECT_EQ(c.launcher, "/opt/e/elasticrun");
  EXPECT_EQ(*c.max_restarts, 2);
  EXPECT_EQ(c.port_lo, 20000);
  EXPECT_EQ(c.port_hi, 20099);
  EXPECT_EQ(*c.bind, BindMode::kNuma);
  EXPECT_EQ(*c.health_check, "/etc/slurm/hc.sh");
  EXPECT_EQ(c.node_multiple, 4);
  EXPECT_EQ(*c.requeue, 2);
  EXPECT_EQ(c.agent_bundle, "/usr/libexec/e");
  EXPECT_TRUE(c.default_on);
  EXPECT_FALSE(ParsePluginArgs({"requeue=-1"}, "/x", &c, &err));
  EXPECT_NE(err.find("plugstack.conf: requeue: '-1'"), std::string::npos) << err;
  EXPECT_FALSE(ParsePluginArgs({"health_check="}, "/x", &c, &err));
  EXPECT_NE(err.find("plugstack.conf: health_check: needs a value"), std::string::npos) << err;
  ASSERT_TRUE(ParsePluginArgs({"port=29500"}, "/x", &c, &err));
  EXPECT_EQ(*c.fixed_port, 29500);
}

TEST(PluginArgs, UnknownKeyAndBadValuesAreNamed) {
  PluginConfig c;
  std::string err;
  EXPECT_FALSE(ParsePluginArgs({"colour=blue"}, "/x", &c, &err));
  EXPECT_NE(err.find("unknown argument 'colour'"), std::string::npos) << err;
  EXPECT_FALSE(ParsePluginArgs({"default=maybe"}, "/x", &c, &err));
  EXPECT_NE(err.find("default: 'maybe'"), std::string::npos) << err;
  EXPECT_FALSE(ParsePluginArgs({"port=9-3"}, "/x", &c, &err));
  EXPECT_NE(err.find("port: '9-3'"), std::string::npos) << err;
  EXPECT_FALSE(ParsePluginArgs({"launcher=elasticrun"}, "/x", &c, &err));
  EXPECT_NE(err.find("absolute path"), std::string::npos) << err;
  EXPECT_FALSE(ParsePluginArgs({"agent_bundle=agent"}, "/x", &c, &err));
  EXPECT_NE(err.find("agent_bundle: 'agent' is not an absolute path"), std::string::npos) << err;
  EXPECT_FALSE(ParsePluginArgs({"novalue"}, "/x", &c, &err));
  EXPECT_FALSE(ParsePluginArgs({"preload=torch;rm"}, "/x", &c, &err));
  EXPECT_NE(err.find("plugstack.conf: preload: 'torch;rm'"), std::string::npos) << err;
  EXPECT_FALSE(ParsePluginArgs({"bind=all"}, "/x", &c, &err));
  EXPECT_NE(err.find("plugstack.conf: bind"), std::string::npos) << err;
}

// token_key=PATH: an absolute path here; its file (owner, mode, size) is checked
// where slurmstepd reads it as root (step_token_test.cc, CheckTokenKey).
TEST(PluginArgs, TokenKey) {
  struct Case {
    const char* arg;
    const char* key;        // nullptr: refused
    const char* error_has;
  } cases[] = {
      {"token_key=/etc/slurm/elastic-token.key", "/etc/slurm/elastic-token.key", ""},
      {"token_key=etc/token.key", nullptr, "plugstack.conf: token_key: 'etc/token.key' is not an absolute path"},
      {"token_key=", nullptr, "plugstack.conf: token_key: '' is not an absolute path"},
  };
  for (const Case& c : cases) {
    PluginConfig config;
    std::string err;
    bool ok = ParsePluginArgs({c.arg}, "/x", &config, &err);
    EXPECT_EQ(ok, c.key != nullptr) << c.arg << ": " << err;
    if (c.key) EXPECT_EQ(config.token_key, c.key) << c.arg;
    else EXPECT_NE(err.find(c.error_has), std::string::npos) << c.arg << ": " << err;
  }
  PluginConfig config;
  std::string err;
  ASSERT_TRUE(ParsePluginArgs({}, "/x", &config, &err));
  EXPECT_EQ(config.token_key, "");  // off unless the admin sets it
  EXPECT_FALSE(ParsePluginArgs({"novalue"}, "/x", &config, &err));
  EXPECT_NE(err.find("token_key"), std::string::npos) << err;  // listed among the keys
}

TEST(Combination, ElasticOptionsNeedElastic) {
  ElasticOptions o;
  PluginConfig c;
  std::string err;
  ASSERT_TRUE(ApplyOption(OptionId::kMaxRestarts, "2", &o, &err));
  EXPECT_FALSE(ValidateCombination(o, c, &err));
  EXPECT_NE(err.find("--elastic-max-restarts needs --elastic"), std::string::npos) << err;
  c.default_on = true;
  EXPECT_TRUE(ValidateCombination(o, c, &err));
  ASSERT_TRUE(ApplyOption(OptionId::kElastic, "off", &o, &err));
  EXPECT_FALSE(ElasticActive(o, c));
  // `srun --elastic=off` in a job whose sbatch line has --elastic-* options: a
  // setup step opts out of all of them.
  c.default_on = false;
  EXPECT_TRUE(ValidateCombination(o, c, &err)) << err;
}

// --elastic-grow's OPTIONS are refused at srun time, the error naming the value
// (its whole table is common/grow_options_test.cc); no value: the defaults.
TEST(ApplyOption, Grow) {
  ElasticOptions o;
  std::string err;
  for (const char* none : {static_cast<const char*>(nullptr), "", "(null)"}) {
    ASSERT_TRUE(ApplyOption(OptionId::kGrow, none, &o, &err)) << err;
    EXPECT_EQ(FormatGrowOptions(*o.grow), "on");
  }
  ASSERT_TRUE(ApplyOption(OptionId::kGrow, "qos=preempt,time=30", &o, &err)) << err;
  EXPECT_EQ(o.grow->qos, "preempt");
  EXPECT_EQ(o.grow->time, "30");
  EXPECT_FALSE(ApplyOption(OptionId::kGrow, "qos=pre empt", &o, &err));
  EXPECT_EQ(err, "--elastic-grow=qos=pre empt: qos='pre empt' is not a Slurm name (letters, digits, '_', '-', '.')");
  EXPECT_EQ(o.grow->qos, "preempt") << "left as it was";
  PluginConfig c;
  EXPECT_FALSE(ValidateCombination(o, c, &err));
  EXPECT_EQ(err, "--elastic-grow needs --elastic (add --elastic or --elastic=MIN:MAX)");
  ASSERT_TRUE(ApplyOption(OptionId::kElastic, "2:4", &o, &err));
  EXPECT_TRUE(ValidateCombination(o, c, &err)) << err;
  ASSERT_TRUE(ApplyOption(OptionId::kJoin, "77", &o, &err));
  EXPECT_FALSE(ValidateCombination(o, c, &err));
  EXPECT_EQ(err, "--elastic-join=77 with --elastic-grow: the helper jobs are the joined job's (job 77's own "
                 "step grows); drop --elastic-grow");
}

TEST(Combination, ConflictingPorts) {
  ElasticOptions o;
  PluginConfig c;
  std::string err;
  ASSERT_TRUE(ApplyOption(OptionId::kElastic, nullptr, &o, &err));
  ASSERT_TRUE(ApplyOption(OptionId::kRdzvPort, "1000", &o, &err));
  ASSERT_TRUE(ApplyOption(OptionId::kRdzvEndpoint, "h:2000", &o, &err));
  EXPECT_FALSE(ValidateCombination(o, c, &err));
  EXPECT_NE(err.find("differ"), std::string::npos);
}

// Slurm 23.x runs a remote option callback twice when the option arrives both
// by message and by environment (24.05+ once): applying twice must equal once.
TEST(OptionsTest, EveryOptionAppliedTwiceEqualsOnce) {
  struct Row { OptionId id; const char* value; };
  const Row rows[] = {
      {OptionId::kElastic, "2:8"},           {OptionId::kNprocPerNode, "gpu"},
      {OptionId::kMaxRestarts, "3"},         {OptionId::kRdzvPort, "29400"},
      {OptionId::kRdzvId, "job7"},           {OptionId::kRdzvEndpoint, "n1:29500"},
      {OptionId::kRdzvConf, "join_timeout=60,last_call_timeout=1"},
      {OptionId::kBind, "gpu"},              {OptionId::kLogDir, "/tmp/logs"},
      {OptionId::kNoPython, nullptr},        {OptionId::kPython, "/usr/bin/python3"},
      {OptionId::kPreload, "torch,numpy"},
      {OptionId::kHealthCheck, "/home/u/check.sh --gpus"},
      {OptionId::kNodeMultiple, "2"},
      {OptionId::kRequeue, "2"},
      {OptionId::kEvents, "/shared/events.jsonl"},
      {OptionId::kLogLinePrefixTemplate, "${hostname}:${rank} "},
      {OptionId::kGrow, "partition=scavenge,interval=2"},
  };
  auto describe = [](const ElasticOptions& o) {
    std::string d = std::to_string(static_cast<int>(o.mode));
    if (o.nnodes) d += " nnodes=" + std::to_string(o.nnodes->first) + ":" + std::to_string(o.nnodes->second);
    d += " nproc=" + (o.nproc_per_node ? FormatNprocSpec(*o.nproc_per_node) : "-") + " restarts=" + std::to_string(o.max_restarts.value_or(-1));
    d += " port=" + std::to_string(o.rdzv_port.value_or(-1)) + " id=" + o.rdzv_id.value_or("-");
    d += " ep=" + (o.endpoint ? FormatEndpoint(*o.endpoint) : "-");
    for (const auto& [k, v] : o.rdzv_conf) d += " conf:" + k + "=" + v;
    d += " bind=" + (o.bind ? BindModeName(*o.bind) : "-") + " log=" + o.log_dir.value_or("-");
    d += " nopy=" + std::to_string(o.no_python) + " py=" + o.python.value_or("-");
    d += " preload=" + o.preload.value_or("-");
    d += " hc=" + o.health_check.value_or("-");
    d += " k=" + std::to_string(o.node_multiple.value_or(-1));
    d += " hc=" + o.health_check.value_or("-") + " requeue=" + std::to_string(o.requeue.value_or(-1));
    d += " events=" + o.events.value_or("-");
    d += " prefix=" + o.log_line_prefix_template.value_or("-");
    d += " grow=" + (o.grow ? FormatGrowOptions(*o.grow) : "-");
    for (const auto& g : o.given) d += " given:" + g;
    return d;
  };
  ElasticOptions once, twice;
  std::string err;
  for (const Row& row : rows) {
    ASSERT_TRUE(ApplyOption(row.id, row.value, &once, &err)) << err;
    ASSERT_TRUE(ApplyOption(row.id, row.value, &twice, &err)) << err;
    ASSERT_TRUE(ApplyOption(row.id, row.value, &twice, &err)) << err;
  }
  EXPECT_EQ(describe(twice), describe(once));
  EXPECT_EQ(once.rdzv_conf.size(), 2u);
}

}  // namespace
}  // namespace elastic::spank
