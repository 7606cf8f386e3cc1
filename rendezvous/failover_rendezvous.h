// FailoverRendezvous: the RendezvousHandler of every agent of a multi-node run.
// It starts as the host (RendezvousHost) or as a client of the endpoint's host
// (RendezvousClient) and, when a client loses its host (the connection drops, or
// the host is silent past heartbeat_timeout), fails over instead of ending the
// job (docs/design.md "Failover"):
//   1. it stops its workers (on_restart_required) if they run;
//   2. it walks the last round's successors (its first failover_successors
//      members in group-rank order, each with its own rendezvous port; a node
//      ranked past them walks them too and never takes over), skipping the lost
//      host: a successor
//      that refuses the connection, or sends no challenge within
//      heartbeat_timeout + heartbeat_interval (it may still be noticing the
//      loss), or is stale (HostIsStale), is skipped;
//   3. the first successor that answers is the new host; reaching its own rank,
//      the agent takes over: a RendezvousHost on its own listening socket (bound
//      when it first connected, so connections wait in its backlog until then)
//      with the carried state (round numbers go on upward, the loss counts
//      against --max-restarts on top of every restart the lost host counted:
//      CarriedRestarts, the majority rule of rendezvous_state.h).
// A spare that stood by when the last round completed walks its successors the
// same way (it never takes over) and joins the new host as a voter of that round.
// An agent that does not take over itself (a latecomer, a spare, a member ranked past the
// successors) and whose walk found no host walks again after a pause
// (PauseAfterAFruitlessWalk), until join_timeout: the ones that could host may be cut off
// or restarting. A host that welcomed it and is lost in turn starts a new join_timeout.
// A host's loss before any round (or standby), or past join_timeout of walking, is fatal.
// A host stuck without a majority (it was cut off, or SIGSTOPped) probes the
// other successors every heartbeat_timeout; one that completed a later round
// (ShouldYield) is a newer regime: the stuck host gives up hosting (its clients
// fail over in turn) and joins it as a latecomer.
// Every agent records each round it takes part in (regime_record.h); an agent
// started where a record of its run says a regime runs walks that record's
// successors as a latecomer instead (Rejoin): it never hosts a fresh round 0.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/unique_fd.h"
#include "rendezvous/auth.h"
#include "rendezvous/failover_rules.h"
#include "rendezvous/rendezvous_client.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_host.h"
#include "rendezvous/rendezvous_settings.h"

namespace elastic {

struct FailoverParams {
  RendezvousSettings settings;
  std::string run_id;
  std::string node_name;
  std::string regime_path;  // where this agent records each round (regime_record.h); "": nowhere
  HostObserver* observer = nullptr;  // for the host it may become (host_observer.h); not owned
  // The port this agent's failover socket binds on its own address where it can (else a
  // free one): the endpoint's, so that an agent knowing only the run's nodes finds the
  // host that took over at that port (host_discovery.h). 0: always a free one.
  int preferred_listen_port = 0;
};

class FailoverRendezvous : public RendezvousHandler {
 public:
  // This agent hosts from the start.
  FailoverRendezvous(EventLoop& loop, FailoverParams params, std::unique_ptr<RendezvousHost> host);
  // This agent joins the host at host:port, resolved (before the loop runs) to
  // `address`; unset, host must be a numeric address (rendezvous_client.h).
  FailoverRendezvous(EventLoop& loop, FailoverParams params, std::string host, int port,
                     std::optional<SocketAddress> address = std::nullopt);
  // This agent was started where `regime` (a record, regime_record.h) may still run: it
  // walks that round's successors and joins, as a latecomer, the first host that has
  // completed that round or a later one (never a fresh host of round 0).
  // `why` names where the regime was found (a record here, the run's nodes), for the log.
  FailoverRendezvous(EventLoop& loop, FailoverParams params, const RoundInfo& regime,
                     const std::string& why);
  ~FailoverRendezvous() override;

  void SetCallbacks(Callbacks callbacks) override { callbacks_ = std::move(callbacks); }
  void Join(int local_world_size) override;
  void SetStandBy(std::string reason) override;
  void Watch() override;
  void ReportWorkerFailure(const WorkerFailure& failure) override;
  void ReportSucceeded() override;
  void EndJob(EndReason reason, const WorkerFailure& failure, const std::string& message) override;
  void Shutdown(int signal) override;
  std::string Describe() const override;

  bool hosting() const { return host_ != nullptr; }

 private:
  void UseClient(std::string host, int port, std::optional<int> candidate_rank,
                 std::optional<SocketAddress> address = std::nullopt);
  std::unique_ptr<RendezvousClient> MakeClient(const std::string& host, int port,
                                               std::optional<int> candidate_rank,
                                               bool probe = false,
                                               std::optional<SocketAddress> address = std::nullopt);
  void OnProbeTimer();
  void Probe();
  void Yield();
  void UseHost(std::unique_ptr<RendezvousHost> host);
  Callbacks InnerCallbacks();
  void OnRound(const RoundInfo& info);
  int ListenPort(const std::string& local_addr);
  void OnHostLost(const std::string& why);
  void FollowAsSpare(const std::optional<RoundInfo>& standby);
  void OnUnreachable(int rank, const std::string& why);
  void TryNext();
  void WalkAgain();
  void WalkTimedOut(const std::string& detail);  // past join_timeout: the host is lost
  void OnWelcomed();
  void TakeOver();
  void Retire();
  void ForgetRegime();  // the job ended for all: this agent's record goes
  void Fatal(const std::string& message, const JobEnd& end);

  EventLoop& loop_;
  FailoverParams params_;
  Callbacks callbacks_;
  std::unique_ptr<RendezvousHandler> inner_;
  RendezvousClient* client_ = nullptr;  // inner_, when a client
  RendezvousHost* host_ = nullptr;      // inner_, when the host
  std::string host_text_;               // the current host, "addr:port" for messages
  int host_rank_ = -1;                  // its rank in last_round_'s successors (-1: unknown)
  std::vector<std::unique_ptr<RendezvousHandler>> retired_;  // destroyed from the loop
  UniqueFd listener_;                   // own rendezvous socket until a takeover
  std::string listen_addr_;
  bool cannot_listen_ = false;          // tried once and failed: never a successor
  AuthMethod auth_ = AuthMethod::kNone;  // what the host asked for: a successor asks the same
  std::optional<RoundInfo> last_round_;  // the last round this agent's workers ran
  RestartsKnown restarts_;               // the job-wide restarts used, as far as known
  bool running_ = false;                 // ... and still run (no Join since)
  std::optional<int> join_;              // the agent's Join, not answered by a round yet
  bool watching_ = false;                // the agent's Watch, no Join since (an observer)
  std::string standby_;                  // the agent's SetStandBy, for every inner rendezvous
  bool failing_over_ = false;
  bool rejoining_ = false;               // last_round_ is a record, not a round this agent ran
  std::set<int> excluded_;               // successors lost or found unreachable
  MonoClock::time_point failover_deadline_{};
  int fruitless_walks_ = 0;              // walks in a row that found no host
  Timer walk_timer_;                     // the pause before the next walk
  std::optional<MonoClock::time_point> host_lost_at_;  // the loss being failed over (the event record)
  bool shut_down_ = false;
  Timer probe_timer_;                           // while hosting: look for a newer host
  std::unique_ptr<RendezvousClient> probe_;     // the probe under way
  std::string probe_text_;
  int next_probe_ = 0;                          // successor rank to probe next
  // What runs from the loop rather than inside the inner rendezvous' callbacks
  // (retiring it, the next successor): dropped if this is destroyed first.
  Posted posted_;
};

}  // namespace elastic
