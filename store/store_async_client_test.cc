#include "store/store_async_client.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "store/store_client.h"
#include "store/store_test_util.h"

namespace elastic {
namespace {

using std::chrono::milliseconds;
using testing::ServerThread;

// Runs the loop until `done` (each RunOnce blocks until something happens).
void RunUntil(EventLoop& loop, const bool& done) {
  while (!done) ASSERT_TRUE(loop.RunOnce());
}

// A store server and an async client connected to it, on this thread's loop.
class ConnectedClient : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    ASSERT_TRUE(c.Connect("127.0.0.1", s.port(), &err)) << err;
  }
  ServerThread s;
  EventLoop loop;
  StoreAsyncClient c{loop, milliseconds(20000)};
};

TEST_F(ConnectedClient, PipelinedRequestsCompleteInOrder) {
  std::vector<std::string> log;
  bool done = false;
  c.Set("/k", "v");
  c.Get("/k", [&](bool ok, const std::string& v, const std::string&) { log.push_back("get " + v + (ok ? "" : " !")); });
  c.Add("/n", 5, [&](bool ok, int64_t n, const std::string&) { log.push_back("add " + std::to_string(n) + (ok ? "" : " !")); });
  c.CompareSet("/k", "v", "w", [&](bool, const std::string& v, const std::string&) { log.push_back("cas " + v); });
  c.Check({"/k", "/n"}, [&](bool, bool ready, const std::string&) { log.push_back(ready ? "ready" : "not ready"); });
  c.NumKeys([&](bool, int64_t n, const std::string&) { log.push_back("keys " + std::to_string(n)); });
  c.DeleteKey("/k", [&](bool, int64_t n, const std::string&) {
    log.push_back("deleted " + std::to_string(n));
    done = true;
  });
  EXPECT_TRUE(log.empty());  // nothing completes inside the calls
  RunUntil(loop, done);
  EXPECT_EQ(log, (std::vector<std::string>{"get v", "add 5", "cas w", "ready", "keys 2", "deleted 1"}));
}

TEST_F(ConnectedClient, GetCompletesWhenAnotherClientSets) {
  std::string err;
  std::string value;
  bool done = false;
  c.Get("/later", [&](bool ok, const std::string& v, const std::string& e) {
    value = ok ? v : "error: " + e;
    done = true;
  });
  auto other = StoreClient::Connect("127.0.0.1", s.port(), milliseconds(20000), &err);
  ASSERT_TRUE(other);
  ASSERT_TRUE(other->Set("/later", "now", &err));
  RunUntil(loop, done);
  EXPECT_EQ(value, "now");
}

TEST_F(ConnectedClient, TimeoutFailsEveryPendingRequestAndDisconnects) {
  std::string err;
  std::vector<std::string> errors;
  c.Wait({"/never"}, milliseconds(50), [&](bool ok, const std::string& e) { errors.push_back(ok ? "ok" : e); });
  bool done = false;
  c.Add("/n", 1, [&](bool ok, int64_t, const std::string& e) {
    errors.push_back(ok ? "ok" : e);
    done = true;
  });
  RunUntil(loop, done);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("timed out"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[1], errors[0]);
  EXPECT_FALSE(c.connected());
  // Reconnecting gives a clean stream.
  ASSERT_TRUE(c.Connect("127.0.0.1", s.port(), &err)) << err;
  int64_t n = 0;
  done = false;
  c.Add("/n", 1, [&](bool, int64_t v, const std::string&) {
    n = v;
    done = true;
  });
  RunUntil(loop, done);
  EXPECT_EQ(n, 1);
}

TEST(StoreAsyncClient, ServerGoneFailsPendingRequests) {
  EventLoop loop;
  StoreAsyncClient c(loop, milliseconds(20000));
  std::string reason;
  bool done = false;
  {
    ServerThread s;
    std::string err;
    ASSERT_TRUE(c.Connect("127.0.0.1", s.port(), &err)) << err;
    c.Wait({"/never"}, milliseconds(20000), [&](bool ok, const std::string& e) {
      reason = ok ? "ok" : e;
      done = true;
    });
  }  // the server stops and closes every connection
  RunUntil(loop, done);
  EXPECT_EQ(reason.find("store 127.0.0.1:"), 0u) << reason;
  EXPECT_NE(reason.find("connection closed by the server"), std::string::npos) << reason;
}

TEST(StoreAsyncClient, CallbackMayDestroyTheClient) {
  ServerThread s;
  EventLoop loop;
  auto c = std::make_unique<StoreAsyncClient>(loop, milliseconds(20000));
  std::string err;
  ASSERT_TRUE(c->Connect("127.0.0.1", s.port(), &err)) << err;
  bool done = false;
  c->Add("/n", 1, [&](bool, int64_t, const std::string&) {
    c.reset();
    done = true;
  });
  c->Add("/n", 1, [&](bool, int64_t, const std::string&) { ADD_FAILURE() << "ran after destruction"; });
  RunUntil(loop, done);
  EXPECT_EQ(c, nullptr);
}

}  // namespace
}  // namespace elastic
