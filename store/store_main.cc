// elastic-store: the TCPStore-compatible server on its own, for tests,
// benchmarks and debugging. Prints its port (or writes it to --port-file) once
// it listens; stops cleanly on SIGTERM/SIGINT.
#include <signal.h>
#include <sys/signalfd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>

#include "common/event_loop.h"
#include "common/log.h"
#include "store/store_server.h"

int main(int argc, char** argv) {
  using namespace elastic;
  SetLogProgram("elastic-store");
  CLI::App app{"A TCP key-value store speaking PyTorch's TCPStore protocol (1.13 and 2.x clients)"};
  std::string host = "127.0.0.1";
  int port = 29500;
  std::string port_file;
  bool verbose = false;
  StoreLimits limits;
  app.add_option("--host", host,
                 "address to listen on; loopback only by default. To serve other hosts give their "
                 "interface's address, or 0.0.0.0 / :: for all: there is no authentication, so only "
                 "on a trusted network")
      ->capture_default_str();
  app.add_option("--port", port, "port to listen on; 0 picks a free one")->capture_default_str();
  app.add_option("--port-file", port_file, "write the bound port to this file (atomically) once listening");
  app.add_flag("-v,--verbose", verbose, "log every connection");
  auto limit = [&](const char* name, auto* field, const char* what) {
    app.add_option(name, *field, what)->capture_default_str()->group("Limits (docs/security.md)");
  };
  limit("--max-connections", &limits.max_connections,
        "store connections at most; 0: RLIMIT_NOFILE less --fd-reserve");
  limit("--fd-reserve", &limits.fd_reserve, "descriptors kept free of connections when --max-connections is 0");
  limit("--memory-budget", &limits.memory_budget,
        "bytes held by keys, values and pending WAITs, overhead included; a write or WAIT beyond closes its client");
  limit("--max-value", &limits.max_value, "bytes of one value (also after APPEND)");
  limit("--max-frame", &limits.max_frame, "bytes of one request; 0: two values");
  limit("--max-input-total", &limits.max_input_total, "bytes of requests not yet complete, all connections together");
  limit("--max-output", &limits.max_output, "unread reply bytes per connection before it is closed");
  limit("--max-output-total", &limits.max_output_total, "unread reply bytes over all connections");
  limit("--output-high-water", &limits.output_high_water,
        "unread reply bytes per connection at which its requests are held back");
  limit("--max-waits-per-connection", &limits.max_waits_per_connection, "pending WAITs + BARRIERs");
  limit("--max-watches-per-connection", &limits.max_watches_per_connection, "1.13 WATCH_KEYs");
  limit("--partial-frame-timeout-ms", &limits.partial_frame_timeout_ms,
        "close a connection that sent part of a frame, then nothing for this long");
  limit("--frame-deadline-ms", &limits.frame_deadline_ms,
        "close a connection that has not completed a frame this long after its first byte");
  limit("--output-stall-timeout-ms", &limits.output_stall_timeout_ms,
        "close a connection whose replies stay unread above the high-water mark this long");
  CLI11_PARSE(app, argc, argv);
  SetLogVerbose(verbose);

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  UniqueFd sfd(signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));

  EventLoop loop;
  StoreServer server(loop, limits);
  std::string err;
  if (!server.Listen(host, port, &err)) {
    Log(LogLevel::kError, "{}", err);
    return 1;
  }
  if (!loop.Add(sfd.get(), EPOLLIN, [&](uint32_t) { loop.Stop(); }, &err)) {
    Log(LogLevel::kError, "{}", err);
    return 1;
  }
  if (!port_file.empty()) {
    std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << server.port() << "\n";
    if (std::rename(tmp.c_str(), port_file.c_str()) != 0) {
      Log(LogLevel::kError, "cannot write --port-file {}", port_file);
      return 1;
    }
  } else {
    std::printf("%d\n", server.port());
    std::fflush(stdout);
  }
  loop.Run();
  loop.Remove(sfd.get());
  return 0;
}
