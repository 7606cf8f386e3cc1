#include "bench/store/store_client.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "bench/store/store_codec.h"
#include "store/store_net.h"
#include "store/store_protocol.h"

namespace elastic {
namespace {

// Milliseconds left until `deadline`, for poll(); 0 when passed.
int Left(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 1 << 30));
}

// Waits until fd is ready for `events` or the deadline passes.
bool WaitFd(int fd, short events, std::chrono::steady_clock::time_point deadline, std::string* err) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, Left(deadline));
    if (n > 0) return true;
    if (n < 0 && errno == EINTR) continue;
    *err = n == 0 ? "timed out" : std::string("poll: ") + strerror(errno);
    return false;
  }
}

}  // namespace

std::unique_ptr<StoreClient> StoreClient::Connect(const std::string& host, int port, Millis timeout,
                                                  std::string* err) {
  std::unique_ptr<StoreClient> c(new StoreClient(host, port, timeout));
  if (!ConnectTcp(host, port, static_cast<int>(timeout.count()), &c->fd_, err)) return nullptr;
  return c;
}

bool StoreClient::Ready(std::string* err) {
  if (fd_) return true;
  return ConnectTcp(host_, port_, static_cast<int>(timeout_.count()), &fd_, err);
}

bool StoreClient::Fail(const std::string& what, std::string* err) {
  *err = "store " + host_ + ":" + std::to_string(port_) + ": " + what;
  fd_.Reset();  // the stream may be out of step now: start afresh next call
  return false;
}

bool StoreClient::Send(const std::string& frame, Deadline deadline, std::string* err) {
  if (!Ready(err)) return false;
  size_t done = 0;
  while (done < frame.size()) {
    ssize_t n = send(fd_.get(), frame.data() + done, frame.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    std::string why;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (WaitFd(fd_.get(), POLLOUT, deadline, &why)) continue;
      return Fail("send: " + why, err);
    }
    return Fail(std::string("send: ") + strerror(errno), err);
  }
  return true;
}

bool StoreClient::Recv(void* buf, size_t n, Deadline deadline, std::string* err) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = recv(fd_.get(), p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= r;
      continue;
    }
    if (r == 0) return Fail("connection closed by the server", err);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return Fail(std::string("recv: ") + strerror(errno), err);
    std::string why;
    if (!WaitFd(fd_.get(), POLLIN, deadline, &why)) return Fail(why + " waiting for a reply", err);
  }
  return true;
}

bool StoreClient::RecvU8(uint8_t* v, Deadline d, std::string* err) { return Recv(v, 1, d, err); }
bool StoreClient::RecvI64(int64_t* v, Deadline d, std::string* err) { return Recv(v, 8, d, err); }

bool StoreClient::RecvString(std::string* v, Deadline d, std::string* err) {
  uint64_t len = 0;
  if (!Recv(&len, 8, d, err)) return false;
  if (len > (size_t{1} << 32)) return Fail("reply of " + std::to_string(len) + " bytes is not plausible", err);
  v->resize(len);
  return Recv(v->data(), len, d, err);
}

bool StoreClient::Set(std::string_view key, std::string_view value, std::string* err) {
  frame_.clear();
  store_codec::EncodeSet(&frame_, key, value);
  return Send(frame_, After(timeout_), err);
}

bool StoreClient::Get(std::string_view key, std::string* value, std::string* err) {
  auto deadline = After(timeout_);
  if (!Wait({std::string(key)}, timeout_, err)) return false;
  frame_.clear();
  store_codec::EncodeGet(&frame_, key);
  return Send(frame_, deadline, err) && RecvString(value, deadline, err);
}

bool StoreClient::Add(std::string_view key, int64_t delta, int64_t* result, std::string* err) {
  auto deadline = After(timeout_);
  frame_.clear();
  store_codec::EncodeAdd(&frame_, key, delta);
  return Send(frame_, deadline, err) && RecvI64(result, deadline, err);
}

bool StoreClient::CompareSet(std::string_view key, std::string_view expected, std::string_view desired,
                             std::string* result, std::string* err) {
  auto deadline = After(timeout_);
  frame_.clear();
  store_codec::EncodeCompareSet(&frame_, key, expected, desired);
  return Send(frame_, deadline, err) && RecvString(result, deadline, err);
}

bool StoreClient::Wait(const std::vector<std::string>& keys, Millis timeout, std::string* err) {
  auto deadline = After(timeout);
  frame_.clear();
  store_codec::EncodeWait(&frame_, keys);
  uint8_t reply = 0;
  if (!Send(frame_, deadline, err) || !RecvU8(&reply, deadline, err)) return false;
  if (reply != kWaitStopWaiting) return Fail("unexpected WAIT reply " + std::to_string(reply), err);
  return true;
}

bool StoreClient::Check(const std::vector<std::string>& keys, bool* ready, std::string* err) {
  auto deadline = After(timeout_);
  frame_.clear();
  store_codec::EncodeCheck(&frame_, keys);
  uint8_t reply = 0;
  if (!Send(frame_, deadline, err) || !RecvU8(&reply, deadline, err)) return false;
  *ready = reply == kCheckReady;
  return true;
}

bool StoreClient::DeleteKey(std::string_view key, bool* deleted, std::string* err) {
  auto deadline = After(timeout_);
  frame_.clear();
  store_codec::EncodeDeleteKey(&frame_, key);
  int64_t n = 0;
  if (!Send(frame_, deadline, err) || !RecvI64(&n, deadline, err)) return false;
  *deleted = n > 0;
  return true;
}

bool StoreClient::NumKeys(int64_t* count, std::string* err) {
  auto deadline = After(timeout_);
  frame_.clear();
  store_codec::EncodeNumKeys(&frame_);
  return Send(frame_, deadline, err) && RecvI64(count, deadline, err);
}

}  // namespace elastic
