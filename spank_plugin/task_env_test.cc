#include "spank_plugin/task_env.h"

#include <map>

#include <gtest/gtest.h>

#include "testing/spank_api_fake.h"

namespace elastic::spank {
namespace {

StepInfo ThreeNodeStep(uint32_t node_id) {
  StepInfo s;
  s.job_id = 42;
  s.step_id = 0;
  s.node_id = node_id;
  s.nnodes = 3;
  s.local_tasks = 1;
  s.step_nodelist = "n[1-3]";
  return s;
}

std::map<std::string, std::string> AsMap(const EnvList& env) {
  return {env.begin(), env.end()};
}

TEST(BuildTaskEnv, ThreeNodeStepOnNodeOne) {
  FakeNodes nodes;
  nodes.node_addr = {{"n1", "10.200.0.11"}};
  ElasticOptions o;
  o.mode = ElasticMode::kOn;
  o.nnodes = std::make_pair(2, 3);
  PluginConfig c;
  EnvList env;
  std::string err;
  ASSERT_TRUE(BuildTaskEnv(ThreeNodeStep(1), o, c, nodes, &env, &err)) << err;
  auto m = AsMap(env);
  EXPECT_EQ(m["PET_NNODES"], "2:3");
  EXPECT_EQ(m["PET_NODE_RANK"], "1");
  // No count given: elasticrun decides (the step's GPUs, else 1: launcher/step_gpus.h).
  EXPECT_FALSE(m.contains("PET_NPROC_PER_NODE"));
  EXPECT_EQ(m["PET_RDZV_BACKEND"], "c10d");
  EXPECT_EQ(m["PET_RDZV_ENDPOINT"], "10.200.0.11:" + std::to_string(61000 + 42 * 32));
  EXPECT_EQ(m["PET_RDZV_ID"], "42.0");
  EXPECT_EQ(m["PET_RDZV_CONF"], "expected_nodes=3,is_host=0");
  // --elastic=2:3 on 3 nodes promises to survive one lost node: one restart.
  EXPECT_EQ(m["PET_MAX_RESTARTS"], "1");
  EXPECT_FALSE(m.contains("ELASTIC_SPANK_PMIX_ENDPOINT"));
  EXPECT_EQ(nodes.resolve_calls, 1);  // tried name resolution before NodeAddr
}

TEST(BuildTaskEnv, NoRangeMeansExactlyTheStepsNodesAndNodeZeroHosts) {
  FakeNodes nodes;
  nodes.dns = {{"n1", "192.168.1.1"}};
  ElasticOptions o;
  o.mode = ElasticMode::kOn;
  PluginConfig c;
  StepInfo s = ThreeNodeStep(0);
  EnvList env;
  std::string err;
  ASSERT_TRUE(BuildTaskEnv(s, o, c, nodes, &env, &err)) << err;
  auto m = AsMap(env);
  EXPECT_EQ(m["PET_NNODES"], "3:3");
  EXPECT_EQ(m["PET_MAX_RESTARTS"], "0");
  EXPECT_FALSE(m.contains("PET_NPROC_PER_NODE"));
  EXPECT_EQ(m["PET_RDZV_CONF"], "expected_nodes=3,is_host=1");
  EXPECT_TRUE(m["PET_RDZV_ENDPOINT"].starts_with("192.168.1.1:"));
  EXPECT_EQ(nodes.slurm_calls, 0);
}

TEST(BuildTaskEnv, ALogDirGetsANodeLevelAndTeeUnlessTheUserChose) {
  // A shared --elastic-log-dir: each node its own directory; under srun there is
  // no --elastic- form of --tee, so the files are written by default.
  FakeNodes nodes;
  nodes.dns = {{"n1", "10.0.0.1"}};
  ElasticOptions o;
  o.mode = ElasticMode::kOn;
  o.log_dir = "/shared/logs";
  StepInfo step = ThreeNodeStep(1);
  step.node_name = "n2";
  EnvList env;
  std::string err;
  ASSERT_TRUE(BuildTaskEnv(step, o, PluginConfig{}, nodes, &env, &err)) << err;
  auto m = AsMap(env);
  EXPECT_EQ(m["PET_LOG_DIR"], "/shared/logs/n2");
  EXPECT_EQ(m["PET_TEE"], "3");

  step.output_files_chosen = true;  // the user exported PET_TEE or PET_REDIRECTS
  ASSERT_TRUE(BuildTaskEnv(step, o, PluginConfig{}, nodes, &env, &err)) << err;
  EXPECT_EQ(AsMap(env).count("PET_TEE"), 0u);

  o.log_dir.reset();
  step.output_files_chosen = false;
  ASSERT_TRUE(BuildTaskEnv(step, o, PluginConfig{}, nodes, &env, &err)) << err;
  EXPECT_EQ(AsMap(env).count("PET_TEE"), 0u);
  EXPECT_EQ(AsMap(env).count("PET_LOG_DIR"), 0u);
}

TEST(BuildTaskEnv, OptionsBeatPlugstackDefaults) {
  FakeNodes nodes;
  nodes.dns = {{"n1", "10.0.0.1"}};
  ElasticOptions o;
  o.mode = ElasticMode::kOn;
  o.max_restarts = 5;
  o.bind = BindMode::kNuma;
  o.python = "/opt/py";
  o.preload = "torch";
  o.log_dir = "/tmp/logs";
  o.no_python = true;
  o.nproc_per_node = NprocSpec{NprocSpec::Kind::kCpu, 0};
  o.rdzv_id = "train1";
  o.health_check = "/home/u/check.sh --gpus";
  o.node_multiple = 3;
  o.requeue = 3;
  o.events = "/shared/ev.jsonl";
  o.log_line_prefix_template = "${hostname}:${rank} ";
  o.grow = GrowOptions{};
  o.grow->partition = "scavenge";
  // Through the parser (as the plugin does); also avoids a GCC 12 -Wmaybe-uninitialized
  // false positive on optional<string> members under -fsanitize=address.
  PluginConfig c;
  std::string err;
  ASSERT_TRUE(ParsePluginArgs({"max_restarts=1", "bind=none", "python=/usr/bin/python3", "preload=numpy",
                               "health_check=/etc/slurm/hc.sh", "node_multiple=2",
                               "requeue=1"}, "/x", &c, &err));
  EnvList env;
  ASSERT_TRUE(BuildTaskEnv(ThreeNodeStep(2), o, c, nodes, &env, &err));
  auto m = AsMap(env);
  EXPECT_EQ(m["PET_MAX_RESTARTS"], "5");
  EXPECT_EQ(m["PET_BIND"], "numa");
  EXPECT_EQ(m["PET_PYTHON"], "/opt/py");
  EXPECT_EQ(m["PET_PRELOAD"], "torch");
  EXPECT_EQ(m["PET_LOG_DIR"], "/tmp/logs/node2");  // no SLURMD_NODENAME: the node id
  EXPECT_EQ(m["PET_NO_PYTHON"], "1");
  EXPECT_EQ(m["PET_NPROC_PER_NODE"], "cpu");
  EXPECT_EQ(m["PET_RDZV_ID"], "train1");
  EXPECT_EQ(m["PET_HEALTH_CHECK"], "/home/u/check.sh --gpus");
  EXPECT_EQ(m["PET_NODE_MULTIPLE"], "3");
  EXPECT_EQ(m["PET_REQUEUE"], "3");
  EXPECT_EQ(m["PET_EVENTS"], "/shared/ev.jsonl");
  EXPECT_EQ(m["PET_LOG_LINE_PREFIX_TEMPLATE"], "${hostname}:${rank} ");
  EXPECT_EQ(m["PET_GROW"], "partition=scavenge");

  ElasticOptions plain;
  plain.mode = ElasticMode::kOn;
  ASSERT_TRUE(BuildTaskEnv(ThreeNodeStep(2), plain, c, nodes, &env, &err));
  m = AsMap(env);
  EXPECT_EQ(m["PET_MAX_RESTARTS"], "1");
  EXPECT_EQ(m["PET_BIND"], "none");
  EXPECT_EQ(m["PET_PYTHON"], "/usr/bin/python3");
  EXPECT_EQ(m["PET_PRELOAD"], "numpy");
  EXPECT_EQ(m["PET_HEALTH_CHECK"], "/etc/slurm/hc.sh");
  EXPECT_EQ(m["PET_NODE_MULTIPLE"], "2");
  EXPECT_EQ(m["PET_REQUEUE"], "1");
  EXPECT_EQ(m.count("PET_EVENTS"), 0u);
  EXPECT_EQ(m.count("PET_LOG_LINE_PREFIX_TEMPLATE"), 0u);
  EXPECT_EQ(m.count("PET_GROW"), 0u);
}

TEST(BuildTaskEnv, UserConfOverridesAndExtends) {
  FakeNodes nodes;
  nodes.dns = {{"n1", "10.0.0.1"}};
  ElasticOptions o;
  o.mode = ElasticMode::kOn;
  o.rdzv_conf = {{"is_host", "0"}, {"join_timeout", "30"}};
  StepInfo s = ThreeNodeStep(0);
  s.munge_socket = "/tmp/munge/sock";
  EnvList env;
  std::string err;
  ASSERT_TRUE(BuildTaskEnv(s, o, PluginConfig{}, nodes, &env, &err));
  EXPECT_EQ(AsMap(env)["PET_RDZV_CONF"],
            "expected_nodes=3,is_host=0,munge_socket=/tmp/munge/sock,join_timeout=30");
}

TEST(ChooseRdzvPort, Precedence) {
  StepInfo s = ThreeNodeStep(0);
  ElasticOptions o;
  PluginConfig c;
  std::string src;
  EXPECT_EQ(ChooseRdzvPort(s, o, c, &src), 61000 + 42 * 32);
  s.step_id = 3;
  EXPECT_EQ(ChooseRdzvPort(s, o, c, &src), 61000 + 42 * 32 + 3);
  s.job_id = 1000000;
  EXPECT_EQ(ChooseRdzvPort(s, o, c, &src), 61000 + (1000000ull * 32 + 3) % 4536);
  c.port_lo = 20000;
  c.port_hi = 20009;
  EXPECT_EQ(ChooseRdzvPort(s, o, c, &src), 20000 + (1000000ull * 32 + 3) % 10);
  c.fixed_port = 29500;
  EXPECT_EQ(ChooseRdzvPort(s, o, c, &src), 29500);
  s.resv_ports = "12000-12001";
  EXPECT_EQ(ChooseRdzvPort(s, o, c, &src), 12000);
  EXPECT_EQ(src, "SLURM_STEP_RESV_PORTS");
  o.endpoint = Endpoint{"n1", 7000};
  EXPECT_EQ(ChooseRdzvPort(s, o, c, &src), 7000);
  o.rdzv_port = 7000;
  EXPECT_EQ(ChooseRdzvPort(s, o, c, &src), 7000);
  EXPECT_EQ(src, "--elastic-rdzv-port");
}

TEST(ChooseRdzvHost, ExplicitEndpointIsResolvedThroughSlurmWhenDnsFails) {
  FakeNodes nodes;
  nodes.node_addr = {{"n2", "10.200.0.12"}};
  ElasticOptions o;
  o.endpoint = Endpoint{"n2", 29555};
  std::string host, src, err;
  bool pmix = false;
  ASSERT_TRUE(ChooseRdzvHost(ThreeNodeStep(1), o, nodes, &host, &src, &pmix, &err));
  EXPECT_EQ(host, "10.200.0.12");
  o.endpoint->host = "elsewhere";
  ASSERT_TRUE(ChooseRdzvHost(ThreeNodeStep(1), o, nodes, &host, &src, &pmix, &err));
  EXPECT_EQ(host, "elsewhere");
  EXPECT_FALSE(pmix);

  EnvList env;
  o.mode = ElasticMode::kOn;
  ASSERT_TRUE(BuildTaskEnv(ThreeNodeStep(0), o, PluginConfig{}, nodes, &env, &err));
  EXPECT_EQ(AsMap(env)["PET_RDZV_ENDPOINT"], "elsewhere:29555");
  EXPECT_EQ(AsMap(env)["PET_RDZV_CONF"], "expected_nodes=3");  // elasticrun matches the host
}

// Issue 19 item 17: a step meant to be joined or joining (an explicit endpoint or run
// id) tells its agents the job's first nodes, so that one started after a failover
// finds the host where it is now; a node nobody can resolve is left out; a plain step
// gets none (its host is node 0 by construction).
TEST(ChooseRdzvPeers, TheJobsNodesForAStepMeantToBeJoined) {
  FakeNodes nodes;
  nodes.dns = {{"n1", "10.0.0.1"}, {"n3", "10.0.0.3"}};
  nodes.node_addr = {{"n2", "10.0.0.2"}};
  StepInfo step = ThreeNodeStep(0);
  step.step_nodelist = "n1";
  step.job_nodelist = "n1,n2,n3,n4";
  struct Row {
    const char* name;
    bool endpoint, rdzv_id;
    std::string want;
  };
  const Row rows[] = {
      {"a plain step", false, false, ""},
      {"an explicit endpoint", true, false, "10.0.0.1,10.0.0.2,10.0.0.3"},
      {"an explicit run id", false, true, "10.0.0.1,10.0.0.2,10.0.0.3"},
  };
  for (const Row& r : rows) {
    ElasticOptions o;
    o.mode = ElasticMode::kOn;
    if (r.endpoint) o.endpoint = Endpoint{"n1", 29400};
    if (r.rdzv_id) o.rdzv_id = "42.train";
    EXPECT_EQ(ChooseRdzvPeers(step, o, nodes), r.want) << r.name;
    EnvList env;
    std::string err;
    ASSERT_TRUE(BuildTaskEnv(step, o, PluginConfig{}, nodes, &env, &err)) << err;
    EXPECT_EQ(AsMap(env).count("ELASTIC_RDZV_PEERS") ? AsMap(env)["ELASTIC_RDZV_PEERS"] : "",
              r.want) << r.name;
  }
  step.job_nodelist.clear();  // the step's own nodes then
  ElasticOptions o;
  o.rdzv_id = "42.train";
  EXPECT_EQ(ChooseRdzvPeers(step, o, nodes), "10.0.0.1");
}

TEST(ChooseRdzvHost, PmixComesBeforeNameResolution) {
  FakeNodes nodes;
  nodes.dns = {{"n1", "10.0.0.1"}};
  StepInfo s = ThreeNodeStep(2);
  s.pmix = true;
  ElasticOptions o;
  o.mode = ElasticMode::kOn;
  EnvList env;
  std::string err;
  ASSERT_TRUE(BuildTaskEnv(s, o, PluginConfig{}, nodes, &env, &err));
  auto m = AsMap(env);
  EXPECT_EQ(m["ELASTIC_SPANK_PMIX_ENDPOINT"], "1");
  EXPECT_TRUE(m["PET_RDZV_ENDPOINT"].starts_with("n1:"));
  EXPECT_EQ(nodes.resolve_calls, 0);
}

TEST(ChooseRdzvHost, ReportsEverythingTriedWhenAllFail) {
  FakeNodes nodes;
  ElasticOptions o;
  std::string host, src, err;
  bool pmix = false;
  EXPECT_FALSE(ChooseRdzvHost(ThreeNodeStep(1), o, nodes, &host, &src, &pmix, &err));
  for (const char* what : {"'n1'", "--elastic-rdzv-endpoint", "PMIx", "getaddrinfo(n1)",
                           "slurm_load_node_single(n1)"}) {
    EXPECT_NE(err.find(what), std::string::npos) << what << " in " << err;
  }
  StepInfo s = ThreeNodeStep(1);
  s.step_nodelist.clear();
  EXPECT_FALSE(ChooseRdzvHost(s, o, nodes, &host, &src, &pmix, &err));
  EXPECT_NE(err.find("SLURM_STEP_NODELIST"), std::string::npos);
}

TEST(ValidateStepLayout, OneTaskPerNodeSparesAndTheNodeMultiple) {
  ElasticOptions any, up_to_2, pairs_of_2_3, pairs, triples_3_3, four_workers;
  four_workers.nproc_per_node = NprocSpec{NprocSpec::Kind::kCount, 4};
  up_to_2.nnodes = std::make_pair(1, 2);
  pairs_of_2_3.nnodes = std::make_pair(2, 3);
  pairs_of_2_3.node_multiple = 2;
  pairs.node_multiple = 2;
  triples_3_3.nnodes = std::make_pair(3, 3);
  triples_3_3.node_multiple = 2;
  PluginConfig none, site_pairs;
  site_pairs.node_multiple = 2;
  StepInfo node = ThreeNodeStep(2);
  struct Row {
    const char* name;
    StepLayout layout;
    const ElasticOptions* options;
    const PluginConfig* config;
    const char* error;  // "" = valid
  } rows[] = {
      {"srun, one task per node", WholeStepLayout(3, 3), &any, &none, ""},
      {"srun, 12 tasks: one per GPU", WholeStepLayout(3, 12), &any, &none, ""},
      {"srun -n3 on 1 node: one per GPU", WholeStepLayout(1, 3), &any, &none, ""},
      {"srun, 12 tasks and a worker count", WholeStepLayout(3, 12), &four_workers, &none,
       "--elastic-nproc-per-node=4 with 12 tasks on 3 nodes: with several tasks per node each "
       "task is one worker; drop --elastic-nproc-per-node, or run one task per node "
       "(--ntasks-per-node=1 --gpus-per-node=G)"},
      {"srun, more nodes than MAX: spares", WholeStepLayout(3, 3), &up_to_2, &none, ""},
      {"node, one task", NodeLayout(node), &any, &none, ""},
      {"pairs within 2:3", WholeStepLayout(3, 3), &pairs_of_2_3, &none, ""},
      {"pairs of the step's 3 nodes", WholeStepLayout(3, 3), &pairs, &none,
       "--elastic-node-multiple=2 with --elastic=3:3: 3:3 nodes holds no multiple of 2"},
      {"pairs of 4 nodes", WholeStepLayout(4, 4), &pairs, &none, ""},
      {"no pair within 3:3", WholeStepLayout(4, 4), &triples_3_3, &none,
       "--elastic-node-multiple=2 with --elastic=3:3: 3:3 nodes holds no multiple of 2"},
      {"the site's pairs, no MIN:MAX", WholeStepLayout(3, 3), &any, &site_pairs,
       "plugstack.conf node_multiple=2 with --elastic=3:3: 3:3 nodes holds no multiple of 2"},
  };
  for (const Row& row : rows) {
    std::string err;
    EXPECT_EQ(ValidateStepLayout(row.layout, *row.options, *row.config, &err), *row.error == '\0')
        << row.name << ": " << err;
    if (*row.error) {
      EXPECT_NE(err.find(row.error), std::string::npos) << row.name << ": " << err;
    }
  }
  ElasticOptions up_to_2_by_4 = up_to_2;
  up_to_2_by_4.node_multiple = 4;
  std::string err;
  EXPECT_FALSE(ValidateStepLayout(WholeStepLayout(3, 3), up_to_2_by_4, none, &err));
  EXPECT_EQ(err, "--elastic-node-multiple=4 with --elastic=1:2: 4 is more than MAX of 1:2 nodes (1..2)");
  node.local_tasks = 4;
  EXPECT_TRUE(ValidateStepLayout(NodeLayout(node), ElasticOptions{}, none, &err)) << err;
  EXPECT_FALSE(ValidateStepLayout(NodeLayout(node), four_workers, none, &err));
  EXPECT_NE(err.find("with 4 tasks on node 2: with several tasks per node"), std::string::npos) << err;
}

// A running step never gains nodes: fewer than MIN is refused before anything
// starts (else the agents wait out join_timeout), with the srun options that fix it.
TEST(ValidateStepLayout, FewerNodesThanMinIsRefusedWithTheFix) {
  ElasticOptions step_nodes, two_to_eight, three_to_four, exactly_four, joinable_by_id,
      joinable_by_endpoint;
  two_to_eight.nnodes = std::make_pair(2, 8);
  three_to_four.nnodes = std::make_pair(3, 4);
  exactly_four.nnodes = std::make_pair(4, 4);
  joinable_by_id = two_to_eight;
  joinable_by_id.rdzv_id = "job7.train";
  joinable_by_endpoint = two_to_eight;
  joinable_by_endpoint.endpoint = Endpoint{"n1", 29400};
  StepInfo one_node = ThreeNodeStep(0);
  one_node.nnodes = 1;
  struct Row {
    const char* name;
    StepLayout layout;
    const ElasticOptions* options;
    const char* error;  // "" = valid
  } rows[] = {
      {"README's headline without -N", WholeStepLayout(1, 1), &two_to_eight,
       "the step has 1 node and --elastic=2:8 needs at least 2: add -N2-8 --no-kill"},
      {"-N2 --elastic=3:4", WholeStepLayout(2, 2), &three_to_four,
       "the step has 2 nodes and --elastic=3:4 needs at least 3: add -N3-4 --no-kill"},
      {"--elastic=4 on 3 nodes", WholeStepLayout(3, 3), &exactly_four,
       "the step has 3 nodes and --elastic=4 needs at least 4: add -N4 "},
      {"exactly MIN", WholeStepLayout(2, 2), &two_to_eight, ""},
      {"the step's node count (no MIN)", WholeStepLayout(1, 1), &step_nodes, ""},
      {"scale-up: an explicit rendezvous id", WholeStepLayout(1, 1), &joinable_by_id, ""},
      {"scale-up: an explicit endpoint", WholeStepLayout(1, 1), &joinable_by_endpoint, ""},
      {"slurmstepd sees it too", NodeLayout(one_node), &two_to_eight,
       "the step has 1 node and --elastic=2:8 needs at least 2"},
  };
  for (const Row& row : rows) {
    std::string err;
    EXPECT_EQ(ValidateStepLayout(row.layout, *row.options, PluginConfig{}, &err), *row.error == '\0')
        << row.name << ": " << err;
    if (*row.error) {
      EXPECT_NE(err.find(row.error), std::string::npos) << row.name << ": " << err;
    }
  }
}

// A lost node counts as a restart, so --elastic=MIN:MAX gets the budget to go on
// down to MIN (README's `#SBATCH -N8 --elastic=4:8` died at the first lost node).
TEST(DefaultMaxRestarts, TheNodeLossesTheStepPromisesToSurvive) {
  ElasticOptions exact, four_to_eight, three_three, given;
  four_to_eight.nnodes = std::make_pair(4, 8);
  three_three.nnodes = std::make_pair(3, 3);
  given = four_to_eight;
  given.max_restarts = 0;
  PluginConfig none, site;
  site.max_restarts = 7;
  struct Row {
    const char* name;
    uint32_t nnodes;
    const ElasticOptions* options;
    const PluginConfig* config;
    int expected;
  } rows[] = {
      {"exactly the step's nodes", 4, &exact, &none, 0},
      {"4:8 on 8 nodes", 8, &four_to_eight, &none, 4},
      {"4:8 on 6 nodes", 6, &four_to_eight, &none, 2},
      {"3:3 on 4 nodes: one spare", 4, &three_three, &none, 1},
      {"fewer nodes than MIN (a step meant to be joined)", 2, &four_to_eight, &none, 0},
      {"the site's max_restarts", 8, &four_to_eight, &site, 7},
      {"--elastic-max-restarts beats both", 8, &given, &site, 0},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(DefaultMaxRestarts(row.nnodes, *row.options, *row.config), row.expected) << row.name;
  }
}

TEST(BuildTaskEnv, BadLayoutFromSlurmIsAnError) {
  FakeNodes nodes;
  StepInfo s = ThreeNodeStep(3);
  EnvList env;
  std::string err;
  EXPECT_FALSE(BuildTaskEnv(s, ElasticOptions{}, PluginConfig{}, nodes, &env, &err));
  s.nnodes = 0;
  s.node_id = 0;
  EXPECT_FALSE(BuildTaskEnv(s, ElasticOptions{}, PluginConfig{}, nodes, &env, &err));
}

}  // namespace
}  // namespace elastic::spank
