#include "launcher/job_events.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <type_traits>

#include "common/name_table.h"
#include "launcher/failure_report.h"
#include "launcher/json_fields.h"

namespace elastic {
namespace {

using nlohmann::json;

constexpr std::pair<JobEventKind, const char*> kKindNames[] = {
    {JobEventKind::kJobStart, "job_start"},     {JobEventKind::kRound, "round"},
    {JobEventKind::kWorkerFailure, "worker_failure"}, {JobEventKind::kNodeLost, "node_lost"},
    {JobEventKind::kNodeJoined, "node_joined"}, {JobEventKind::kEnd, "end"},
    {JobEventKind::kWorkerHung, "worker_hung"}, {JobEventKind::kHealthCheck, "health_check"},
    {JobEventKind::kRequeue, "requeue"},
};

// Text from a worker's error file or the network: bounded (whole UTF-8 characters
// are not guaranteed by the cut, so invalid bytes are replaced when encoding).
std::string Bounded(const std::string& text) {
  return text.size() <= kJobEventMaxText ? text : text.substr(0, kJobEventMaxText);
}

// Written in the order a reader scans a line: version and kind first.
using ordered = nlohmann::ordered_json;

}  // namespace

nlohmann::ordered_json EventFailureJson(const WorkerFailure& f) {
  ordered j = {{"rank", f.global_rank}, {"local_rank", f.local_rank}, {"node", Bounded(f.host)},
            {"exit_code", f.exit_code}, {"signal", f.signal}, {"cause", DescribeExit(f)}};
  if (f.time_unix_ms > 0) {
    j["time"] = FormatUnixMillis(f.time_unix_ms);
    j["unix_ms"] = f.time_unix_ms;
  }
  if (!f.message.empty()) j["message"] = Bounded(f.message);
  return j;
}

bool DecodeEventFailure(const nlohmann::json& j, WorkerFailure* f, std::string* err) {
  if (!j.is_object()) {
    *err = "field 'failure' is not an object";
    return false;
  }
  return GetField(j, "rank", &f->global_rank, true, err) && GetField(j, "local_rank", &f->local_rank, false, err) &&
         GetField(j, "node", &f->host, false, err) && GetField(j, "exit_code", &f->exit_code, false, err) &&
         GetField(j, "signal", &f->signal, false, err) && GetField(j, "unix_ms", &f->time_unix_ms, false, err) &&
         GetField(j, "message", &f->message, false, err);
}

const char* JobEventKindName(JobEventKind kind) { return NameIn(kKindNames, kind, "?"); }

bool ParseJobEventKind(const std::string& name, JobEventKind* out) { return ValueIn(kKindNames, name, out); }

std::string EncodeJobEvent(const JobEvent& e) {
  ordered j = {{"v", e.version},         {"event", JobEventKindName(e.kind)},
            {"time", FormatUnixMillis(e.time_unix_ms)}, {"unix_ms", e.time_unix_ms},
            {"run_id", e.run_id},     {"host", e.host},
            {"round", e.round},       {"restarts_used", e.restarts_used},
            {"restarts_left", e.restarts_left}};
  switch (e.kind) {
    case JobEventKind::kJobStart:
      j["takeover"] = e.takeover;
      j["min_nodes"] = e.min_nodes;
      j["max_nodes"] = e.max_nodes;
      j["max_restarts"] = e.max_restarts;
      break;
    case JobEventKind::kRound:
      j["reason"] = e.reason;
      j["nodes"] = e.nodes;
      j["world_size"] = e.world_size;
      j["members"] = e.members;
      j["members_total"] = e.members_total;
      if (e.recovery_ms) j["recovery_ms"] = *e.recovery_ms;
      break;
    case JobEventKind::kNodeLost:
    case JobEventKind::kNodeJoined:
      j["node"] = e.node;
      if (!e.reason.empty()) j["reason"] = Bounded(e.reason);
      if (e.kind == JobEventKind::kNodeLost) j["notice"] = e.notice;
      break;
    case JobEventKind::kEnd:
      j["reason"] = e.reason;
      j["message"] = Bounded(e.message);
      break;
    case JobEventKind::kWorkerHung:
    case JobEventKind::kHealthCheck:
    case JobEventKind::kRequeue:
      j["node"] = e.node;
      if (!e.reason.empty()) j["reason"] = e.reason;
      j["message"] = Bounded(e.message);
      break;
    case JobEventKind::kWorkerFailure:
      break;
  }
  if (e.failure) j["failure"] = EventFailureJson(*e.failure);
  return j.dump(-1, ' ', false, ordered::error_handler_t::replace);
}

bool DecodeJobEvent(const std::string& line, JobEvent* e, std::string* err) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    *err = "not a JSON object";
    return false;
  }
  *e = JobEvent{};
  std::string kind;
  if (!GetField(j, "v", &e->version, true, err) || !GetField(j, "event", &kind, true, err)) return false;
  if (e->version < 1 || e->version > kJobEventVersion) {
    *err = fmt::format("version {} (this elasticrun reads 1 to {})", e->version, kJobEventVersion);
    return false;
  }
  if (!ParseJobEventKind(kind, &e->kind)) {
    *err = fmt::format("unknown event '{}'", kind);
    return false;
  }
  if (!GetField(j, "unix_ms", &e->time_unix_ms, true, err) || !GetField(j, "run_id", &e->run_id, false, err) ||
      !GetField(j, "host", &e->host, false, err) || !GetField(j, "round", &e->round, false, err) ||
      !GetField(j, "restarts_used", &e->restarts_used, false, err) ||
      !GetField(j, "restarts_left", &e->restarts_left, false, err) ||
      !GetField(j, "takeover", &e->takeover, false, err) || !GetField(j, "min_nodes", &e->min_nodes, false, err) ||
      !GetField(j, "max_nodes", &e->max_nodes, false, err) ||
      !GetField(j, "max_restarts", &e->max_restarts, false, err) || !GetField(j, "reason", &e->reason, false, err) ||
      !GetField(j, "nodes", &e->nodes, false, err) || !GetField(j, "world_size", &e->world_size, false, err) ||
      !GetField(j, "members_total", &e->members_total, false, err) || !GetField(j, "node", &e->node, false, err) ||
      !GetField(j, "notice", &e->notice, false, err) ||
      !GetField(j, "message", &e->message, false, err))
    return false;
  if (auto it = j.find("members"); it != j.end()) {
    if (!it->is_array()) {
      *err = "field 'members' is not an array";
      return false;
    }
    for (const json& m : *it) {
      if (!m.is_string()) {
        *err = "field 'members' holds a non-string";
        return false;
      }
      e->members.push_back(m.get<std::string>());
    }
  }
  if (j.contains("recovery_ms")) {
    int64_t ms = 0;
    if (!GetField(j, "recovery_ms", &ms, true, err)) return false;
    e->recovery_ms = ms;
  }
  if (auto it = j.find("failure"); it != j.end()) {
    WorkerFailure f;
    if (!DecodeEventFailure(*it, &f, err)) return false;
    e->failure = f;
  }
  return true;
}

