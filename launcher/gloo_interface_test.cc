#include "launcher/gloo_interface.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(GlooInterfaceTest, LoopbackDestinationIsReachedThroughLo) {
  EXPECT_EQ(InterfaceTowards("127.0.0.1"), "lo");
}

TEST(GlooInterfaceTest, UnresolvableDestinationGivesNoInterface) {
  EXPECT_EQ(InterfaceTowards("no-such-host.invalid"), "");
}

TEST(GlooInterfaceTest, LocalhostDoesNotResolveUsably) {
  EXPECT_FALSE(HostnameResolvesUsably("localhost"));
  EXPECT_FALSE(HostnameResolvesUsably("no-such-host.invalid"));
  EXPECT_FALSE(HostnameResolvesUsably(""));
}

TEST(GlooInterfaceTest, SingleNodeLeavesGlooAlone) {
  EXPECT_EQ(ChooseGlooInterface("no-such-host.invalid", "127.0.0.1", 1), "");
}

TEST(GlooInterfaceTest, UnresolvableHostnameAcrossNodesNamesTheRouteToTheStore) {
  EXPECT_EQ(ChooseGlooInterface("no-such-host.invalid", "127.0.0.1", 3), "lo");
}

}  // namespace
}  // namespace elastic
