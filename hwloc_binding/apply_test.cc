// Real binding on this machine: a forked child applies a plan made from this
// machine's own topology and reads back what the kernel says (label: process).
#include <gtest/gtest.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/parse.h"
#include "hwloc_binding/binding.h"
#include "hwloc_binding/expected_tsv.h"
#include "hwloc_binding/topology.h"

namespace elastic {
namespace {

struct ChildView {
  bool ok = false;
  std::string error;
  std::string cpus_allowed;  // Cpus_allowed_list of /proc/self/status
  std::string mems_allowed;  // Mems_allowed_list
  int policy = -1;           // get_mempolicy mode
  std::string policy_nodes;  // its node mask as a list
};

std::string StatusField(const std::string& name) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(name + ":", 0) == 0) {
      size_t value = line.find_first_not_of(" \t", name.size() + 1);
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "";
}

// Forks; the child applies `worker`'s binding as a launched worker would, then
// reports its affinity and memory policy through a pipe. No exec needed.
ChildView ApplyInChild(const BindingPlan& plan, const WorkerBinding& worker) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string err;
    std::string report;
    if (!ApplyBinding(plan, worker, &err)) {
      report = "ERR " + err;
    } else {
      int mode = -1;
      unsigned long mask[16] = {};
      Bitmap nodes;
      if (syscall(SYS_get_mempolicy, &mode, mask, 16 * 8 * sizeof(unsigned long), nullptr, 0UL) == 0) {
        for (unsigned i = 0; i < 16 * 8 * sizeof(unsigned long); ++i) {
          if (mask[i / (8 * sizeof(unsigned long))] & (1UL << (i % (8 * sizeof(unsigned long))))) {
            hwloc_bitmap_set(nodes.get(), i);
          }
        }
      }
      report = "OK\n" + StatusField("Cpus_allowed_list") + "\n" + StatusField("Mems_allowed_list") + "\n" +
               std::to_string(mode) + "\n" + nodes.List() + "\n";
    }
    ssize_t unused = write(fds[1], report.data(), report.size());
    (void)unused;
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ChildView view;
  if (text.rfind("ERR ", 0) == 0) {
    view.error = text.substr(4);
    return view;
  }
  std::vector<std::string> lines = Split(text, '\n');
  if (lines.size() < 5 || lines[0] != "OK") {
    view.error = "child said: " + text;
    return view;
  }
  view.ok = true;
  view.cpus_allowed = lines[1];
  view.mems_allowed = lines[2];
  view.policy = std::atoi(lines[3].c_str());
  view.policy_nodes = lines[4];
  return view;
}

std::string Normalized(const std::string& list) {
  Bitmap set;
  std::string err;
  if (!Bitmap::ParseList("list", list, &set, &err)) return "invalid: " + list;
  return set.List();
}

class ApplyTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("HWLOC_XMLFILE"); }

  static BindingPlan ThisMachine(BindMode mode, int nproc, MemBind membind = MemBind::kPreferred) {
    BindingRequest request;
    request.mode = mode;
    request.nproc = nproc;
    request.membind = membind;
    BindingPlan plan;
    std::string err;
    EXPECT_TRUE(PlanBinding(request, &plan, &err)) << err;
    EXPECT_TRUE(plan.this_system);
    return plan;
  }
};

TEST_F(ApplyTest, NumaPlanIsWhatTheWorkerGets) {
  BindingPlan plan = ThisMachine(BindMode::kNuma, 2);
  ASSERT_EQ(plan.workers.size(), 2u);
  for (const WorkerBinding& worker : plan.workers) {
    ChildView view = ApplyInChild(plan, worker);
    ASSERT_TRUE(view.ok) << view.error;
    EXPECT_EQ(Normalized(view.cpus_allowed), worker.cpus);
    EXPECT_EQ(Normalized(view.mems_allowed), Normalized(worker.mems));  // cpuset mems: all of them
    EXPECT_EQ(view.policy_nodes, worker.mems);
    Bitmap mems;
    std::string err;
    ASSERT_TRUE(Bitmap::ParseList("mems", worker.mems, &mems, &err)) << err;
    EXPECT_EQ(view.policy, mems.weight() == 1 ? MPOL_PREFERRED : MPOL_PREFERRED_MANY);
  }
}

