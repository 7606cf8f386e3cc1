// Byte-level tests of the server: both dialects built from docs/design.md's
// description of the wire format, limits, garbage, and the in-process API.
#include "store/store_server.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "testing/store_test_util.h"

namespace elastic {
namespace {

using namespace testing;  // store_test_util.h: ServerThread, RawClient, the frame builders

std::string U32Bytes(uint32_t v) {
  std::string s;
  PutU32(&s, v);
  return s;
}

// A 2.x client: VALIDATE first, then PING round trips prove ordering.
TEST(StoreServer, LegacySetGetAddAndNumKeys) {
  ServerThread s;
  RawClient c(s.port());
  c.Send(AddFrame(legacy_op::kAdd, "init/", 1));
  EXPECT_EQ(c.ReadI64(), 1);
  c.Send(KeyValue(legacy_op::kSet, "/k", "hello"));  // no reply
  c.Send(KeyOnly(legacy_op::kGet, "/k"));
  EXPECT_EQ(c.ReadString(), "hello");
  c.Send(AddFrame(legacy_op::kAdd, "/n", 41));
  EXPECT_EQ(c.ReadI64(), 41);
  c.Send(AddFrame(legacy_op::kAdd, "/n", 1));
  EXPECT_EQ(c.ReadI64(), 42);
  c.Send(KeyOnly(legacy_op::kGet, "/n"));
  EXPECT_EQ(c.ReadString(), "42");  // ADD stores decimal text
  c.Send(Frame(legacy_op::kGetNumKeys));
  EXPECT_EQ(c.ReadI64(), 3);  // init/ counts
  c.Send(KeyOnly(legacy_op::kDeleteKey, "/k"));
  EXPECT_EQ(c.ReadI64(), 1);
  c.Send(KeyOnly(legacy_op::kDeleteKey, "/k"));
  EXPECT_EQ(c.ReadI64(), 0);
}

TEST(StoreServer, LegacyCompareSetQuirk) {
  ServerThread s;
  RawClient c(s.port());
  auto cas = [&](const std::string& k, const std::string& e, const std::string& d) {
    std::string f = Frame(legacy_op::kCompareSet);
    PutString(&f, k);
    PutString(&f, e);
    PutString(&f, d);
    c.Send(f);
    return c.ReadString();
  };
  EXPECT_EQ(cas("/k", "expected", "new"), "expected");  // missing key: answers expected
  c.Send(Keys(legacy_op::kCheck, {"/k"}));
  EXPECT_EQ(c.ReadU8(), kCheckNotReady);  // ... and stores nothing
  EXPECT_EQ(cas("/k", "", "first"), "first");
  EXPECT_EQ(cas("/k", "wrong", "x"), "first");
  EXPECT_EQ(cas("/k", "first", "second"), "second");
  c.Send(Keys(legacy_op::kCheck, {"/k"}));
  EXPECT_EQ(c.ReadU8(), kCheckReady);
}

TEST(StoreServer, LegacyWaitIsWokenBySetFromAnotherClient) {
  ServerThread s;
  RawClient waiter(s.port());
  RawClient setter(s.port());
  waiter.Send(Keys(legacy_op::kWait, {"/a", "/b"}));
  setter.Send(KeyValue(legacy_op::kSet, "/a", "1"));
  setter.Send(Frame(legacy_op::kGetNumKeys));  // round trip: /a is set by now
  EXPECT_EQ(setter.ReadI64(), 1);
  EXPECT_TRUE(waiter.NothingPending());
  setter.Send(KeyValue(legacy_op::kSet, "/b", "1"));
  EXPECT_EQ(waiter.ReadU8(), kWaitStopWaiting);
}

TEST(StoreServer, LegacyWatchKeyPushesChanges) {
  ServerThread s;
  RawClient watcher(s.port());
  RawClient setter(s.port());
  watcher.Send(KeyOnly(legacy_op::kWatchKey, "/w"));
  EXPECT_EQ(watcher.ReadU8(), kWatchCallbackRegistered);
  setter.Send(KeyValue(legacy_op::kSet, "/w", "v1"));
  EXPECT_EQ(watcher.ReadU8(), kWatchKeyCreated);
  EXPECT_EQ(watcher.ReadString(), "/w");
  EXPECT_EQ(watcher.ReadString(), "");
  EXPECT_EQ(watcher.ReadString(), "v1");
  setter.Send(KeyValue(legacy_op::kSet, "/w", "v2"));
  EXPECT_EQ(watcher.ReadU8(), kWatchKeyUpdated);
  EXPECT_EQ(watcher.ReadString(), "/w");
  EXPECT_EQ(watcher.ReadString(), "v1");
  EXPECT_EQ(watcher.ReadString(), "v2");
}

TEST(StoreServer, V2ValidateHasNoReplyAndPingEchoesTheNonce) {
  ServerThread s;
  RawClient c = V2Client(s.port());
  c.Send(V2Ping(0xDEADBEEF));
  EXPECT_EQ(c.Read(4), U32Bytes(0xDEADBEEF));
}

TEST(StoreServer, V2OpcodesAreShiftedByOne) {
  ServerThread s;
  RawClient c = V2Client(s.port());
  c.Send(KeyValue(v2_op::kSet, "/k", "v"));
  c.Send(KeyOnly(v2_op::kGet, "/k"));
  EXPECT_EQ(c.ReadString(), "v");
  c.Send(AddFrame(v2_op::kAdd, "/n", 5));
  EXPECT_EQ(c.ReadI64(), 5);
  c.Send(Frame(v2_op::kGetNumKeys));
  EXPECT_EQ(c.ReadI64(), 2);
  c.Send(KeyOnly(v2_op::kDeleteKey, "/k"));
  EXPECT_EQ(c.ReadI64(), 1);
}

TEST(StoreServer, V2AppendConcatenates) {
  ServerThread s;
  RawClient c = V2Client(s.port());
  c.Send(KeyValue(v2_op::kAppend, "/log", "ab"));
  c.Send(KeyValue(v2_op::kAppend, "/log", "cd"));
  c.Send(KeyOnly(v2_op::kGet, "/log"));
  EXPECT_EQ(c.ReadString(), "abcd");
}

TEST(StoreServer, V2MultiSetThenMultiGet) {
  ServerThread s;
  RawClient c = V2Client(s.port());
  std::string ms = Frame(v2_op::kMultiSet);
  PutU64(&ms, 2);
  PutString(&ms, "/a");
  PutString(&ms, "1");
  PutString(&ms, "/b");
  PutString(&ms, "22");
  c.Send(ms);
  c.Send(Keys(v2_op::kMultiGet, {"/b", "/missing", "/a"}));
  EXPECT_EQ(c.ReadString(), "22");
  EXPECT_EQ(c.ReadString(), "");  // no implicit wait: a missing key reads empty
  EXPECT_EQ(c.ReadString(), "1");
}

TEST(StoreServer, V2CancelWaitDropsThePendingWait) {
  ServerThread s;
  RawClient c = V2Client(s.port());
  c.Send(Keys(v2_op::kWait, {"/never"}));
  c.Send(Frame(v2_op::kCancelWait));
  EXPECT_EQ(c.ReadU8(), kWaitCanceled);
  RawClient other = V2Client(s.port());
  other.Send(KeyValue(v2_op::kSet, "/never", "now"));
  other.Send(V2Ping(1));
  other.Read(4);
  // No STOP_WAITING for the cancelled wait: the next bytes are the ping's.
  c.Send(V2Ping(77));
  EXPECT_EQ(c.Read(4), U32Bytes(77));
}

TEST(StoreServer, V2QueuePushPopLen) {
  ServerThread s;
  RawClient c = V2Client(s.port());
  c.Send(KeyValue(v2_op::kQueuePush, "/q", "one"));
  c.Send(KeyValue(v2_op::kQueuePush, "/q", "two"));
  c.Send(KeyOnly(v2_op::kQueueLen, "/q"));
  EXPECT_EQ(c.ReadI64(), 2);
  c.Send(KeyOnly(v2_op::kQueuePop, "/q"));
  EXPECT_EQ(c.ReadI64(), 2);
  EXPECT_EQ(c.ReadString(), "one");
  c.Send(KeyOnly(v2_op::kQueuePop, "/q"));
  EXPECT_EQ(c.ReadI64(), 1);
  EXPECT_EQ(c.ReadString(), "two");
  c.Send(KeyOnly(v2_op::kQueuePop, "/q"));
  EXPECT_EQ(c.ReadI64(), 0);
}

// 2.14's Store.list_keys() and Store.barrier().
TEST(StoreServer, V2ListKeysAndBarrier) {
  ServerThread s;
  RawClient c = V2Client(s.port());
  c.Send(KeyValue(v2_op::kSet, "/x", "1"));
  c.Send(KeyValue(v2_op::kSet, "/y", "2"));
  c.Send(Frame(v2_op::kListKeys));
  ASSERT_EQ(c.ReadI64(), 2);
  std::set<std::string> keys = {c.ReadString(), c.ReadString()};
  EXPECT_EQ(keys, (std::set<std::string>{"/x", "/y"}));
  RawClient other = V2Client(s.port());
  c.Send(AddFrame(v2_op::kBarrier, "/bar", 2));  // waits for the second arrival
  other.Send(AddFrame(v2_op::kBarrier, "/bar", 2));
  EXPECT_EQ(other.ReadU8(), kWaitStopWaiting);
  EXPECT_EQ(c.ReadU8(), kWaitStopWaiting);
  c.Send(KeyOnly(v2_op::kGet, "/bar"));
  EXPECT_EQ(c.ReadString(), "2");
}

TEST(StoreServer, BothDialectsShareOneKeyspace) {
  ServerThread s;
  RawClient v2 = V2Client(s.port());
  RawClient legacy(s.port());
  v2.Send(KeyValue(v2_op::kSet, "/shared", "from 2.x"));
  v2.Send(V2Ping(1));
  v2.Read(4);
  legacy.Send(KeyOnly(legacy_op::kGet, "/shared"));
  EXPECT_EQ(legacy.ReadString(), "from 2.x");
}

TEST(StoreServer, FrameSplitIntoSingleBytesStillWorks) {
  ServerThread s;
  RawClient c(s.port());
  std::string f = KeyValue(legacy_op::kSet, "/k", "split") + KeyOnly(legacy_op::kGet, "/k");
  for (char ch : f) c.Send(std::string(1, ch));
  EXPECT_EQ(c.ReadString(), "split");
}

TEST(StoreServer, LargeValueRoundTrips) {
  ServerThread s;
  RawClient c(s.port());
  std::string big(8 << 20, 'x');
  big[12345] = 'y';
  c.Send(KeyValue(legacy_op::kSet, "/big", big));
  c.Send(KeyOnly(legacy_op::kGet, "/big"));
  EXPECT_EQ(c.ReadString(), big);
}

TEST(StoreServer, ClientThatDoesNotReadIsHeldBackOthersAreServed) {
  ServerThread s;
  RawClient slow(s.port());
  std::string big(4 << 20, 'b');
  slow.Send(KeyValue(legacy_op::kSet, "/big", big));
  // 32 GETs of 4 MiB pipelined, none read yet: 128 MiB of replies that the
  // server must buffer only up to its high-water mark.
  std::string gets;
  for (int i = 0; i < 32; ++i) gets += KeyOnly(legacy_op::kGet, "/big");
  std::thread sender([&] { slow.Send(gets); });
  RawClient other(s.port());
  other.Send(KeyValue(legacy_op::kSet, "/small", "s"));
  other.Send(KeyOnly(legacy_op::kGet, "/small"));
  EXPECT_EQ(other.ReadString(), "s");
  int intact = 0;
  for (int i = 0; i < 32; ++i) intact += slow.ReadString() == big;  // no 4 MiB diffs in the log
  sender.join();
  EXPECT_EQ(intact, 32);
}

TEST(StoreServer, WaiterThatDisconnectsIsForgotten) {
  ServerThread s;
  {
    RawClient gone = V2Client(s.port());
    gone.Send(Keys(v2_op::kWait, {"/later"}));
    gone.Send(V2Ping(1));
    gone.Read(4);
  }
  RawClient setter(s.port());
  setter.Send(KeyValue(legacy_op::kSet, "/later", "x"));
  setter.Send(Frame(legacy_op::kGetNumKeys));
  EXPECT_EQ(setter.ReadI64(), 1);
  EXPECT_EQ(s.Post([&] { return s.server().NumConnections(); }), 1u);
}

TEST(StoreServer, GarbageDisconnectsOnlyTheSender) {
  ServerThread s;
  RawClient good(s.port());
  good.Send(KeyValue(legacy_op::kSet, "/k", "v"));
  RawClient bad(s.port());
  bad.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(bad.Closed());
  good.Send(KeyOnly(legacy_op::kGet, "/k"));
  EXPECT_EQ(good.ReadString(), "v");
}

TEST(StoreServer, OversizedKeyDisconnects) {
  ServerThread s;
  RawClient bad(s.port());
  std::string f = Frame(legacy_op::kSet);
  PutU64(&f, 1 << 20);  // a 1 MiB key
  bad.Send(f);
  EXPECT_TRUE(bad.Closed());
  EXPECT_EQ(s.Post([&] { return s.server().NumConnections(); }), 0u);
}

TEST(StoreServer, AddOnTextValueDisconnects) {
  ServerThread s;
  RawClient c(s.port());
  c.Send(KeyValue(legacy_op::kSet, "/t", "text"));
  c.Send(AddFrame(legacy_op::kAdd, "/t", 1));
  EXPECT_TRUE(c.Closed());
}

TEST(StoreServer, InProcessSetWakesSocketWaiter) {
  ServerThread s;
  RawClient c = V2Client(s.port());
  c.Send(Keys(v2_op::kWait, {"/go"}));
  c.Send(V2Ping(5));
  EXPECT_EQ(c.Read(4), U32Bytes(5));  // the WAIT is registered by now
  s.Post([&] { s.server().Set("/go", "yes"); });
  EXPECT_EQ(c.ReadU8(), kWaitStopWaiting);
}

TEST(StoreServer, InProcessGetAndAddSeeSocketWrites) {
  ServerThread s;
  RawClient c(s.port());
  c.Send(AddFrame(legacy_op::kAdd, "/count", 2));
  EXPECT_EQ(c.ReadI64(), 2);
  EXPECT_EQ(s.Post([&] { return s.server().Get("/count"); }), std::optional<std::string>("2"));
  EXPECT_EQ(s.Post([&] { return s.server().Add("/count", 3); }), 5);
  EXPECT_EQ(s.Post([&] { return s.server().Get("/absent"); }), std::nullopt);
}

TEST(StoreServer, PeerFilterRefusesAtAccept) {
  ServerThread s;
  s.Post([&] {
    s.server().SetPeerFilter([](const sockaddr_storage&, const sockaddr_storage&, std::string* why) {
      *why = "a stranger";
      return false;
    });
  });
  RawClient c(s.port());
  EXPECT_TRUE(c.Closed());
  EXPECT_EQ(s.Post([&] { return s.server().NumConnections(); }), 0u);
  EXPECT_EQ(s.Post([&] { return s.server().RefusedConnections(); }), 1u);
}

TEST(StoreServer, ManyConcurrentConnectionsAndFanOutWake) {
  ServerThread s;
  constexpr int kWaiters = 1000;
  std::vector<RawClient> waiters;
  waiters.reserve(kWaiters);
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back(s.port());
    ASSERT_TRUE(waiters.back().connected());
    waiters.back().Send(Keys(legacy_op::kWait, {"/fan"}));
  }
  RawClient setter(s.port());
  setter.Send(KeyValue(legacy_op::kSet, "/fan", "out"));
  for (auto& w : waiters) ASSERT_EQ(w.ReadU8(), kWaitStopWaiting);
  EXPECT_EQ(s.Post([&] { return s.server().NumConnections(); }), size_t{kWaiters} + 1);
}

}  // namespace
}  // namespace elastic