// ---- which events a step of the host makes ----

namespace {

JobEvent Base(JobEventKind kind, const JobEventMemory& m, uint64_t round, int restarts_used,
              int64_t unix_ms) {
  JobEvent e;
  e.kind = kind;
  e.time_unix_ms = unix_ms;
  e.run_id = m.run_id;
  e.host = m.host;
  e.round = round;
  e.restarts_used = restarts_used;
  e.restarts_left = std::max(0, m.max_restarts - restarts_used);
  return e;
}

bool IsTerminal(RendezvousActionKind kind) {
  return kind == RendezvousActionKind::kDone || kind == RendezvousActionKind::kJobFailed ||
         kind == RendezvousActionKind::kFatal;
}

JobEvent RoundEvent(const HostStep& step, const RendezvousAction& a, JobEventMemory* m,
                    int64_t unix_ms) {
  JobEvent e = Base(JobEventKind::kRound, *m, a.round.round, a.round.restarts_used, unix_ms);
  e.reason = m->next_round_reason;
  e.nodes = a.round.group_world_size;
  e.world_size = a.round.world_size;
  e.members_total = static_cast<int>(step.after.members.size());
  for (NodeId id : step.after.members) {
    if (e.members.size() >= kJobEventMaxMembers) break;
    auto it = step.after.nodes.find(id);
    e.members.push_back(it == step.after.nodes.end() ? fmt::format("node{}", id) : it->second.desc.name);
  }
  if (m->recovering_since)
    e.recovery_ms = std::chrono::duration_cast<Millis>(step.now - *m->recovering_since).count();
  m->recovering_since.reset();
  m->next_round_reason = "restart";
  return e;
}

}  // namespace

