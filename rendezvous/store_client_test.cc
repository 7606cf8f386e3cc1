#include "rendezvous/store_client.h"

#include <gtest/gtest.h>

#include <thread>

#include "rendezvous/store_test_util.h"

namespace elastic {
namespace {

using testing::ServerThread;
using std::chrono::milliseconds;

std::unique_ptr<StoreClient> Connect(int port) {
  std::string err;
  auto c = StoreClient::Connect("127.0.0.1", port, milliseconds(20000), &err);
  EXPECT_TRUE(c) << err;
  return c;
}

TEST(StoreClient, EveryOperation) {
  ServerThread s;
  auto c = Connect(s.port());
  std::string err, value;
  ASSERT_TRUE(c->Set("/k", "v", &err)) << err;
  ASSERT_TRUE(c->Get("/k", &value, &err)) << err;
  EXPECT_EQ(value, "v");
  int64_t n = 0;
  ASSERT_TRUE(c->Add("/n", 3, &n, &err));
  EXPECT_EQ(n, 3);
  ASSERT_TRUE(c->CompareSet("/k", "v", "w", &value, &err));
  EXPECT_EQ(value, "w");
  bool ready = false;
  ASSERT_TRUE(c->Check({"/k", "/n"}, &ready, &err));
  EXPECT_TRUE(ready);
  ASSERT_TRUE(c->Check({"/k", "/nope"}, &ready, &err));
  EXPECT_FALSE(ready);
  ASSERT_TRUE(c->NumKeys(&n, &err));
  EXPECT_EQ(n, 2);
  bool deleted = false;
  ASSERT_TRUE(c->DeleteKey("/k", &deleted, &err));
  EXPECT_TRUE(deleted);
  ASSERT_TRUE(c->Wait({"/n"}, &err));
}

TEST(StoreClient, WaitTimesOutThenTheClientStillWorks) {
  ServerThread s;
  auto c = Connect(s.port());
  std::string err;
  EXPECT_FALSE(c->Wait({"/never"}, milliseconds(50), &err));
  EXPECT_NE(err.find("timed out"), std::string::npos) << err;
  // The late STOP_WAITING of the abandoned wait must not answer a later call.
  auto other = Connect(s.port());
  ASSERT_TRUE(other->Set("/never", "x", &err));
  int64_t n = 0;
  ASSERT_TRUE(c->Add("/n", 7, &n, &err)) << err;
  EXPECT_EQ(n, 7);
}

TEST(StoreClient, TwoClientsWakeEachOther) {
  ServerThread s;
  auto a = Connect(s.port());
  auto b = Connect(s.port());
  std::string err_b;
  std::string got;
  std::thread tb([&] {
    std::string err;
    b->Set("/from_b", "hi", &err);
    b->Get("/from_a", &got, &err_b);
  });
  std::string err, value;
  ASSERT_TRUE(a->Get("/from_b", &value, &err)) << err;
  EXPECT_EQ(value, "hi");
  ASSERT_TRUE(a->Set("/from_a", "hello", &err));
  tb.join();
  EXPECT_EQ(got, "hello") << err_b;
}

TEST(StoreClient, ConnectToClosedPortFailsWithReason) {
  std::string err;
  int port = 0;
  {
    UniqueFd fd;
    ListenTcp("127.0.0.1", 0, &fd, &port, &err);
  }  // closed again: nothing listens there now
  auto c = StoreClient::Connect("127.0.0.1", port, milliseconds(2000), &err);
  EXPECT_FALSE(c);
  EXPECT_NE(err.find("cannot connect"), std::string::npos) << err;
}

}  // namespace
}  // namespace elastic
