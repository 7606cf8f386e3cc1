// Test helpers: a StoreServer on its own loop thread, and a raw socket client
// that speaks bytes (so tests are built from the wire format, not from our client).
#pragma once

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/event_loop.h"
#include "store/store_net.h"
#include "store/store_protocol.h"
#include "store/store_server.h"

namespace elastic::testing {

// Runs a StoreServer on a private EventLoop in a background thread. Post()
// runs a function on that thread and waits for it, so tests may use the
// in-process API without races.
class ServerThread {
 public:
  explicit ServerThread(StoreLimits limits = {}) : wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    std::promise<int> started;
    auto port = started.get_future();
    thread_ = std::thread([this, limits, &started] {
      EventLoop loop;
      StoreServer server(loop, limits);
      server_ = &server;
      server.SetCloseObserver([this](StoreConnId, const std::string& reason) {
        std::lock_guard<std::mutex> lock(mu_);
        closes_.push_back(reason);
        closed_.notify_all();
      });
      std::string err;
      server.Listen("127.0.0.1", 0, &err);
      loop.Add(wake_.get(), EPOLLIN, [&](uint32_t) { Drain(loop); }, &err);
      started.set_value(server.port());
      loop.Run();
      loop.Remove(wake_.get());
    });
    port_ = port.get();
  }
  ~ServerThread() {
    Post([this] { stop_ = true; });
    thread_.join();
  }
  int port() const { return port_; }

  template <typename F>
  auto Post(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace_back([&task] { task(); });
    }
    uint64_t one = 1;
    (void)!write(wake_.get(), &one, sizeof one);
    return result.get();
  }
  StoreServer& server() { return *server_; }  // only inside Post()

  // Blocks until the server closed a connection for a reason containing
  // `part` (each reason is returned once); "" after the 20 s safety net.
  std::string WaitForClose(const std::string& part) {
    std::unique_lock<std::mutex> lock(mu_);
    std::string found;
    closed_.wait_for(lock, std::chrono::seconds(20), [&] {
      for (auto it = closes_.begin(); it != closes_.end(); ++it) {
        if (it->find(part) == std::string::npos) continue;
        found = *it;
        closes_.erase(it);
        return true;
      }
      return false;
    });
    return found;
  }

 private:
  void Drain(EventLoop& loop) {
    uint64_t n;
    (void)!read(wake_.get(), &n, sizeof n);
    std::vector<std::function<void()>> jobs;
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs.swap(queue_);
    }
    for (auto& j : jobs) j();
    if (stop_) loop.Stop();
  }

  UniqueFd wake_;
  std::thread thread_;
  StoreServer* server_ = nullptr;
  int port_ = 0;
  bool stop_ = false;
  std::mutex mu_;
  std::vector<std::function<void()>> queue_;
  std::vector<std::string> closes_;  // reasons, under mu_
  std::condition_variable closed_;
};

// A blocking socket speaking raw bytes. Reads give up after 20 s so a broken
// server fails the test instead of hanging it (a safety net, not an assertion).
class RawClient {
 public:
  explicit RawClient(int port) {
    std::string err;
    ConnectTcp("127.0.0.1", port, 20000, &fd_, &err);
    timeval tv{20, 0};
    setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  bool connected() const { return fd_.valid(); }
  void Send(const std::string& bytes) { (void)!send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  // Exactly n bytes, or what came before EOF/error.
  std::string Read(size_t n) {
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
      ssize_t r = recv(fd_.get(), out.data() + got, n - got, 0);
      if (r <= 0) break;
      got += r;
    }
    out.resize(got);
    return out;
  }
  uint8_t ReadU8() { return static_cast<uint8_t>(Read(1).at(0)); }
  int64_t ReadI64() {
    std::string b = Read(8);
    int64_t v = 0;
    memcpy(&v, b.data(), std::min<size_t>(8, b.size()));
    return v;
  }
  std::string ReadString() { return Read(static_cast<size_t>(ReadI64())); }
  // True once the server closed the connection (EOF or reset).
  bool Closed() {
    char c;
    ssize_t r = recv(fd_.get(), &c, 1, 0);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }
  // Discards what the server sent until it closes: true on EOF or reset,
  // false if it is still open after the 20 s safety net.
  bool ClosedAfterDraining() {
    std::vector<char> buf(1 << 16);
    for (;;) {
      ssize_t r = recv(fd_.get(), buf.data(), buf.size(), 0);
      if (r > 0) continue;
      if (r < 0 && errno == EINTR) continue;
      return r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    }
  }
  // Whatever the server has sent so far, without waiting.
  std::string ReadAvailable() {
    std::string out;
    std::vector<char> buf(1 << 16);
    ssize_t r;
    while ((r = recv(fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT)) > 0) out.append(buf.data(), r);
    return out;
  }
  // Would a read block right now? (nothing pending from the server)
  bool NothingPending() {
    char c;
    return recv(fd_.get(), &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN;
  }

 private:
  UniqueFd fd_;
};

// Frame builders.
inline std::string Frame(uint8_t op) { return std::string(1, static_cast<char>(op)); }
inline std::string V2Validate() {
  std::string s = Frame(v2_op::kValidate);
  PutU32(&s, kStoreValidateMagic);
  return s;
}
inline std::string V2Ping(uint32_t nonce) {
  std::string s = Frame(v2_op::kPing);
  PutU32(&s, nonce);
  return s;
}
inline std::string KeyValue(uint8_t op, const std::string& k, const std::string& v) {
  std::string s = Frame(op);
  PutString(&s, k);
  PutString(&s, v);
  return s;
}
inline std::string KeyOnly(uint8_t op, const std::string& k) {
  std::string s = Frame(op);
  PutString(&s, k);
  return s;
}
inline std::string Keys(uint8_t op, const std::vector<std::string>& keys) {
  std::string s = Frame(op);
  PutU64(&s, keys.size());
  for (auto& k : keys) PutString(&s, k);
  return s;
}
inline std::string AddFrame(uint8_t op, const std::string& k, int64_t d) {
  std::string s = KeyOnly(op, k);
  PutI64(&s, d);
  return s;
}

// A client that has sent the 2.x VALIDATE: it speaks the 2.x dialect.
inline RawClient V2Client(int port) {
  RawClient c(port);
  c.Send(V2Validate());
  return c;
}

}  // namespace elastic::testing