namespace {

JobEvent AgentBase(JobEventKind kind, const AgentEventContext& ctx, int64_t unix_ms) {
  JobEvent e;
  e.kind = kind;
  e.time_unix_ms = unix_ms;
  e.run_id = ctx.run_id;
  e.host = ctx.node;
  e.node = ctx.node;
  e.round = ctx.round;
  e.restarts_used = ctx.restarts_used;
  e.restarts_left = std::max(0, ctx.max_restarts - ctx.restarts_used);
  return e;
}

}  // namespace

JobEvent MakeWorkerHung(const AgentEventContext& ctx, const WorkerFailure& hung, int64_t unix_ms) {
  JobEvent e = AgentBase(JobEventKind::kWorkerHung, ctx, unix_ms);
  e.reason = "timer_expired";
  e.message = hung.message;
  WorkerFailure f = hung;
  f.traceback.clear();  // the stacks are in their file, named by the message
  e.failure = f;
  return e;
}

JobEvent MakeHealthCheckEvent(const AgentEventContext& ctx, const std::string& verdict, const std::string& result,
                              int64_t unix_ms) {
  JobEvent e = AgentBase(JobEventKind::kHealthCheck, ctx, unix_ms);
  e.reason = verdict;
  e.message = result;
  return e;
}

JobEvent MakeRequeueEvent(const AgentEventContext& ctx, const std::string& reason, const std::string& message,
                          int64_t unix_ms) {
  JobEvent e = AgentBase(JobEventKind::kRequeue, ctx, unix_ms);
  e.reason = reason;
  e.message = message;
  return e;
}

JobEvent MakeJobStart(const RendezvousSettings& settings, const CarriedRound* carried,
                      JobEventMemory* m, TimePoint now, int64_t unix_ms) {
  m->min_nodes = settings.min_nodes;
  m->max_nodes = settings.max_nodes;
  m->max_restarts = settings.max_restarts;
  JobEvent e = Base(JobEventKind::kJobStart, *m, carried ? carried->next_round : 0,
                    carried ? carried->restarts_used : 0, unix_ms);
  e.takeover = carried != nullptr;
  e.min_nodes = settings.min_nodes;
  e.max_nodes = settings.max_nodes;
  e.max_restarts = settings.max_restarts;
  if (carried) {
    m->next_round_reason = "failover";
    m->recovering_since = carried->host_lost_at.value_or(now);
  }
  return e;
}

