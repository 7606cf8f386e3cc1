#include "launcher/job_status.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/log_escape.h"
#include "launcher/failure_report.h"
#include "launcher/json_fields.h"

namespace elastic {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

const char* StatusPhaseName(RendezvousPhase phase) {
  switch (phase) {
    case RendezvousPhase::kJoining: return "forming";
    case RendezvousPhase::kRunning: return "running";
    case RendezvousPhase::kFinishing: return "finishing";
    case RendezvousPhase::kClosed: return "ended";
  }
  return "?";
}

ordered NodesJson(const std::vector<JobStatusNode>& nodes) {
  ordered out = ordered::array();
  for (const JobStatusNode& n : nodes) {
    ordered j = {{"name", n.name}, {"state", n.state}};
    if (!n.standby.empty()) j["standby"] = n.standby;
    out.push_back(std::move(j));
  }
  return out;
}

bool DecodeNodes(const json& j, const char* key, std::vector<JobStatusNode>* out, std::string* err) {
  auto it = j.find(key);
  if (it == j.end()) return true;
  if (!it->is_array()) {
    *err = fmt::format("field '{}' is not an array", key);
    return false;
  }
  for (const json& n : *it) {
    if (!n.is_object()) {
      *err = fmt::format("field '{}' holds a non-object", key);
      return false;
    }
    JobStatusNode node;
    if (!GetField(n, "name", &node.name, true, err) || !GetField(n, "state", &node.state, true, err) ||
        !GetField(n, "standby", &node.standby, false, err))
      return false;
    out->push_back(std::move(node));
  }
  return true;
}

// "12 s", "3 min 4 s", "2 h 5 min": how long ago, for a person.
std::string Ago(int64_t ms) {
  int64_t s = std::max<int64_t>(0, ms) / 1000;
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {} s", s / 60, s % 60);
  return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
}

}  // namespace

JobStatus MakeJobStatus(const RendezvousState& state, const JobEventMemory& m, NodeId requester,
                        int64_t unix_ms) {
  JobStatus st;
  st.time_unix_ms = unix_ms;
  st.run_id = m.run_id;
  st.host = m.host;
  st.phase = StatusPhaseName(state.phase);
  st.round = state.round;
  st.min_nodes = m.min_nodes;
  st.max_nodes = m.max_nodes;
  st.max_restarts = m.max_restarts;
  st.restarts_used = state.restarts_used;
  st.restarts_left = std::max(0, m.max_restarts - state.restarts_used);
  bool running = state.phase == RendezvousPhase::kRunning || state.phase == RendezvousPhase::kFinishing;
  if (running) st.round_since_unix_ms = m.round_since_unix_ms;
  for (NodeId id : running ? state.members : std::vector<NodeId>{}) {
    auto it = state.nodes.find(id);
    if (it == state.nodes.end()) continue;
    ++st.nodes;
    st.world_size += it->second.local_world_size;
    if (st.members.size() < kJobEventMaxMembers)
      st.members.push_back({it->second.desc.name, it->second.succeeded ? "succeeded" : "running", ""});
  }
  st.members_total = st.nodes;
  for (const auto& [id, rec] : state.nodes) {
    if (id == requester || (running && std::find(state.members.begin(), state.members.end(), id) !=
                                           state.members.end()))
      continue;
    ++st.others_total;
    if (st.others.size() >= kJobEventMaxMembers) continue;
    bool waiting = std::find(state.wait_list.begin(), state.wait_list.end(), id) != state.wait_list.end();
    const char* what = waiting || (running && rec.joined) ? "spare" : rec.joined ? "joining" : "watching";
    st.others.push_back({rec.desc.name, what, rec.standby});
  }
  st.last_failures = m.last_failures;
  st.recoveries = m.recoveries;
  st.recovery_ms_total = m.recovery_ms_total;
  st.last_change = m.last_change;
  st.last_change_unix_ms = m.last_change_unix_ms;
  return st;
}

json EncodeJobStatus(const JobStatus& st) {
  ordered j = {{"v", st.version},
               {"time", FormatUnixMillis(st.time_unix_ms)},
               {"unix_ms", st.time_unix_ms},
               {"run_id", st.run_id},
               {"host", st.host},
               {"phase", st.phase},
               {"round", st.round},
               {"nodes", st.nodes},
               {"world_size", st.world_size},
               {"min_nodes", st.min_nodes},
               {"max_nodes", st.max_nodes},
               {"restarts_used", st.restarts_used},
               {"restarts_left", st.restarts_left},
               {"max_restarts", st.max_restarts}};
  if (st.round_since_unix_ms > 0) j["round_since_unix_ms"] = st.round_since_unix_ms;
  j["members"] = NodesJson(st.members);
  j["members_total"] = st.members_total;
  j["others"] = NodesJson(st.others);
  j["others_total"] = st.others_total;
  ordered failures = ordered::array();
  for (const WorkerFailure& f : st.last_failures) failures.push_back(EventFailureJson(f));
  j["last_failures"] = std::move(failures);
  j["recoveries"] = st.recoveries;
  j["recovery_ms_total"] = st.recovery_ms_total;
  if (!st.last_change.empty()) {
    j["last_change"] = st.last_change;
    j["last_change_unix_ms"] = st.last_change_unix_ms;
  }
  // Through the protocol's frames as a plain object; the key order stays in the text.
  return json::parse(j.dump(-1, ' ', false, ordered::error_handler_t::replace));
}

