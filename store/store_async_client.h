// StoreAsyncClient: a TCPStore client (1.13 dialect) driven by our EventLoop,
// for agents that must not block their loop. Requests are pipelined on one
// connection; replies arrive in order and each completes its callback.
//
// Timeouts: every request has a deadline (a loop timer, no polling). When one
// passes, or the connection breaks, every pending request fails with the
// reason and the client disconnects (a late reply could otherwise be taken
// for another's); Connect() again to go on. Callbacks run on the loop, never
// inside the call that queued them, and may destroy the client. The loop must
// outlive the client.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/unique_fd.h"

namespace elastic {

class StoreAsyncClient {
 public:
  using Millis = std::chrono::milliseconds;
  // ok=false: *err says why (timed out, connection lost).
  using DoneFn = std::function<void(bool ok, const std::string& err)>;
  using ValueFn = std::function<void(bool ok, const std::string& value, const std::string& err)>;
  using IntFn = std::function<void(bool ok, int64_t value, const std::string& err)>;

  StoreAsyncClient(EventLoop& loop, Millis timeout) : loop_(loop), timeout_(timeout) {}
  ~StoreAsyncClient();
  StoreAsyncClient(const StoreAsyncClient&) = delete;
  StoreAsyncClient& operator=(const StoreAsyncClient&) = delete;

  // Connects (blocking, within the timeout) and registers with the loop.
  bool Connect(const std::string& host, int port, std::string* err);
  bool connected() const { return fd_.valid(); }
  size_t pending() const { return pending_.size(); }

  void Set(const std::string& key, const std::string& value);  // no reply; errors show on later calls
  void Get(const std::string& key, ValueFn done);               // WAIT for the key, then GET
  void Add(const std::string& key, int64_t delta, IntFn done);
  void CompareSet(const std::string& key, const std::string& expected, const std::string& desired,
                  ValueFn done);
  void Wait(const std::vector<std::string>& keys, Millis timeout, DoneFn done);
  void Check(const std::vector<std::string>& keys, std::function<void(bool ok, bool ready, const std::string& err)> done);
  void DeleteKey(const std::string& key, IntFn done);  // value: number deleted
  void NumKeys(IntFn done);

 private:
  enum class Reply { kU8, kWait, kI64, kString };
  struct Pending {
    Reply reply;
    bool is_wait;
    std::optional<std::string> then_get;  // Get(): after the WAIT, GET this key
    std::function<void(bool ok, const std::string& value, int64_t number, const std::string& err)> done;
    EventLoop::TimerId timer;
  };
  void Queue(const std::string& request, Reply reply, Millis timeout, decltype(Pending::done) done);
  // The server answers later requests while a WAIT is pending, so nothing is
  // sent behind an unanswered WAIT: it is held until the WAIT's reply.
  void Send(const std::string& bytes, bool is_wait);
  void Release();
  void OnEvent(uint32_t events);
  void Fail(const std::string& why);  // fails every pending request, disconnects
  void Write();
  void FailLater(decltype(Pending::done) done, const std::string& why);

  EventLoop& loop_;
  Millis timeout_;
  std::string where_;
  UniqueFd fd_;
  std::string out_, in_;
  std::deque<Pending> pending_;
  struct Held {
    std::string bytes;
    bool ends_with_wait = false;
  };
  std::deque<Held> held_;
  bool blocked_ = false;  // a WAIT is sent and not answered yet
  bool want_out_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // callbacks may destroy us
};

}  // namespace elastic