namespace {

// What the status view keeps of the events (job_status.h).
void Remember(const JobEvent& e, JobEventMemory* m) {
  switch (e.kind) {
    case JobEventKind::kRound:
      m->round_since_unix_ms = e.time_unix_ms;
      if (e.recovery_ms) {
        ++m->recoveries;
        m->recovery_ms_total += *e.recovery_ms;
      }
      break;
    case JobEventKind::kWorkerFailure:
      if (!e.failure) break;
      if (m->last_failures.size() >= kJobStatusMaxFailures) m->last_failures.erase(m->last_failures.begin());
      m->last_failures.push_back(*e.failure);
      m->last_change = fmt::format("rank {} failed on {} ({})", e.failure->global_rank, e.failure->host,
                                   DescribeExit(*e.failure));
      m->last_change_unix_ms = e.time_unix_ms;
      break;
    case JobEventKind::kNodeLost:
    case JobEventKind::kNodeJoined:
      m->last_change = e.node + (e.kind == JobEventKind::kNodeJoined ? " joined"
                                 : e.notice                          ? " left"
                                                                     : " lost");
      m->last_change_unix_ms = e.time_unix_ms;
      break;
    case JobEventKind::kJobStart:
    case JobEventKind::kEnd:
    case JobEventKind::kWorkerHung:  // agents' verdicts: not the host's memory
    case JobEventKind::kHealthCheck:
    case JobEventKind::kRequeue:
      break;
  }
}

std::vector<JobEvent> DeriveStep(const HostStep& step, JobEventMemory* m, int64_t unix_ms) {
  std::vector<JobEvent> out;
  if (m->ended) return out;
  const RendezvousState& s = step.after;
  bool was_running = step.phase_before == RendezvousPhase::kRunning ||
                     step.phase_before == RendezvousPhase::kFinishing;
  bool restarted = was_running && s.round > step.round_before;
  // Closed in this step (a kDone to one node while others run only acknowledges it).
  bool terminal = s.phase == RendezvousPhase::kClosed && step.phase_before != RendezvousPhase::kClosed;
  bool job_failed = std::any_of(step.actions.begin(), step.actions.end(), [](const RendezvousAction& a) {
    return a.kind == RendezvousActionKind::kJobFailed;
  });
  if (restarted) m->recovering_since = step.now;
  if (const auto* ev = std::get_if<EvWorkerFailed>(&step.event);
      ev && was_running && ev->round == step.round_before && (restarted || job_failed)) {
    JobEvent e = Base(JobEventKind::kWorkerFailure, *m, step.round_before, s.restarts_used, unix_ms);
    e.failure = ev->failure;
    out.push_back(std::move(e));
    m->next_round_reason = "worker_failure";
  } else if (const auto* ev = std::get_if<EvLeave>(&step.event); ev && was_running && (restarted || terminal)) {
    JobEvent e = Base(JobEventKind::kNodeLost, *m, step.round_before, s.restarts_used, unix_ms);
    e.node = step.event_node;
    e.reason = ev->reason;
    e.notice = ev->notice;
    out.push_back(std::move(e));
    // A departure with notice (scancel, time limit, preemption of that node) counts no restart.
    m->next_round_reason = ev->notice ? "departure" : "node_lost";
  } else if (std::holds_alternative<EvJoin>(step.event) && restarted) {
    JobEvent e = Base(JobEventKind::kNodeJoined, *m, step.round_before, s.restarts_used, unix_ms);
    e.node = step.event_node;
    out.push_back(std::move(e));
    m->next_round_reason = "node_joined";
  } else if (restarted) {
    m->next_round_reason = "restart";
  }
  for (const RendezvousAction& a : step.actions) {
    if (a.kind == RendezvousActionKind::kRoundComplete) {
      out.push_back(RoundEvent(step, a, m, unix_ms));
      break;
    }
  }
  for (const RendezvousAction& a : step.actions) {
    if (!terminal || !IsTerminal(a.kind)) continue;
    JobEvent e = Base(JobEventKind::kEnd, *m, s.round, s.restarts_used, unix_ms);
    e.reason = EndReasonName(a.end_reason);
    e.message = a.message;
    if (a.kind == RendezvousActionKind::kJobFailed && a.failure.global_rank >= 0) e.failure = a.failure;
    out.push_back(std::move(e));
    m->ended = true;
    break;
  }
  return out;
}

}  // namespace

std::vector<JobEvent> DeriveJobEvents(const HostStep& step, JobEventMemory* m, int64_t unix_ms) {
  std::vector<JobEvent> out = DeriveStep(step, m, unix_ms);
  for (const JobEvent& e : out) Remember(e, m);
  return out;
}

}  // namespace elastic
