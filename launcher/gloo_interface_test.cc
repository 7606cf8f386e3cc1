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
  EXPECT_EQ(ChooseGlooInterface(false, "127.0.0.1", 1), "");
}

TEST(GlooInterfaceTest, UnresolvableHostnameAcrossNodesNamesTheRouteToTheStore) {
  EXPECT_EQ(ChooseGlooInterface(false, "127.0.0.1", 3), "lo");
}

TEST(GlooInterfaceTest, ResolvableHostnameLeavesGlooAlone) {
  EXPECT_EQ(ChooseGlooInterface(true, "127.0.0.1", 3), "");
}

// On the loop: a store address that is a name is not looked up.
TEST(GlooInterfaceTest, StoreAddressThatIsANameIsNotLookedUp) {
  EXPECT_EQ(ChooseGlooInterface(false, "localhost", 3), "");
}

}  // namespace
}  // namespace elastic
