// The plugin's callbacks over a FakeSpank (testing/spank_api_fake.h): the fixture
// of spank_plugin/plugin_test.cc and plugin_container_test.cc.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spank_plugin/plugin.h"
#include "testing/spank_api_fake.h"

namespace elastic::spank {

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ResetState();
    api = FakeSpank{};
    nodes = FakeNodes{};
    api.items = {{Item::kJobId, 42}, {Item::kStepId, 0},  {Item::kNodeId, 0},
                 {Item::kNnodes, 3}, {Item::kLocalTaskCount, 1}, {Item::kTotalTaskCount, 3},
                 {Item::kLocalTaskId, 0}};
    api.env = {{"SLURM_STEP_NODELIST", "n[1-3]"}, {"CUDA_VISIBLE_DEVICES", "0,1"},
               {"SLURM_CONF", "/nonexistent/slurm.conf"}};
    nodes.node_addr = {{"n1", "10.200.0.11"}};
  }
  // A slurmstepd: init with plugstack args, then the option callbacks (remote=1).
  int RemoteInit(std::vector<std::string> args = {"launcher=/usr/bin/elasticrun"}) {
    api.context = Context::kRemote;
    return Init(api, args);
  }

  FakeSpank api;
  FakeNodes nodes;
};

}  // namespace elastic::spank
