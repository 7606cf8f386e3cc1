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
#include "rendezvous/store_server.h"

int main(int argc, char** argv) {
  using namespace elastic;
  SetLogProgram("elastic-store");
  CLI::App app{"A TCP key-value store speaking PyTorch's TCPStore protocol (1.13 and 2.x clients)"};
  std::string host = "0.0.0.0";
  int port = 29500;
  std::string port_file;
  bool verbose = false;
  app.add_option("--host", host, "address to listen on")->capture_default_str();
  app.add_option("--port", port, "port to listen on; 0 picks a free one")->capture_default_str();
  app.add_option("--port-file", port_file, "write the bound port to this file (atomically) once listening");
  app.add_flag("-v,--verbose", verbose, "log every connection");
  CLI11_PARSE(app, argc, argv);
  SetLogVerbose(verbose);

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  UniqueFd sfd(signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));

  EventLoop loop;
  StoreServer server(loop);
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
