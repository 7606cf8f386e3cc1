#include "launcher/zygote.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

struct CommandCase {
  std::vector<std::string> argv;
  bool ok;
  bool unbuffered, module;
  std::string target;
  std::vector<std::string> args;
};

TEST(ZygoteTest, ParsePythonCommandTable) {
  const CommandCase cases[] = {
      // worker_command.cc's own forms
      {{"python3", "-u", "train.py", "--lr", "1"}, true, true, false, "train.py", {"--lr", "1"}},
      {{"python3", "-u", "-m", "pkg.main", "x"}, true, true, true, "pkg.main", {"x"}},
      {{"/opt/venv/bin/mypy", "-u", "t.py"}, true, true, false, "t.py", {}},  // --python=/opt/venv/bin/mypy
      // srun --elastic python3 train.py: the program is the interpreter
      {{"/usr/bin/python3", "train.py"}, true, false, false, "train.py", {}},
      {{"python3.11", "-m", "pkg"}, true, false, true, "pkg", {}},
      {{"python", "-u", "-m", "pkg", "-m"}, true, true, true, "pkg", {"-m"}},
      // not for a zygote
      {{"sh", "-c", "echo"}, false, false, false, "", {}},
      {{"/bin/train.py"}, false, false, false, "", {}},
      {{"python3", "-c", "print(1)"}, false, false, false, "", {}},
      {{"python3", "-O", "train.py"}, false, false, false, "", {}},
      {{"python3"}, false, false, false, "", {}},
      {{"python3", "-u"}, false, false, false, "", {}},
      {{"python3", "-m"}, false, false, false, "", {}},
      {{"python3", ""}, false, false, false, "", {}},
      {{}, false, false, false, "", {}},
  };
  for (const CommandCase& c : cases) {
    PythonCommand got;
    std::string what = c.argv.empty() ? "(empty)" : c.argv[0] + (c.argv.size() > 1 ? " " + c.argv[1] : "");
    ASSERT_EQ(ParsePythonCommand(c.argv, "/opt/venv/bin/mypy", &got), c.ok) << what;
    if (!c.ok) continue;
    EXPECT_EQ(got.unbuffered, c.unbuffered) << what;
    EXPECT_EQ(got.module, c.module) << what;
    EXPECT_EQ(got.target, c.target) << what;
    EXPECT_EQ(got.args, c.args) << what;
  }
}

TEST(ZygoteTest, SpawnRequestCarriesTheBinding) {
  KernelBinding b;
  b.cpu_mask = {0x6};
  b.mem_mode = 1;
  b.mem_nodes = {0x1};
  b.maxnode = 64;
  PythonCommand c{true, false, "train.py", {"a"}};
  SpawnRequest r = MakeSpawnRequest(c, {"RANK=0"}, {15}, &b);
  EXPECT_EQ(r.target, "train.py");
  EXPECT_EQ(r.args, std::vector<std::string>{"a"});
  EXPECT_EQ(r.cpu_mask, b.cpu_mask);
  EXPECT_EQ(r.mem_mode, 1);
  EXPECT_EQ(r.maxnode, 64u);
  EXPECT_GT(r.agent, 1);
  EXPECT_FALSE(r.cwd.empty());
  SpawnRequest unbound = MakeSpawnRequest(c, {}, {}, nullptr);
  EXPECT_TRUE(unbound.cpu_mask.empty());
  EXPECT_EQ(unbound.mem_mode, -1);
}

}  // namespace
}  // namespace elastic

namespace elastic {
namespace {

// The deadlines have no default here (AgentSettings gives them): a zygote without
// them is not started, and the error names both values.
TEST(ZygoteTest, StartRefusesOptionsWithoutDeadlines) {
  EventLoop loop;
  Zygote zygote(loop);
  ZygoteOptions o;
  o.ready_timeout = Millis(300000);
  std::string err;
  EXPECT_FALSE(zygote.Start(o, &err));
  EXPECT_EQ(err, "its deadlines must be positive: ready_timeout 300000 ms, spawn_timeout 0 ms "
                 "(AgentSettings::zygote_ready_timeout_ms, zygote_spawn_timeout_ms)");
  EXPECT_EQ(zygote.pid(), -1);
}

}  // namespace
}  // namespace elastic
