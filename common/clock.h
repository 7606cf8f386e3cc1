// Clock: the monotonic clock behind a small interface, so that the event loop
// and the logic on it (agent, rendezvous host and client) run on a fake clock
// in unit tests (testing/fake_clock.h) and on CLOCK_MONOTONIC in the programs.
#pragma once

#include <chrono>

namespace elastic {

using MonoClock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual MonoClock::time_point Now() const = 0;
};

// The real one (std::chrono::steady_clock, i.e. CLOCK_MONOTONIC). Static storage.
const Clock& SteadyClock();

}  // namespace elastic
