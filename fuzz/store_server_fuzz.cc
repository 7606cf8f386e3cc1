// libFuzzer target for the store server as a whole: bytes from the input go
// through real loopback sockets into StoreServer's connection handling
// (accept, buffering, backpressure, the parser, StoreState, WAIT/watch
// events, disconnects), not only into the frame parser.
//
// The input is a script. Each step is one byte, `conn = b % 4` and
// `what = (b >> 2) % 4`:
//   0, 1: send the next 1 + (next byte % 64) bytes of the input on conn;
//   2:    read whatever conn has been sent (a client that reads);
//   3:    reset conn (RST, so no TIME_WAIT piles up) and connect it again.
// Clients that never read are the norm: the output caps must hold them.
// After every step the loop runs until it has nothing more to do now.
//
// Checked, with small limits so each bound is reached by small inputs:
// - no crash, no sanitizer report, no exception;
// - the keyspace never holds more than its memory budget;
// - the server never holds more connections than it was given;
// - once every client is gone the server holds no connection, and a fresh
//   client is still answered (the store goes on whatever came before).
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "common/event_loop.h"
#include "common/unique_fd.h"
#include "store/store_net.h"
#include "store/store_protocol.h"
#include "store/store_server.h"

namespace {

using namespace elastic;

constexpr int kConns = 4;

void Check(bool ok, const char* what) {
  if (ok) return;
  fprintf(stderr, "store_server_fuzz: check failed: %s\n", what);
  std::abort();
}

StoreLimits SmallLimits() {
  StoreLimits l;
  l.max_key = 64;
  l.max_value = 256;
  l.max_multi_keys = 16;
  l.max_input_total = 2048;
  l.memory_budget = 2048;
  l.max_connections = 3;  // one of the four clients may be refused
  l.output_high_water = 512;
  l.max_output = 2048;
  l.max_output_total = 4096;
  l.max_waits_per_connection = 8;
  l.max_watches_per_connection = 8;
  // Time plays no part: a run is deterministic.
  l.partial_frame_timeout_ms = 3'600'000;
  l.output_stall_timeout_ms = 3'600'000;
  l.frame_deadline_ms = 3'600'000;
  return l;
}

// A non-blocking client socket; invalid if the connect failed.
UniqueFd Connect(int port) {
  UniqueFd fd;
  std::string err;
  if (!ConnectTcp("127.0.0.1", port, 1000, &fd, &err)) return UniqueFd();
  fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  return fd;
}

void Reset(UniqueFd* fd) {
  if (!*fd) return;
  linger lg{1, 0};  // RST on close: no TIME_WAIT left per run
  setsockopt(fd->get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  fd->Reset();
}

void Drain(int fd) {
  char buf[4096];
  while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
}

// Runs every ready event and due timer; bounded, since a run must end.
void Settle(EventLoop& loop) {
  for (int i = 0; i < 8; ++i) loop.RunOnce(Millis(0));
}

// A fresh 2.x client: VALIDATE then PING must be answered with the nonce.
bool Answers(EventLoop& loop, int port) {
  UniqueFd fd = Connect(port);
  if (!fd) return false;
  std::string req(1, static_cast<char>(v2_op::kValidate));
  PutU32(&req, kStoreValidateMagic);
  req.push_back(static_cast<char>(v2_op::kPing));
  PutU32(&req, 0x5eed);
  if (send(fd.get(), req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return false;
  std::string got;
  for (int i = 0; i < 200 && got.size() < 4; ++i) {
    loop.RunOnce(Millis(5));
    char buf[16];
    ssize_t n = recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) got.append(buf, n);
  }
  Reset(&fd);
  std::string want;
  PutU32(&want, 0x5eed);
  return got == want;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  StoreLimits limits = SmallLimits();
  EventLoop loop;
  StoreServer server(loop, limits);
  std::string err;
  Check(server.Listen("127.0.0.1", 0, &err), "listen");
  int port = server.port();
  UniqueFd clients[kConns];
  for (auto& c : clients) c = Connect(port);
  Settle(loop);

  std::string_view in(reinterpret_cast<const char*>(data), size);
  while (!in.empty()) {
    uint8_t b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    UniqueFd& c = clients[b % kConns];
    switch ((b >> 2) % 4) {
      case 0:
      case 1: {
        size_t n = 1;
        if (!in.empty()) {
          n = 1 + static_cast<uint8_t>(in.front()) % 64;
          in.remove_prefix(1);
        }
        n = std::min(n, in.size());
        if (c) (void)!send(c.get(), in.data(), n, MSG_NOSIGNAL | MSG_DONTWAIT);
        in.remove_prefix(n);
        break;
      }
      case 2:
        if (c) Drain(c.get());
        break;
      case 3:
        Reset(&c);
        c = Connect(port);
        break;
    }
    Settle(loop);
    Check(server.StoreBytes() <= limits.memory_budget, "the keyspace stays within its memory budget");
    Check(server.NumConnections() <= limits.max_connections, "connections stay within max_connections");
  }

  for (auto& c : clients) Reset(&c);
  for (int i = 0; i < 200 && server.NumConnections() > 0; ++i) loop.RunOnce(Millis(5));
  Check(server.NumConnections() == 0, "every connection is closed once its client is gone");
  Check(Answers(loop, port), "a fresh client is answered after the run");
  return 0;
}