bool DecodeJobStatus(const json& j, JobStatus* st, std::string* err) {
  if (!j.is_object()) {
    *err = "not a JSON object";
    return false;
  }
  *st = JobStatus{};
  if (!GetField(j, "v", &st->version, true, err)) return false;
  if (st->version < 1 || st->version > kJobStatusVersion) {
    *err = fmt::format("version {} is newer than this elasticrun reads ({})", st->version, kJobStatusVersion);
    return false;
  }
  if (!GetField(j, "unix_ms", &st->time_unix_ms, true, err) || !GetField(j, "run_id", &st->run_id, false, err) ||
      !GetField(j, "host", &st->host, false, err) || !GetField(j, "phase", &st->phase, true, err) ||
      !GetField(j, "round", &st->round, false, err) ||
      !GetField(j, "round_since_unix_ms", &st->round_since_unix_ms, false, err) ||
      !GetField(j, "nodes", &st->nodes, false, err) || !GetField(j, "world_size", &st->world_size, false, err) ||
      !GetField(j, "min_nodes", &st->min_nodes, false, err) || !GetField(j, "max_nodes", &st->max_nodes, false, err) ||
      !GetField(j, "restarts_used", &st->restarts_used, false, err) ||
      !GetField(j, "restarts_left", &st->restarts_left, false, err) ||
      !GetField(j, "max_restarts", &st->max_restarts, false, err) ||
      !GetField(j, "members_total", &st->members_total, false, err) ||
      !GetField(j, "others_total", &st->others_total, false, err) ||
      !GetField(j, "recoveries", &st->recoveries, false, err) ||
      !GetField(j, "recovery_ms_total", &st->recovery_ms_total, false, err) ||
      !GetField(j, "last_change", &st->last_change, false, err) ||
      !GetField(j, "last_change_unix_ms", &st->last_change_unix_ms, false, err) ||
      !DecodeNodes(j, "members", &st->members, err) || !DecodeNodes(j, "others", &st->others, err))
    return false;
  if (auto it = j.find("last_failures"); it != j.end()) {
    if (!it->is_array()) {
      *err = "field 'last_failures' is not an array";
      return false;
    }
    for (const json& f : *it) {
      WorkerFailure failure;
      if (!DecodeEventFailure(f, &failure, err)) return false;
      st->last_failures.push_back(std::move(failure));
    }
  }
  return true;
}

std::string RenderJobStatus(const JobStatus& st, int64_t now) {
  std::string out = fmt::format("run {}: {}", EscapeForLog(st.run_id), EscapeForLog(st.phase));
  if (st.phase == "running" || st.phase == "finishing") {
    out += fmt::format(", round {}, {} node(s) of {}:{}, {} worker(s)", st.round, st.nodes, st.min_nodes,
                       st.max_nodes, st.world_size);
    if (st.round_since_unix_ms > 0) out += fmt::format(", for {}", Ago(now - st.round_since_unix_ms));
  } else {
    out += fmt::format(" round {} (nodes {}:{})", st.round, st.min_nodes, st.max_nodes);
  }
  out += fmt::format("\nrendezvous host: {}\n", EscapeForLog(st.host));
  out += fmt::format("restarts: {} used, {} left (--max-restarts={})\n", st.restarts_used, st.restarts_left,
                     st.max_restarts);
  out += fmt::format("recoveries: {}, {:.1f} s in all\n", st.recoveries, st.recovery_ms_total / 1000.0);
  if (!st.last_change.empty())
    out += fmt::format("last change: {}, {} ago\n", EscapeForLog(st.last_change),
                       Ago(now - st.last_change_unix_ms));
  auto nodes = [&out](const char* title, const std::vector<JobStatusNode>& list, int total) {
    if (total == 0) return;
    out += fmt::format("{} ({}):\n", title, total);
    for (const JobStatusNode& n : list)
      out += fmt::format("  {}  {}{}\n", EscapeForLog(n.name), EscapeForLog(n.state),
                         n.standby.empty() ? "" : " (" + EscapeForLog(n.standby) + ")");
    if (static_cast<int>(list.size()) < total) out += fmt::format("  ... {} more\n", total - list.size());
  };
  nodes("members, in group-rank order", st.members, st.members_total);
  nodes("other nodes", st.others, st.others_total);
  if (!st.last_failures.empty()) {
    out += "last failures, newest last:\n";
    for (const WorkerFailure& f : st.last_failures) {
      out += fmt::format("  {} rank {} (local rank {}) on {}: {}", FormatUnixMillis(f.time_unix_ms),
                         f.global_rank, f.local_rank, EscapeForLog(f.host), DescribeExit(f));
      if (!f.message.empty()) out += ": " + EscapeForLog(f.message.substr(0, f.message.find('\n')));
      out += "\n";
    }
  }
  return out;
}

}  // namespace elastic
