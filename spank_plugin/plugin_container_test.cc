// The callbacks for steps in containers, over a FakeSpank: Slurm's OCI
// containers (which releases run them, which refuse and why), the agent bundle
// under pyxis, the host runner for side programs, the node address asked on the
// host. The other callbacks: plugin_test.cc.
#include "spank_plugin/plugin.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "testing/spank_api_fake.h"
#include "testing/spank_plugin_test_util.h"

namespace elastic::spank {
namespace {

// srun --container=BUNDLE (Slurm's OCI containers): from 23.02 on the wrapped
// argv reaches the bundle's config.json; the agent bundle comes in as the
// descriptor 3 that oci.conf's runtime line opens (docs/containers.md).
TEST_F(PluginTest, TaskInitRunsAnOciContainerStepThroughDescriptor3) {
  api.prepend = true;
  api.env["SLURM_CONTAINER"] = "/srv/bundles/pytorch";
  api.bundles["/usr/libexec/slurm-elastic/agent"] = 7;
  api.executables.clear();
  ASSERT_EQ(RemoteInit({"agent_bundle=/usr/libexec/slurm-elastic/agent"}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  EXPECT_EQ(api.argv[0], "/proc/self/fd/3/elasticrun");
  EXPECT_EQ(api.argv[1], "python3");
  EXPECT_TRUE(api.kept_fds.empty());  // the plugin's own descriptor stays close-on-exec
  EXPECT_EQ(api.env["ELASTIC_SPANK_ARGV0"], "python3");
}

// Which Slurm releases refuse, and with what: a table over release and configuration.
TEST_F(PluginTest, TaskInitRefusesAnOciContainerStepItCannotRunAndSaysWhy) {
  struct Case {
    SlurmRelease release;
    std::vector<std::string> plugstack;
    std::string error;  // "" = runs
  } cases[] = {
      {{22, 5}, {"agent_bundle=/opt/agent"},
       "--elastic cannot run in the OCI container '/srv/bundles/pytorch' on Slurm 22.05: before "
       "23.02 slurmstepd writes the container's command line when the step starts"},
      {{23, 2}, {"agent_bundle=/opt/agent"}, ""},
      {{26, 5}, {"agent_bundle=/opt/agent"}, ""},
      {{24, 11}, {}, "--elastic in the OCI container '/srv/bundles/pytorch' needs the agent "
                     "bundle: set agent_bundle=DIR in plugstack.conf and pass DIR to the runtime "
                     "as descriptor 3 in oci.conf"},
      {{24, 11}, {"agent_bundle=/opt/missing"},
       "the agent bundle '/opt/missing' cannot be used on this node (No such file or directory)"},
  };
  for (const Case& c : cases) {
    SetUp();
    api.env["SLURM_CONTAINER"] = "/srv/bundles/pytorch";
    api.bundles["/opt/agent"] = 7;
    api.release = c.release;
    ASSERT_EQ(RemoteInit(c.plugstack), 0);
    ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
    int rc = TaskInit(api, nodes);
    SCOPED_TRACE(fmt::format("Slurm {}.{}", c.release.major, c.release.minor));
    if (c.error.empty()) {
      EXPECT_EQ(rc, 0) << (api.errors.empty() ? "" : api.errors[0]);
      EXPECT_EQ(api.argv[0], "/proc/self/fd/3/elasticrun");
      continue;
    }
    EXPECT_EQ(rc, -1);
    ASSERT_FALSE(api.errors.empty());
    EXPECT_NE(api.errors[0].find(c.error), std::string::npos) << api.errors[0];
    EXPECT_EQ(api.argv[0], "python3");  // not wrapped
    EXPECT_EQ(api.exit_code, kTaskInitFailedExit);
  }
}


// agent_bundle=DIR: the task runs the bundle's entry point through the
// descriptor slurmstepd opened in init (before pyxis enters the image).
TEST_F(PluginTest, TaskInitRunsTheAgentBundleThroughItsDescriptor) {
  api.bundles["/usr/libexec/slurm-elastic/agent"] = 7;
  api.executables.clear();  // launcher= is not looked at (the image has no elasticrun)
  ASSERT_EQ(RemoteInit({"agent_bundle=/usr/libexec/slurm-elastic/agent"}), 0);
  EXPECT_EQ(State().agent_bundle_fd, 7);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  EXPECT_EQ(api.argv[0], "/proc/self/fd/7/elasticrun");
  EXPECT_EQ(api.kept_fds, std::vector<int>{7});
  EXPECT_EQ(api.env["ELASTIC_SPANK_ARGV0"], "python3");
}

// In a container image the node's scontrol and health checks are out of reach:
// task_init_privileged (on the host, before pyxis's) starts the host runner from
// the bundle, and task_init hands its socket to the task (launcher/host_runner.h).
TEST_F(PluginTest, AnAgentBundleStepGetsTheHostRunnerAcrossExec) {
  api.bundles["/usr/libexec/slurm-elastic/agent"] = 7;
  api.executables.clear();
  ASSERT_EQ(RemoteInit({"agent_bundle=/usr/libexec/slurm-elastic/agent"}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(TaskInitPrivileged(api), 0);
  EXPECT_EQ(api.host_runners, std::vector<std::string>{"/usr/libexec/slurm-elastic/agent/elasticrun"});
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  EXPECT_EQ(api.env["ELASTIC_HOST_RUNNER_FD"], "77");
  EXPECT_EQ(api.kept_fds, (std::vector<int>{7, 77}));
}

// Slurm's OCI containers (23.02+): the runtime passes no descriptor of the task's,
// so the runner listens on an abstract socket and task_init names it to the task.
TEST_F(PluginTest, AnOciStepGetsAListeningHostRunnerByName) {
  api.bundles["/usr/libexec/slurm-elastic/agent"] = 7;
  api.executables.clear();
  api.env["SLURM_CONTAINER"] = "/srv/bundle";
  api.items[Item::kJobId] = 41;
  ASSERT_EQ(RemoteInit({"agent_bundle=/usr/libexec/slurm-elastic/agent"}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  ASSERT_EQ(TaskInitPrivileged(api), 0);
  EXPECT_TRUE(api.host_runners.empty());
  EXPECT_EQ(api.listening_runners, std::vector<std::string>{"/usr/libexec/slurm-elastic/agent/elasticrun"});
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  EXPECT_EQ(api.env["ELASTIC_HOST_RUNNER_SOCKET"], "@slurm-elastic-host-runner.41.0.0123");
  EXPECT_EQ(api.env.count("ELASTIC_HOST_RUNNER_FD"), 0u);
  EXPECT_EQ(api.argv[0], "/proc/self/fd/3/elasticrun");
}

// No runner where it is not needed or cannot reach the task, and a runner that
// cannot start never fails the step: a table.
TEST_F(PluginTest, TheHostRunnerOnlyForAnElasticBundleStepAndNeverAFailure) {
  struct Case {
    const char* what;
    std::vector<std::string> plugstack;
    bool elastic;
    uint32_t step_id;
    const char* container;
    SlurmRelease release;
    const char* start_error;
    bool runner;     // by descriptor
    bool listening;  // by name (OCI)
  } cases[] = {
      {"bundle step", {"agent_bundle=/opt/agent"}, true, 0, "", {24, 11}, "", true, false},
      {"launcher= (bare nodes)", {"launcher=/usr/bin/elasticrun"}, true, 0, "", {24, 11}, "", false, false},
      {"plain step", {"agent_bundle=/opt/agent"}, false, 0, "", {24, 11}, "", false, false},
      {"batch step", {"agent_bundle=/opt/agent"}, true, kBatchStep, "", {24, 11}, "", false, false},
      {"OCI container", {"agent_bundle=/opt/agent"}, true, 0, "/srv/b", {24, 11}, "", false, true},
      {"OCI container, 23.02", {"agent_bundle=/opt/agent"}, true, 0, "/srv/b", {23, 2}, "", false, true},
      {"OCI container, 22.05 (refused)", {"agent_bundle=/opt/agent"}, true, 0, "/srv/b", {22, 5}, "", false, false},
      {"OCI batch step", {"agent_bundle=/opt/agent"}, true, kBatchStep, "/srv/b", {24, 11}, "", false, false},
      {"missing bundle", {"agent_bundle=/opt/missing"}, true, 0, "", {24, 11}, "", false, false},
      {"runner fails", {"agent_bundle=/opt/agent"}, true, 0, "", {24, 11}, "fork: EAGAIN", false, false},
      {"OCI runner fails", {"agent_bundle=/opt/agent"}, true, 0, "/srv/b", {24, 11}, "fork: EAGAIN", false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    SetUp();
    api.bundles["/opt/agent"] = 7;
    api.items[Item::kStepId] = c.step_id;
    api.release = c.release;
    if (*c.container) api.env["SLURM_CONTAINER"] = c.container;
    api.host_runner_error = c.start_error;
    ASSERT_EQ(RemoteInit(c.plugstack), 0);
    if (c.elastic) {
      ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
    }
    EXPECT_EQ(TaskInitPrivileged(api), 0);
    bool tried_fd = c.runner || (*c.start_error && !*c.container);
    bool tried_name = c.listening || (*c.start_error && *c.container);
    EXPECT_EQ(api.host_runners.size(), tried_fd ? 1u : 0u);
    EXPECT_EQ(api.listening_runners.size(), tried_name ? 1u : 0u);
    EXPECT_EQ(State().host_runner_fd, c.runner ? 77 : -1);
    EXPECT_EQ(State().host_runner_socket.empty(), !c.listening);
    if (*c.start_error) {
      ASSERT_EQ(api.infos.size(), 1u);
      EXPECT_NE(api.infos[0].find("no host runner (fork: EAGAIN)"), std::string::npos) << api.infos[0];
    }
    EXPECT_TRUE(api.errors.empty());
  }
}

TEST_F(PluginTest, TaskInitNamesAMissingAgentBundleAndRunsNothing) {
  ASSERT_EQ(RemoteInit({"agent_bundle=/opt/missing"}), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  EXPECT_EQ(TaskInit(api, nodes), -1);
  EXPECT_NE(api.errors.at(0).find("the agent bundle '/opt/missing' cannot be used on this node "
                                  "(No such file or directory)"),
            std::string::npos) << api.errors.at(0);
  EXPECT_EQ(api.exit_code, kTaskInitFailedExit);
  EXPECT_EQ(api.argv[0], "python3");
}

TEST_F(PluginTest, APlainStepIgnoresAMissingAgentBundle) {
  ASSERT_EQ(RemoteInit({"agent_bundle=/opt/missing"}), 0);
  EXPECT_EQ(TaskInit(api, nodes), 0);
  EXPECT_TRUE(api.errors.empty());
}

// Under pyxis, task_init runs in the image (no munge socket for slurmctld, the
// image's /etc/hosts): the node address is asked in slurmstepd's init_post_opt,
// on the host, as root (not in user_init: Slurm 23.11+ holds its auth lock
// there, and an RPC from user_init kills slurmstepd).
TEST_F(PluginTest, TaskInitUsesTheNodeAddressFoundInInitPostOpt) {
  ASSERT_EQ(RemoteInit(), 0);
  ASSERT_EQ(OptionCallback(OptionId::kElastic, nullptr, true), 0);
  // As in slurmstepd: init_post_opt runs before any task exists (no S_TASK_ID).
  uint32_t task_id = api.items[Item::kLocalTaskId];
  api.items.erase(Item::kLocalTaskId);
  ASSERT_EQ(RemoteInitPostOpt(api, nodes), 0);
  EXPECT_EQ(nodes.slurm_calls, 1);
  api.items[Item::kLocalTaskId] = task_id;
  nodes.node_addr.clear();  // what the image's namespace would answer
  ASSERT_EQ(TaskInit(api, nodes), 0) << (api.errors.empty() ? "" : api.errors[0]);
  EXPECT_EQ(nodes.slurm_calls, 1);
  EXPECT_TRUE(api.env["PET_RDZV_ENDPOINT"].starts_with("10.200.0.11:"));
}


}  // namespace
}  // namespace elastic::spank
