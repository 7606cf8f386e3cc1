#include "common/event_loop.h"

#include <gtest/gtest.h>
#include <unistd.h>

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
  loop.AddTimer(Millis(20), [&] { order.push_back(2); loop.Stop(); });
  loop.AddTimer(Millis(1), [&] { order.push_back(1); });
  loop.Run();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(EventLoopTest, CancelledTimerNeverFires) {
  EventLoop loop;
  bool fired = false;
  auto id = loop.AddTimer(Millis(1), [&] { fired = true; });
  loop.CancelTimer(id);
  loop.AddTimer(Millis(5), [&] { loop.Stop(); });
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

}  // namespace
}  // namespace elastic
