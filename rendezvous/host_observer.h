// HostObserver: what the rendezvous host tells an onlooker (the job's event
// record, launcher/job_events.h) about each step of its state machine. The host
// calls it on the loop, after the step, before carrying out the actions; the
// observer must not block and must not call back into the host. Non-owning: it
// outlives every host that points at it (the agent's, and a successor's after a
// takeover).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "rendezvous/rendezvous_state.h"

namespace elastic {

// One step of the host's state machine: the event, what it was before (only the
// few facts the record needs: no copy of the node table per heartbeat) and after.
struct HostStep {
  const RendezvousEvent& event;
  RendezvousPhase phase_before;
  uint64_t round_before;
  int restarts_before;
  std::string event_node;  // the name of the event's node as the host knew it ("" if none)
  const RendezvousState& after;
  const std::vector<RendezvousAction>& actions;
  TimePoint now;
};

class HostObserver {
 public:
  virtual ~HostObserver() = default;
  // A host starts: the first one of the job, or a successor after the host's
  // loss (`carried` set: it continues the record).
  virtual void OnHostStart(const RendezvousSettings& settings, const std::string& run_id,
                           const std::string& node_name, const CarriedRound* carried,
                           TimePoint now) = 0;
  virtual void OnHostStep(const HostStep& step) = 0;
  // The job's status for an observer that asks (`elasticrun status`): any JSON value
  // (launcher/job_status.h); null: none kept. `requester`: the asking node (not listed).
  virtual nlohmann::json Status(const RendezvousState& state, NodeId requester) {
    (void)state;
    (void)requester;
    return nullptr;
  }
};

}  // namespace elastic
