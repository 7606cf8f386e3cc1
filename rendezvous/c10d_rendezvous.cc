#include "rendezvous/c10d_rendezvous.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>

#include <fmt/format.h>

#include "common/log.h"
#include "rendezvous/auth.h"
#include "common/net.h"
#include "rendezvous/failover_rendezvous.h"
#include "rendezvous/host_discovery.h"
#include "rendezvous/regime_record.h"
#include "rendezvous/rendezvous_client.h"
#include "rendezvous/rendezvous_host.h"

namespace elastic {
namespace {

AuthMethod ChooseHostAuth(const C10dParams& p, bool loopback) {
  if (!p.settings.token.empty()) return AuthMethod::kToken;
  std::string why;
  if (p.settings.use_munge && MungeAvailable(p.settings.munge_socket, &why))
    return AuthMethod::kMunge;
  if (!loopback)
    Log(LogLevel::kWarning,
        "rendezvous: joins are NOT authenticated: no token (--rdzv-conf token=... or "
        "ELASTIC_RDZV_TOKEN) and no munge ({}); anyone who can reach this port can join",
        why);
  return AuthMethod::kNone;
}

std::unique_ptr<RendezvousHost> MakeHost(EventLoop& loop, const C10dParams& p,
                                            UniqueFd listener, const std::string& store_addr,
                                            const std::string& bind_addr, AuthMethod auth,
                                            std::string* err) {
  HostConfig config;
  config.settings = p.settings;
  config.run_id = p.run_id;
  config.node_name = p.node_name;
  config.store_addr = store_addr;
  config.bind_addr = bind_addr;
  config.auth = auth;
  config.observer = p.observer;
  auto host = RendezvousHost::Create(loop, std::move(config), std::move(listener), err);
  if (host)
    Log(p.standalone ? LogLevel::kDebug : LogLevel::kInfo, "rendezvous: hosting: {}",
        host->Describe());
  return host;
}

std::unique_ptr<RendezvousHandler> MakeStandalone(EventLoop& loop, C10dParams p, std::string* err) {
  p.settings.min_nodes = p.settings.max_nodes = p.settings.expected_nodes = 1;
  // Nobody else may join a standalone run: a token nobody knows refuses everyone.
  p.settings.token = MakeNonce();
  SocketAddress addr;
  int bind_errno = 0;
  if (!ResolveAddress("127.0.0.1", 0, &addr, err)) return nullptr;
  UniqueFd listener = ListenOn(addr, &bind_errno, err);
  if (!listener) return nullptr;
  return MakeHost(loop, p, std::move(listener), "127.0.0.1", "127.0.0.1", AuthMethod::kToken, err);
}

FailoverParams Failover(const C10dParams& p, const std::string& regime_path) {
  return FailoverParams{p.settings, p.run_id, p.node_name, regime_path, p.observer,
                        p.endpoint.PortOr(kDefaultRendezvousPort)};
}

int AskTimeoutMs(const C10dParams& p) {
  return static_cast<int>(std::min<int64_t>(p.settings.heartbeat_interval_ms, 2000));
}

// The run's current regime as its candidate nodes answer at the endpoint's port
// (host_discovery.h), the endpoint itself (`endpoint`, numeric) asked first;
// nullopt: none runs elsewhere (start as before). Only members' silent sockets
// answering: asked again until a takeover would have answered (heartbeat_timeout +
// heartbeat_interval, the walk's own deadline per successor); each such ask lasts
// its whole timeout (a silent socket never answers sooner). Blocks: before the loop runs.
std::optional<RoundInfo> DiscoveredHost(const C10dParams& p, const std::string& endpoint, int port) {
  if (p.peers.empty()) return std::nullopt;
  std::vector<std::string> asked = {endpoint};
  for (const std::string& peer : p.peers)
    if (peer != endpoint) asked.push_back(peer);
  auto said = [&](const std::vector<PeerAnswer>& answers) {
    std::string text;
    for (size_t i = 0; i < asked.size(); ++i)
      text += fmt::format("{}{} {}", i ? ", " : "", asked[i], PeerAnswerName(answers[i]));
    return text;
  };
  auto last = std::chrono::steady_clock::now() +
              std::chrono::milliseconds(p.settings.heartbeat_timeout_ms + p.settings.heartbeat_interval_ms);
  while (true) {
    std::vector<PeerAnswer> answers = AskPeers(asked, port, p.run_id, AskTimeoutMs(p));
    DiscoveryPlan plan = PlanDiscovery(answers, 0, std::chrono::steady_clock::now() < last);
    if (plan.kind == DiscoveryPlan::Kind::kAsBefore) return std::nullopt;
    if (plan.kind == DiscoveryPlan::Kind::kAskAgain) {
      Log(LogLevel::kInfo, "rendezvous: the run's nodes at port {}: {}: no host of run {} answers, "
          "asking again", port, said(answers), p.run_id);
      continue;
    }
    Log(LogLevel::kInfo, "rendezvous: the run's nodes at port {}: {}", port, said(answers));
    return DiscoveredRegime(asked, port, plan.walk);
  }
}

// The run's regime as this node's records know it, while a successor of it may still
// run (regime_record.h); nullopt: none, or gone (no successor of it is its own: they
// refused, or answered as another regime of the same run id). A gone regime's
// records are deleted, and the next latest is asked (a few at most).
std::optional<RoundInfo> RecordedRegime(const C10dParams& p, const std::string& dir,
                                        const std::string& key) {
  if (dir.empty()) return std::nullopt;
  auto timeout = std::chrono::milliseconds(AskTimeoutMs(p));
  for (int tries = 0; tries < 4; ++tries) {
    std::optional<RoundInfo> regime = LatestRegime(ReadRegimeRecords(dir, key));
    if (!regime) return std::nullopt;
    if (RegimeMayRun(AskSuccessors(*regime, p.run_id, timeout))) return regime;
    Log(LogLevel::kInfo, "rendezvous: the regime of run {} recorded here (round {}) is gone: no "
        "successor of it answers as its own (an earlier run with the same id): record deleted",
        p.run_id, regime->round);
    ExpireRegimeRecords(dir, key, *regime);
  }
  return std::nullopt;
}

}  // namespace

std::unique_ptr<RendezvousHandler> CreateC10dRendezvous(EventLoop& loop, const C10dParams& p,
                                                        std::string* err) {
  if (!ValidateRendezvousSettings(p.settings, err)) return nullptr;
  if (p.standalone) return MakeStandalone(loop, p, err);
  const std::string& host = p.endpoint.host;
  int port = p.endpoint.PortOr(kDefaultRendezvousPort);
  std::string dir_err;
  std::string dir = RegimeDir(p.settings.state_dir, &dir_err);
  if (dir.empty())
    Log(LogLevel::kWarning, "rendezvous: no regime records ({}): an agent restarted on this node "
        "cannot tell whether run {} still runs", dir_err, p.run_id);
  std::string key = RegimeKey(p.run_id, FormatEndpoint(p.endpoint));
  std::string regime_path = dir.empty() ? "" : RegimeRecordPath(dir, key);
  // A fresh host must never start a second regime of a run that has one (split brain).
  if (std::optional<RoundInfo> regime = RecordedRegime(p, dir, key))
    return std::make_unique<FailoverRendezvous>(
        loop, Failover(p, regime_path), *regime,
        fmt::format("had a regime here (round {} of {} node(s)) that may still run", regime->round,
                    regime->successors.size()));
  SocketAddress addr;
  if (!ResolveAddress(host, port, &addr, err)) return nullptr;
  // No record here (a new node, or records lost): the run's nodes may know (issue 19 item 17).
  if (std::optional<RoundInfo> found = DiscoveredHost(p, AddressText(addr.storage), port))
    return std::make_unique<FailoverRendezvous>(
        loop, Failover(p, regime_path), *found,
        fmt::format("runs on its nodes, not at the endpoint {} (walking {} of them at port {})",
                    FormatEndpoint(p.endpoint), found->successors.size(), port));
  bool loopback = IsLoopback(addr.storage);
  // A host name that resolves to loopback here (Debian's "127.0.1.1 hostname") still names
  // this machine to the other nodes: serve on every address, as with is_host=1.
  bool name_for_loopback = loopback && !IsNumericAddress(host) && host != "localhost";
  if (p.settings.host_mode != HostMode::kClient) {
    SocketAddress bind = addr;
    if ((p.settings.host_mode == HostMode::kHost || name_for_loopback) &&
        !ResolveAddress("", port, &bind, err))
      return nullptr;
    int bind_errno = 0;
    std::string bind_err;
    UniqueFd listener = ListenOn(bind, &bind_errno, &bind_err);
    if (listener) {
      std::string bind_text = AddressText(bind.storage);
      // Workers get the endpoint's host as MASTER_ADDR and resolve it where they run.
      auto hosting = MakeHost(loop, p, std::move(listener), host, bind_text,
                              ChooseHostAuth(p, loopback && !name_for_loopback), err);
      if (!hosting) return nullptr;
      return std::make_unique<FailoverRendezvous>(loop, Failover(p, regime_path), std::move(hosting));
    }
    bool someone_else = bind_errno == EADDRINUSE || bind_errno == EADDRNOTAVAIL;
    if (p.settings.host_mode == HostMode::kHost || !someone_else) {
      if (err) *err = fmt::format("cannot host the rendezvous on {}: {}", FormatEndpoint(p.endpoint), bind_err);
      return nullptr;
    }
  }
  // Resolved here, before the agent's loop runs: the client never looks names up.
  return std::make_unique<FailoverRendezvous>(loop, Failover(p, regime_path), host, port, addr);
}

}  // namespace elastic
