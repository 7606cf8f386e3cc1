#include "bench/store/store_client.h"

#include <gtest/gtest.h>

#include <thread>

#include "bench/store/store_codec.h"
#include "testing/store_test_util.h"

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

namespace elastic {
namespace {

TEST(StoreCodec, EncodedRequestsParseAsTheSameOperation) {
  std::string buf;
  store_codec::EncodeSet(&buf, "/k", "v");
  store_codec::EncodeWait(&buf, {"/k", "/j"});
  store_codec::EncodeAdd(&buf, "/n", -3);
  StoreDialect d = StoreDialect::kUnknown;
  StoreRequest req;
  std::vector<StoreOp> ops;
  std::string_view rest = buf;
  while (!rest.empty()) {
    ParseResult r = ParseStoreRequest(rest, {}, &d, &req);
    ASSERT_EQ(r.status, ParseStatus::kRequest);
    ops.push_back(req.op);
    rest.remove_prefix(r.consumed);
  }
  EXPECT_EQ(ops, (std::vector<StoreOp>{StoreOp::kSet, StoreOp::kWait, StoreOp::kAdd}));
  EXPECT_EQ(req.delta, -3);
}

TEST(StoreCodec, DecodersWaitForCompleteReplies) {
  std::string reply;
  PutString(&reply, "value");
  std::string v;
  for (size_t len = 0; len < reply.size(); ++len) EXPECT_EQ(store_codec::DecodeString(reply.substr(0, len), &v), 0u);
  EXPECT_EQ(store_codec::DecodeString(reply + "next", &v), reply.size());
  EXPECT_EQ(v, "value");
  int64_t n = 0;
  EXPECT_EQ(store_codec::DecodeI64(std::string(7, '\0'), &n), 0u);
  uint8_t b = 9;
  EXPECT_EQ(store_codec::DecodeU8("", &b), 0u);
  EXPECT_EQ(store_codec::DecodeU8(std::string(1, '\0'), &b), 1u);
  EXPECT_EQ(b, 0);
}

}  // namespace
}  // namespace elastic
