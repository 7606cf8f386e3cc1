// FakeClock: a Clock that moves only when a test says so (Advance). Give it to
// an EventLoop, then `clock.Advance(d); loop.RunOnce(Millis(0));` runs what
// became due, without sleeping.
#pragma once

#include "common/clock.h"

namespace elastic {

class FakeClock : public Clock {
 public:
  MonoClock::time_point Now() const override { return now_; }
  void Advance(Millis d) { now_ += d; }

 private:
  MonoClock::time_point now_ = MonoClock::time_point() + std::chrono::hours(1);
};

}  // namespace elastic
