// StoreClient: a blocking C++ client for the TCPStore wire protocol (1.13
// dialect, which our server and PyTorch 1.13's server both speak), for the
// benchmark load generator (store_load.cc). Not part of the product: workers
// talk to the store with PyTorch's own client.
//
// Keys are raw bytes: PyTorch's clients prefix theirs with "/" (a Python
// `store.set("k", ...)` is key "/k" here), except the worker count "init/".
// Every call has a deadline (the client timeout, or the one given); on a
// timeout or I/O error the call returns false with *err and the client
// reconnects before its next call, so a late reply can never be mistaken for
// the answer to a later request. One client is one connection; not
// thread-safe. fd() allows polling for readiness from an event loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"

namespace elastic {

class StoreClient {
 public:
  using Millis = std::chrono::milliseconds;
  static constexpr Millis kDefaultTimeout{300000};  // PyTorch's default store timeout

  // Connects within `timeout`, which then is the default for every call.
  static std::unique_ptr<StoreClient> Connect(const std::string& host, int port, Millis timeout,
                                              std::string* err);

  void set_timeout(Millis timeout) { timeout_ = timeout; }
  Millis timeout() const { return timeout_; }
  int fd() const { return fd_.get(); }

  bool Set(std::string_view key, std::string_view value, std::string* err);
  // Waits (up to the timeout) for the key, then reads it, as PyTorch's get().
  bool Get(std::string_view key, std::string* value, std::string* err);
  bool Add(std::string_view key, int64_t delta, int64_t* result, std::string* err);
  // PyTorch's compare_set (quirk included; see StoreState::CompareSet).
  bool CompareSet(std::string_view key, std::string_view expected, std::string_view desired,
                  std::string* result, std::string* err);
  // Returns false with *err "timed out ..." if the keys do not all exist in time.
  bool Wait(const std::vector<std::string>& keys, Millis timeout, std::string* err);
  bool Wait(const std::vector<std::string>& keys, std::string* err) { return Wait(keys, timeout_, err); }
  bool Check(const std::vector<std::string>& keys, bool* ready, std::string* err);
  bool DeleteKey(std::string_view key, bool* deleted, std::string* err);
  bool NumKeys(int64_t* count, std::string* err);

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  StoreClient(std::string host, int port, Millis timeout) : host_(std::move(host)), port_(port), timeout_(timeout) {}
  bool Ready(std::string* err);  // reconnects after a failed call
  bool Send(const std::string& frame, Deadline deadline, std::string* err);
  bool Recv(void* buf, size_t n, Deadline deadline, std::string* err);
  bool RecvU8(uint8_t* v, Deadline deadline, std::string* err);
  bool RecvI64(int64_t* v, Deadline deadline, std::string* err);
  bool RecvString(std::string* v, Deadline deadline, std::string* err);
  bool Fail(const std::string& what, std::string* err);
  Deadline After(Millis t) const { return std::chrono::steady_clock::now() + t; }

  std::string host_;
  int port_;
  Millis timeout_;
  UniqueFd fd_;
  std::string frame_;  // reused request buffer
};

}  // namespace elastic
