// Shared by the host/client tests (host_client_test.cc on the real clock,
// host_client_clock_test.cc on a FakeClock): an agent that records what its
// rendezvous told it, and a host on a loopback port.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/net.h"
#include "rendezvous/rendezvous_client.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_host.h"

namespace elastic {

struct TestAgent {
  std::unique_ptr<RendezvousHandler> handler;
  std::vector<RoundInfo> rounds;
  std::vector<std::string> restarts;
  std::string fatal;
  bool done = false;
  bool job_failed = false;
  WorkerFailure failure;
  JobEnd end;  // of on_fatal or on_job_failed
  std::vector<RestartCause> restart_causes;  // of each restart

  void Take(std::unique_ptr<RendezvousHandler> h) {
    handler = std::move(h);
    Wire();
  }
  void Wire() {
    RendezvousHandler::Callbacks cb;
    cb.on_round = [this](const RoundInfo& r) { rounds.push_back(r); };
    cb.on_restart_required = [this](const std::string& why, RestartCause cause) {
      restarts.push_back(why);
      restart_causes.push_back(cause);
    };
    cb.on_done = [this] { done = true; };
    cb.on_fatal = [this](const JobEnd& e, const std::string& m) {
      end = e;
      fatal = m;
    };
    cb.on_job_failed = [this](const WorkerFailure& f, const JobEnd& e) {
      job_failed = true;
      failure = f;
      end = e;
    };
    handler->SetCallbacks(cb);
  }
};

// A host of run "job" (node "host", token auth) listening on 127.0.0.1, any port;
// `adjust` changes its config before it starts (auth, observer...).
// The same host on a listening socket of the caller's (bound to 127.0.0.1).
inline std::unique_ptr<RendezvousHost> MakeLoopbackHostOn(
    EventLoop& loop, const RendezvousSettings& settings, UniqueFd listener, std::string* err,
    const std::function<void(HostConfig*)>& adjust = nullptr) {
  HostConfig config;
  config.settings = settings;
  config.run_id = "job";
  config.node_name = "host";
  config.store_addr = "127.0.0.1";
  config.bind_addr = "127.0.0.1";
  config.auth = AuthMethod::kToken;
  if (adjust) adjust(&config);
  return RendezvousHost::Create(loop, config, std::move(listener), err);
}

inline std::unique_ptr<RendezvousHost> MakeLoopbackHost(
    EventLoop& loop, const RendezvousSettings& settings, std::string* err,
    const std::function<void(HostConfig*)>& adjust = nullptr) {
  SocketAddress addr;
  if (!ResolveNumericAddress("127.0.0.1", 0, &addr, err)) return nullptr;
  int bind_errno = 0;
  UniqueFd listener = ListenOn(addr, &bind_errno, err);
  if (!listener) return nullptr;
  return MakeLoopbackHostOn(loop, settings, std::move(listener), err, adjust);
}

// That host, handed to *agent (its rendezvous); null with *err if it cannot listen.
inline RendezvousHost* StartLoopbackHost(EventLoop& loop, const RendezvousSettings& settings,
                                         TestAgent* agent, std::string* err) {
  auto host = MakeLoopbackHost(loop, settings, err);
  RendezvousHost* raw = host.get();
  if (host) agent->Take(std::move(host));
  return raw;
}

// A client of that run, node "client<i>", of the host on 127.0.0.1:port; `adjust`
// changes its config first.
inline std::unique_ptr<RendezvousClient> MakeLoopbackClient(
    EventLoop& loop, const RendezvousSettings& settings, int i, int port,
    const std::function<void(ClientConfig*)>& adjust = nullptr) {
  ClientConfig config;
  config.settings = settings;
  config.run_id = "job";
  config.node_name = "client" + std::to_string(i);
  config.host = "127.0.0.1";
  config.port = port;
  if (adjust) adjust(&config);
  return std::make_unique<RendezvousClient>(loop, config);
}

// A host (agent 0) and its clients (agents 1..) of one run on one loop: the
// fixture the host+client tests share. Settings are set by the test's SetUp.
class LoopbackRendezvousTest : public ::testing::Test {
 protected:
  void StartHost() {
    std::string err;
    host_ = StartLoopbackHost(loop, settings, &agents[0], &err);
    ASSERT_TRUE(host_) << err;
  }
  void StartClient(int i, const std::string& token = "t0ken") {
    RendezvousSettings s = settings;
    s.token = token;
    agents[i].Take(MakeLoopbackClient(loop, s, i, host_->port()));
  }
  // Runs the loop until `cond` holds (a hang guard, not a timing assertion).
  bool RunUntil(const std::function<bool()>& cond) {
    auto give_up = MonoClock::now() + std::chrono::seconds(60);
    while (!cond()) {
      if (MonoClock::now() > give_up) return false;
      loop.RunOnce(Millis(100));
    }
    return true;
  }

  EventLoop loop;
  RendezvousSettings settings;
  std::map<int, TestAgent> agents;
  RendezvousHost* host_ = nullptr;
};

}  // namespace elastic
