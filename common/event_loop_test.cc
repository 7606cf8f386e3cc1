#include "common/event_loop.h"

#include "testing/fake_clock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

namespace elastic {
namespace {

TEST(EventLoopTest, ReadableFdRunsItsCallback) {
  EventLoop loop;
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  UniqueFd r(p[0]), w(p[1]);
  std::string got;
  ASSERT_TRUE(loop.Add(r.get(), EPOLLIN, [&](uint32_t) {
    char buf[16];
    ssize_t n = read(r.get(), buf, sizeof buf);
    got.assign(buf, n);
    loop.Stop();
  }, nullptr));
  ASSERT_EQ(write(w.get(), "hi", 2), 2);
  loop.Run();
  EXPECT_EQ(got, "hi");
}

TEST(EventLoopTest, TimersFireInDueOrder) {
  EventLoop loop;
  std::vector<int> order;
  Timer second = loop.After(Millis(20), [&] { order.push_back(2); loop.Stop(); });
  Timer first = loop.After(Millis(1), [&] { order.push_back(1); });
  loop.Run();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(EventLoopTest, CancelledTimerNeverFires) {
  EventLoop loop;
  bool fired = false;
  Timer cancelled = loop.After(Millis(1), [&] { fired = true; });
  cancelled.Cancel();
  Timer stop = loop.After(Millis(5), [&] { loop.Stop(); });
  loop.Run();
  EXPECT_FALSE(fired);
}

TEST(EventLoopTest, CallbackMayRemoveAnotherFdOfTheSameBatch) {
  EventLoop loop;
  int a[2], b[2];
  ASSERT_EQ(pipe(a), 0);
  ASSERT_EQ(pipe(b), 0);
  UniqueFd ar(a[0]), aw(a[1]), br(b[0]), bw(b[1]);
  int calls = 0;
  auto cb = [&](uint32_t) {
    ++calls;
    loop.Remove(ar.get());
    loop.Remove(br.get());
  };
  ASSERT_TRUE(loop.Add(ar.get(), EPOLLIN, cb, nullptr));
  ASSERT_TRUE(loop.Add(br.get(), EPOLLIN, cb, nullptr));
  ASSERT_EQ(write(aw.get(), "x", 1), 1);
  ASSERT_EQ(write(bw.get(), "x", 1), 1);
  loop.RunOnce(Millis(100));
  EXPECT_EQ(calls, 1);
}

TEST(EventLoopTest, RunOnceReturnsAfterMaxWaitWithNothingDue) {
  EventLoop loop;
  auto start = MonoClock::now();
  EXPECT_TRUE(loop.RunOnce(Millis(5)));
  EXPECT_GE(MonoClock::now() - start, Millis(4));
}

// On a fake clock: nothing fires before its time, everything due fires at once.
TEST(EventLoopFakeClockTest, OneShotTimerFiresOnlyWhenTheClockReachesIt) {
  FakeClock clock;
  EventLoop loop(clock);
  int fired = 0;
  Timer t = loop.After(Millis(100), [&] { ++fired; });
  clock.Advance(Millis(99));
  loop.RunOnce(Millis(0));
  EXPECT_EQ(fired, 0);
  EXPECT_TRUE(t.armed());
  clock.Advance(Millis(1));
  loop.RunOnce(Millis(0));
  EXPECT_EQ(fired, 1);
  EXPECT_FALSE(t.armed());
}

TEST(EventLoopFakeClockTest, DestroyingTheHandleCancelsTheTimer) {
  FakeClock clock;
  EventLoop loop(clock);
  int fired = 0;
  {
    Timer t = loop.After(Millis(10), [&] { ++fired; });
  }
  clock.Advance(Millis(50));
  loop.RunOnce(Millis(0));
  EXPECT_EQ(fired, 0);
}

TEST(EventLoopFakeClockTest, ReassigningAHandleCancelsTheOldTimer) {
  FakeClock clock;
  EventLoop loop(clock);
  std::vector<int> fired;
  Timer t = loop.After(Millis(10), [&] { fired.push_back(1); });
  t = loop.After(Millis(20), [&] { fired.push_back(2); });
  clock.Advance(Millis(30));
  loop.RunOnce(Millis(0));
  EXPECT_EQ(fired, (std::vector<int>{2}));
}

TEST(EventLoopFakeClockTest, MovedHandleKeepsTheTimer) {
  FakeClock clock;
  EventLoop loop(clock);
  int fired = 0;
  Timer outer;
  {
    Timer inner = loop.After(Millis(5), [&] { ++fired; });
    outer = std::move(inner);
  }
  clock.Advance(Millis(5));
  loop.RunOnce(Millis(0));
  EXPECT_EQ(fired, 1);
}

TEST(EventLoopFakeClockTest, PeriodicTimerRunsEveryPeriodWithoutDrift) {
  FakeClock clock;
  EventLoop loop(clock);
  std::vector<long long> at;
  auto start = clock.Now();
  Timer t = loop.Every(Millis(10), [&] {
    at.push_back(std::chrono::duration_cast<Millis>(clock.Now() - start).count());
  });
  for (int ms : {10, 13, 7, 10}) {  // turns at 10, 23, 30, 40
    clock.Advance(Millis(ms));
    loop.RunOnce(Millis(0));
  }
  EXPECT_EQ(at, (std::vector<long long>{10, 23, 30, 40}));
}

TEST(EventLoopFakeClockTest, LatePeriodicTimerRunsOnceNotOncePerMissedPeriod) {
  FakeClock clock;
  EventLoop loop(clock);
  int fired = 0;
  Timer t = loop.Every(Millis(10), [&] { ++fired; });
  clock.Advance(Millis(55));
  loop.RunOnce(Millis(0));
  EXPECT_EQ(fired, 1);
  clock.Advance(Millis(4));  // 59: the next is due at 60
  loop.RunOnce(Millis(0));
  EXPECT_EQ(fired, 1);
  clock.Advance(Millis(1));
  loop.RunOnce(Millis(0));
  EXPECT_EQ(fired, 2);
}

TEST(EventLoopFakeClockTest, PeriodicTimerMayCancelItselfFromItsCallback) {
  FakeClock clock;
  EventLoop loop(clock);
  int fired = 0;
  Timer t;
  t = loop.Every(Millis(10), [&] {
    if (++fired == 2) t.Cancel();
  });
  for (int i = 0; i < 5; ++i) {
    clock.Advance(Millis(10));
    loop.RunOnce(Millis(0));
  }
  EXPECT_EQ(fired, 2);
  EXPECT_FALSE(t.armed());
}

TEST(EventLoopFakeClockTest, TimerCallbackMayDestroyTheObjectOwningItsHandle) {
  FakeClock clock;
  EventLoop loop(clock);
  struct Owner {
    Timer timer;
  };
  auto owner = std::make_unique<Owner>();
  bool ran = false;
  owner->timer = loop.Every(Millis(1), [&] {
    owner.reset();  // cancels the running timer through its handle
    ran = true;
  });
  clock.Advance(Millis(1));
  loop.RunOnce(Millis(0));
  EXPECT_TRUE(ran);
  EXPECT_EQ(owner, nullptr);
  clock.Advance(Millis(5));
  loop.RunOnce(Millis(0));  // nothing left to run
}

TEST(EventLoopTest, PostedCallbacksRunInOrderOnTheNextTurnWithoutWaiting) {
  EventLoop loop;  // real clock: a posted callback must not wait for epoll
  std::vector<int> order;
  loop.Post([&] { order.push_back(1); });
  loop.Post([&] {
    order.push_back(2);
    loop.Post([&] { order.push_back(3); });  // the turn after
  });
  EXPECT_TRUE(order.empty());
  loop.RunOnce(Millis(-1));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  loop.RunOnce(Millis(-1));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(EventLoopFakeClockTest, PostedCallbacksRunAfterTheTimersOfTheSameTurn) {
  FakeClock clock;
  EventLoop loop(clock);
  std::vector<std::string> order;
  Timer t = loop.After(Millis(0), [&] { order.push_back("timer"); });
  loop.Post([&] { order.push_back("posted"); });
  loop.RunOnce(Millis(0));
  EXPECT_EQ(order, (std::vector<std::string>{"timer", "posted"}));
}

TEST(EventLoopTest, PostedHandleDropsItsCallbacksWhenDestroyed) {
  EventLoop loop;
  std::vector<std::string> order;
  auto owner = std::make_unique<Posted>(loop);
  loop.Post([&] { order.push_back("plain 1"); });
  owner->Post([&] { order.push_back("owned"); });
  loop.Post([&] { order.push_back("plain 2"); });
  EXPECT_TRUE(owner->pending());
  owner.reset();  // its owner is gone: what it posted must not run
  loop.RunOnce(Millis(-1));
  EXPECT_EQ(order, (std::vector<std::string>{"plain 1", "plain 2"}));
}

TEST(EventLoopTest, PostedHandleKeepsPostOrderAndCanBeCancelledFromACallback) {
  EventLoop loop;
  std::vector<std::string> order;
  Posted a(loop), b(loop);
  a.Post([&] { order.push_back("a1"); });
  b.Post([&] {
    order.push_back("b1");
    a.Cancel();  // a2, posted after b1, no longer runs
  });
  a.Post([&] { order.push_back("a2"); });
  b.Post([&] { order.push_back("b2"); });
  loop.RunOnce(Millis(-1));
  EXPECT_EQ(order, (std::vector<std::string>{"a1", "b1", "b2"}));
  EXPECT_FALSE(a.pending());
  EXPECT_FALSE(b.pending());
}

}  // namespace
}  // namespace elastic
