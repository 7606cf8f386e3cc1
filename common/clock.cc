#include "common/clock.h"

namespace elastic {
namespace {

class Steady final : public Clock {
 public:
  MonoClock::time_point Now() const override { return MonoClock::now(); }
};

}  // namespace

const Clock& SteadyClock() {
  static const Steady clock;
  return clock;
}

}  // namespace elastic
