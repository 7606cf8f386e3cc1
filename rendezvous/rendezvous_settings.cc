#include "rendezvous/rendezvous_settings.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <set>

#include "common/parse.h"
#include "rendezvous/token_file.h"

namespace elastic {
namespace {

using Setter = std::function<bool(const std::string& key, const std::string& value,
                                  RendezvousSettings* s, std::string* err)>;

struct ConfKey {
  Setter set;
  const char* help;
};

Setter Seconds(int64_t RendezvousSettings::*field) {
  return [field](const std::string& key, const std::string& value, RendezvousSettings* s,
                 std::string* err) {
    long long ms = 0;
    if (!ParseSeconds(fmt::format("--rdzv-conf {}", key), value, &ms, err)) return false;
    s->*field = ms;
    return true;
  };
}

Setter Integer(int RendezvousSettings::*field, long long min, long long max) {
  return [=](const std::string& key, const std::string& value, RendezvousSettings* s,
             std::string* err) {
    long long v = 0;
    if (!ParseIntNamed(fmt::format("--rdzv-conf {}", key), value, min, max, &v, err)) return false;
    s->*field = static_cast<int>(v);
    return true;
  };
}

bool SetBool(const std::string& key, const std::string& value, bool* out, std::string* err) {
  if (value == "1" || value == "true" || value == "True") return *out = true, true;
  if (value == "0" || value == "false" || value == "False") return *out = false, true;
  if (err) *err = fmt::format("--rdzv-conf {}: '{}' is not 0/1/true/false", key, value);
  return false;
}

const std::map<std::string, ConfKey>& Keys() {
  static const std::map<std::string, ConfKey> keys = {
      {"join_timeout", {Seconds(&RendezvousSettings::join_timeout_ms),
                        "seconds to wait for min nodes (600)"}},
      {"last_call_timeout", {Seconds(&RendezvousSettings::last_call_timeout_ms),
                             "seconds to wait for more never-seen nodes once min joined (30)"}},
      {"close_timeout", {Seconds(&RendezvousSettings::close_timeout_ms),
                         "seconds the host waits for peers to receive the final message (30)"}},
      {"heartbeat_interval", {Seconds(&RendezvousSettings::heartbeat_interval_ms),
                              "seconds between heartbeats (2)"}},
      {"heartbeat_timeout", {Seconds(&RendezvousSettings::heartbeat_timeout_ms),
                             "seconds of silence after which a peer is gone (10)"}},
      {"expected_nodes", {Integer(&RendezvousSettings::expected_nodes, 0, 1 << 20),
                          "close the first round as soon as this many nodes joined (0: unknown)"}},
      {"failover_successors",
       {Integer(&RendezvousSettings::failover_successors, 1, 1 << 20),
        "host: a round's first nodes each agent may fail over to (8)"}},
      {"is_host", {[](const std::string& key, const std::string& value, RendezvousSettings* s,
                      std::string* err) {
                     bool host = false;
                     if (!SetBool(key, value, &host, err)) return false;
                     s->host_mode = host ? HostMode::kHost : HostMode::kClient;
                     return true;
                   },
                   "1: this agent hosts, 0: it joins; unset: host if the endpoint is local"}},
      {"token", {[](const std::string&, const std::string& value, RendezvousSettings* s,
                    std::string*) {
                   s->token = value;
                   return true;
                 },
                 "shared secret for HMAC-SHA256 challenge-response; visible to every local "
                 "user on a command line: prefer token_file (or ELASTIC_RDZV_TOKEN)"}},
      {"token_file", {[](const std::string&, const std::string& value, RendezvousSettings* s,
                         std::string* err) { return ReadTokenFile(value, &s->token, err); },
                      "file holding the token, mode 0600 (or ELASTIC_RDZV_TOKEN_FILE)"}},
      {"guest", {[](const std::string& key, const std::string& value, RendezvousSettings* s,
                    std::string* err) { return SetBool(key, value, &s->guest, err); },
                 "1: this agent's job joined another job's run: ranked after the run's own "
                 "nodes, which keep the host and the failover successors (0)"}},
      {"munge", {[](const std::string& key, const std::string& value, RendezvousSettings* s,
                    std::string* err) { return SetBool(key, value, &s->use_munge, err); },
                 "0: do not authenticate with munge even where munged runs (1)"}},
      {"munge_socket", {[](const std::string&, const std::string& value, RendezvousSettings* s,
                           std::string*) {
                          s->munge_socket = value;
                          return true;
                        },
                        "path of munged's socket (library default)"}},
      {"state_dir", {[](const std::string&, const std::string& value, RendezvousSettings* s,
                        std::string*) {
                       s->state_dir = value;
                       return true;
                     },
                     "directory of this node's regime records, for restarted agents "
                     "($XDG_RUNTIME_DIR/slurm-elastic or /tmp/slurm-elastic-UID)"}},
      {"auth_timeout", {Seconds(&RendezvousSettings::auth_timeout_ms),
                        "seconds a connection may take to authenticate, either side (10)"}},
      {"max_unauthenticated", {Integer(&RendezvousSettings::max_unauthenticated, 1, 1 << 16),
                               "host: connections not yet authenticated; past it accepting "
                               "pauses, later ones wait in the listen queue (64)"}},
      {"auth_max_frame_bytes", {[](const std::string& key, const std::string& value,
                                   RendezvousSettings* s, std::string* err) {
                                  long long v = 0;
                                  if (!ParseIntNamed("--rdzv-conf " + key, value, 1024, 1 << 20,
                                                     &v, err))
                                    return false;
                                  s->auth_max_frame_bytes = static_cast<uint32_t>(v);
                                  return true;
                                },
                                "largest message before authentication, in bytes (4096)"}},
      {"max_frame_bytes", {[](const std::string& key, const std::string& value,
                              RendezvousSettings* s, std::string* err) {
                             long long v = 0;
                             if (!ParseIntNamed("--rdzv-conf " + key, value, 1024, 64 << 20, &v,
                                                err))
                               return false;
                             s->max_frame_bytes = static_cast<uint32_t>(v);
                             return true;
                           },
                           "largest rendezvous message in bytes (1048576)"}},
      // torchrun's keys (torch/distributed/elastic/rendezvous, agent). Same meaning
      // where elasticrun has one; validated either way.
      {"keep_alive_interval", {Seconds(&RendezvousSettings::heartbeat_interval_ms),
                               "torchrun's name for heartbeat_interval"}},
      {"keep_alive_max_attempt", {Integer(&RendezvousSettings::keep_alive_max_attempt, 1, 1 << 20),
                                  "torchrun: missed heartbeats before a peer is gone; sets "
                                  "heartbeat_timeout = N x heartbeat_interval unless that is given"}},
      {"timeout", {Seconds(&RendezvousSettings::timeout_ms),
                   "torchrun's static/etcd wait for the nodes: join_timeout unless that is given"}},
      {"read_timeout", {Seconds(&RendezvousSettings::read_timeout_ms),
                        "torchrun's store read timeout: accepted, no effect (nothing here blocks on a "
                        "read; heartbeat_timeout finds a silent host)"}},
      {"store_type", {[](const std::string& key, const std::string& value, RendezvousSettings*,
                         std::string* err) {
                        if (value == "tcp" || value == "file") return true;
                        if (err) *err = fmt::format("--rdzv-conf {}: '{}' is not tcp or file", key, value);
                        return false;
                      },
                      "torchrun's rendezvous store, tcp or file: accepted, no effect (the "
                      "rendezvous is elasticrun's own, over TCP)"}},
      {"use_libuv", {[](const std::string& key, const std::string& value, RendezvousSettings*,
                        std::string* err) {
                       bool unused = false;
                       return SetBool(key, value, &unused, err);
                     },
                     "torchrun's TCPStore backend switch: accepted, no effect (elasticrun's store)"}},
  };
  return keys;
}

}  // namespace

bool ApplyRendezvousConf(const std::vector<std::pair<std::string, std::string>>& conf,
                         RendezvousSettings* settings, std::string* err, std::string* warning) {
  std::set<std::string> given;
  std::string unknown;
  for (const auto& [key, value] : conf) {
    auto it = Keys().find(key);
    if (it == Keys().end()) {
      unknown += fmt::format("{}'{}'", unknown.empty() ? "" : ", ", key);
      continue;
    }
    if (!it->second.set(key, value, settings, err)) return false;
    given.insert(key);
  }
  // torchrun's spellings of our settings; ours win when both are given.
  if (given.count("keep_alive_max_attempt") && !given.count("heartbeat_timeout")) {
    settings->heartbeat_timeout_ms = settings->heartbeat_interval_ms * settings->keep_alive_max_attempt;
  }
  if (given.count("timeout") && !given.count("join_timeout")) settings->join_timeout_ms = settings->timeout_ms;
  if (!unknown.empty() && warning) {
    std::string known;
    for (const auto& entry : Keys()) known += (known.empty() ? "" : ", ") + entry.first;
    // torchrun ignores keys it does not read; so do we, but say so (a typo is a silent default there).
    *warning = fmt::format("--rdzv-conf: ignoring unknown key{} {} (known: {})",
                           unknown.find(',') == std::string::npos ? "" : "s", unknown, known);
  }
  return true;
}

bool ValidateRendezvousSettings(const RendezvousSettings& s, std::string* err) {
  auto fail = [err](std::string message) {
    if (err) *err = std::move(message);
    return false;
  };
  if (s.min_nodes < 1 || s.max_nodes < s.min_nodes)
    return fail(fmt::format("--nnodes: need 1 <= MIN <= MAX, got {}:{}", s.min_nodes, s.max_nodes));
  // expected_nodes above MAX is allowed: the extra nodes stand by as spares.
  if (s.node_multiple < 1 || s.node_multiple > s.max_nodes)
    return fail(fmt::format("--node-multiple={}: must be 1..MAX ({} of --nnodes {}:{})",
                            s.node_multiple, s.max_nodes, s.min_nodes, s.max_nodes));
  if (s.max_nodes / s.node_multiple * s.node_multiple < s.min_nodes)
    return fail(fmt::format("--node-multiple={}: no multiple of {} within --nnodes {}:{}",
                            s.node_multiple, s.node_multiple, s.min_nodes, s.max_nodes));
  if (s.heartbeat_interval_ms <= 0 || s.heartbeat_timeout_ms <= s.heartbeat_interval_ms)
    return fail(fmt::format("--rdzv-conf: heartbeat_timeout ({} ms) must exceed "
                            "heartbeat_interval ({} ms) > 0",
                            s.heartbeat_timeout_ms, s.heartbeat_interval_ms));
  if (s.auth_timeout_ms <= 0)
    return fail(fmt::format("--rdzv-conf auth_timeout ({} ms) must be > 0", s.auth_timeout_ms));
  if (s.auth_max_frame_bytes > s.max_frame_bytes)
    return fail(fmt::format("--rdzv-conf auth_max_frame_bytes ({}) exceeds max_frame_bytes ({})",
                            s.auth_max_frame_bytes, s.max_frame_bytes));
  return true;
}

std::string RendezvousConfHelp() {
  std::string help;
  for (const auto& [key, entry] : Keys()) help += fmt::format("  {:<20} {}\n", key, entry.help);
  return help;
}

}  // namespace elastic
