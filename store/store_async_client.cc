#include "store/store_async_client.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>

#include "store/store_codec.h"
#include "store/store_net.h"

namespace elastic {

StoreAsyncClient::~StoreAsyncClient() {
  *alive_ = false;
  for (auto& p : pending_) loop_.CancelTimer(p.timer);
  if (fd_) loop_.Remove(fd_.get());
}

bool StoreAsyncClient::Connect(const std::string& host, int port, std::string* err) {
  if (fd_) {
    loop_.Remove(fd_.get());
    fd_.Reset();
  }
  where_ = "store " + host + ":" + std::to_string(port);
  UniqueFd fd;
  if (!ConnectTcp(host, port, static_cast<int>(timeout_.count()), &fd, err)) return false;
  fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  if (!loop_.Add(fd.get(), EPOLLIN, [this](uint32_t ev) { OnEvent(ev); }, err)) return false;
  fd_ = std::move(fd);
  in_.clear();
  out_.clear();
  held_.clear();
  blocked_ = false;
  want_out_ = false;
  return true;
}

void StoreAsyncClient::FailLater(decltype(Pending::done) done, const std::string& why) {
  // Callbacks never run inside the call that queued them.
  loop_.AddTimer(Millis(0), [done = std::move(done), why] { done(false, {}, 0, why); });
}

void StoreAsyncClient::Queue(const std::string& request, Reply reply, Millis timeout, decltype(Pending::done) done) {
  if (!fd_) {
    FailLater(std::move(done), where_.empty() ? "store: not connected" : where_ + ": not connected");
    return;
  }
  bool is_wait = reply == Reply::kWait;
  EventLoop::TimerId timer = loop_.AddTimer(timeout, [this] { Fail(where_ + ": timed out waiting for a reply"); });
  pending_.push_back(Pending{reply, is_wait, std::nullopt, std::move(done), timer});
  Send(request, is_wait);
}

void StoreAsyncClient::Send(const std::string& bytes, bool is_wait) {
  if (!fd_) return;
  if (!blocked_) {
    out_ += bytes;
    blocked_ = is_wait;
    Write();
    return;
  }
  if (held_.empty() || held_.back().ends_with_wait) held_.push_back(Held{});
  held_.back().bytes += bytes;
  held_.back().ends_with_wait = is_wait;
}

void StoreAsyncClient::Release() {
  blocked_ = false;
  while (!held_.empty() && !blocked_) {
    out_ += held_.front().bytes;
    blocked_ = held_.front().ends_with_wait;
    held_.pop_front();
  }
  Write();
}

void StoreAsyncClient::Write() {
  while (fd_ && !out_.empty()) {
    ssize_t n = send(fd_.get(), out_.data(), out_.size(), MSG_NOSIGNAL);
    if (n > 0) {
      out_.erase(0, n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    // A broken socket also reports EPOLLERR/EPOLLHUP: the read side fails the
    // pending requests from the loop, never inside the caller's request.
    out_.clear();
    break;
  }
  bool want_out = !out_.empty();
  if (fd_ && want_out != want_out_) {
    want_out_ = want_out;
    loop_.Modify(fd_.get(), want_out ? EPOLLIN | EPOLLOUT : EPOLLIN, nullptr);
  }
}

void StoreAsyncClient::OnEvent(uint32_t events) {
  if (events & EPOLLOUT) Write();
  if (!fd_ || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
  char buf[16384];
  for (;;) {
    ssize_t n = recv(fd_.get(), buf, sizeof buf, 0);
    if (n > 0) {
      in_.append(buf, n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    Fail(where_ + ": connection closed by the server" + (n == 0 ? "" : std::string(" (") + strerror(errno) + ")"));
    return;
  }
  while (!pending_.empty()) {
    Pending& p = pending_.front();
    std::string value;
    int64_t number = 0;
    uint8_t byte = 0;
    size_t used = 0;
    switch (p.reply) {
      case Reply::kU8:
      case Reply::kWait: used = store_codec::DecodeU8(in_, &byte); number = byte; break;
      case Reply::kI64: used = store_codec::DecodeI64(in_, &number); break;
      case Reply::kString: used = store_codec::DecodeString(in_, &value); break;
    }
    if (!used) break;
    in_.erase(0, used);
    if (p.then_get) {
      // The WAIT of a Get() is answered: the same entry now awaits the value.
      std::string req;
      store_codec::EncodeGet(&req, *p.then_get);
      p.then_get.reset();
      p.reply = Reply::kString;
      p.is_wait = false;
      out_ += req;
      Release();
      continue;
    }
    Pending done = std::move(p);
    pending_.pop_front();
    if (done.is_wait) Release();
    loop_.CancelTimer(done.timer);
    auto alive = alive_;
    done.done(true, value, number, {});  // may queue requests, or even destroy the client
    if (!*alive || !fd_) return;
  }
}

void StoreAsyncClient::Fail(const std::string& why) {
  std::deque<Pending> failed;
  failed.swap(pending_);
  if (fd_) {
    loop_.Remove(fd_.get());
    fd_.Reset();
  }
  out_.clear();
  in_.clear();
  held_.clear();
  blocked_ = false;
  for (auto& p : failed) loop_.CancelTimer(p.timer);
  auto alive = alive_;
  for (auto& p : failed) {
    p.done(false, {}, 0, why);
    if (!*alive) return;
  }
}

void StoreAsyncClient::Set(const std::string& key, const std::string& value) {
  std::string req;
  store_codec::EncodeSet(&req, key, value);
  Send(req, false);
}

void StoreAsyncClient::Wait(const std::vector<std::string>& keys, Millis timeout, DoneFn done) {
  std::string req;
  store_codec::EncodeWait(&req, keys);
  Queue(req, Reply::kWait, timeout, [done = std::move(done)](bool ok, const std::string&, int64_t, const std::string& err) {
    done(ok, err);
  });
}

void StoreAsyncClient::Get(const std::string& key, ValueFn done) {
  // As PyTorch's get(): WAIT for the key, then GET it. One queue entry keeps
  // its place: the GET goes out right after the WAIT's reply, before anything
  // held behind the WAIT.
  std::string req;
  store_codec::EncodeWait(&req, {key});
  Queue(req, Reply::kWait, timeout_, [done = std::move(done)](bool ok, const std::string& v, int64_t, const std::string& e) {
    done(ok, v, e);
  });
  if (!pending_.empty() && fd_) pending_.back().then_get = key;
}

void StoreAsyncClient::Add(const std::string& key, int64_t delta, IntFn done) {
  std::string req;
  store_codec::EncodeAdd(&req, key, delta);
  Queue(req, Reply::kI64, timeout_, [done = std::move(done)](bool ok, const std::string&, int64_t n, const std::string& e) {
    done(ok, n, e);
  });
}

void StoreAsyncClient::CompareSet(const std::string& key, const std::string& expected, const std::string& desired,
                                  ValueFn done) {
  std::string req;
  store_codec::EncodeCompareSet(&req, key, expected, desired);
  Queue(req, Reply::kString, timeout_, [done = std::move(done)](bool ok, const std::string& v, int64_t, const std::string& e) {
    done(ok, v, e);
  });
}

void StoreAsyncClient::Check(const std::vector<std::string>& keys,
                             std::function<void(bool ok, bool ready, const std::string& err)> done) {
  std::string req;
  store_codec::EncodeCheck(&req, keys);
  Queue(req, Reply::kU8, timeout_, [done = std::move(done)](bool ok, const std::string&, int64_t b, const std::string& e) {
    done(ok, ok && b == 0, e);
  });
}

void StoreAsyncClient::DeleteKey(const std::string& key, IntFn done) {
  std::string req;
  store_codec::EncodeDeleteKey(&req, key);
  Queue(req, Reply::kI64, timeout_, [done = std::move(done)](bool ok, const std::string&, int64_t n, const std::string& e) {
    done(ok, n, e);
  });
}

void StoreAsyncClient::NumKeys(IntFn done) {
  std::string req;
  store_codec::EncodeNumKeys(&req);
  Queue(req, Reply::kI64, timeout_, [done = std::move(done)](bool ok, const std::string&, int64_t n, const std::string& e) {
    done(ok, n, e);
  });
}

}  // namespace elastic