TEST_F(ApplyTest, GpuExclusiveWorkersGetDisjointCpus) {
  cpu_set_t own;
  ASSERT_EQ(sched_getaffinity(0, sizeof own, &own), 0);
  if (CPU_COUNT(&own) < 2) GTEST_SKIP() << "needs 2 CPUs, this process may use " << CPU_COUNT(&own);
  int nproc = std::min<int>(CPU_COUNT(&own), 4);
  BindingPlan plan = ThisMachine(BindMode::kGpuExclusive, nproc);
  ASSERT_EQ(plan.workers.size(), static_cast<size_t>(nproc));
  Bitmap seen;
  for (const WorkerBinding& worker : plan.workers) {
    ChildView view = ApplyInChild(plan, worker);
    ASSERT_TRUE(view.ok) << view.error;
    EXPECT_EQ(Normalized(view.cpus_allowed), worker.cpus);
    Bitmap got;
    std::string err;
    ASSERT_TRUE(Bitmap::ParseList("cpus", view.cpus_allowed, &got, &err)) << err;
    EXPECT_FALSE(hwloc_bitmap_intersects(got.get(), seen.get())) << "CPUs shared: " << view.cpus_allowed;
    hwloc_bitmap_or(seen.get(), seen.get(), got.get());
    EXPECT_GE(worker.cores, 1);
  }
}

TEST_F(ApplyTest, StrictMembindUsesMpolBind) {
  BindingPlan plan = ThisMachine(BindMode::kNuma, 1, MemBind::kStrict);
  ChildView view = ApplyInChild(plan, plan.workers[0]);
  ASSERT_TRUE(view.ok) << view.error;
  EXPECT_EQ(view.policy, MPOL_BIND);
  EXPECT_EQ(view.policy_nodes, plan.workers[0].mems);
}

TEST_F(ApplyTest, MembindNoneKeepsTheDefaultPolicy) {
  BindingPlan plan = ThisMachine(BindMode::kNuma, 1, MemBind::kNone);
  ChildView view = ApplyInChild(plan, plan.workers[0]);
  ASSERT_TRUE(view.ok) << view.error;
  EXPECT_EQ(view.policy, MPOL_DEFAULT);
}

TEST_F(ApplyTest, NoneModeLeavesTheWorkerAsItWas) {
  BindingPlan plan = ThisMachine(BindMode::kNone, 1);
  ChildView view = ApplyInChild(plan, plan.workers[0]);
  ASSERT_TRUE(view.ok) << view.error;
  EXPECT_EQ(view.cpus_allowed, StatusField("Cpus_allowed_list"));
  EXPECT_EQ(view.policy, MPOL_DEFAULT);
}

TEST_F(ApplyTest, PlanFromAnotherMachinesXmlIsNotApplied) {
  // ipa20.xml names CPUs up to 223: applying it would fail or bind to whatever
  // overlaps here. ApplyBinding documents it as a no-op.
  BindingRequest request;
  request.topology_file = testing::TopologyPath("ipa20.xml");
  request.nproc = 4;
  BindingPlan plan;
  std::string err;
  ASSERT_TRUE(PlanBinding(request, &plan, &err)) << err;
  EXPECT_FALSE(plan.this_system);
  ChildView view = ApplyInChild(plan, plan.workers[3]);
  ASSERT_TRUE(view.ok) << view.error;
  EXPECT_EQ(view.cpus_allowed, StatusField("Cpus_allowed_list"));
  EXPECT_EQ(view.policy, MPOL_DEFAULT);
}

TEST_F(ApplyTest, CpusThisMachineLacksAreAnError) {
  BindingPlan plan = ThisMachine(BindMode::kNuma, 1);
  WorkerBinding worker = plan.workers[0];
  worker.cpus = "4000";
  ChildView view = ApplyInChild(plan, worker);
  EXPECT_FALSE(view.ok);
  EXPECT_NE(view.error.find("sched_setaffinity(cpus 4000)"), std::string::npos) << view.error;
}

}  // namespace
}  // namespace elastic
