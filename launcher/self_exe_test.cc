#include "launcher/self_exe.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(SelfExe, AnInstalledBinaryIsItsOwnPath) {
  EXPECT_EQ(SelfExePath("/usr/bin/elasticrun", "elasticrun", 10), "/usr/bin/elasticrun");
  // argv[0] is only trusted when the loader ran us.
  EXPECT_EQ(SelfExePath("/usr/bin/elasticrun", "/proc/self/fd/3/bin/elasticrun", 10),
            "/usr/bin/elasticrun");
}

TEST(SelfExe, TheAgentBundleIsReachedThroughTheAgentsDescriptor) {
  EXPECT_EQ(SelfExePath("/usr/libexec/slurm-elastic/agent/ld-linux-x86-64.so.2",
                        "/proc/self/fd/5/bin/elasticrun", 4242),
            "/proc/4242/fd/5/bin/elasticrun");
  EXPECT_EQ(SelfExePath("/opt/b/ld-linux-x86-64.so.2", "/opt/b/bin/elasticrun", 1),
            "/opt/b/bin/elasticrun");
}

TEST(SelfExe, BundleDescriptorOfArgv0) {
  EXPECT_EQ(BundleFdOfArgv0("/proc/self/fd/12/bin/elasticrun"), 12);
  EXPECT_EQ(BundleFdOfArgv0("/proc/self/fd/x/bin/elasticrun"), -1);
  EXPECT_EQ(BundleFdOfArgv0("/proc/self/fd/12"), -1);
  EXPECT_EQ(BundleFdOfArgv0("/usr/bin/elasticrun"), -1);
}

}  // namespace
}  // namespace elastic
