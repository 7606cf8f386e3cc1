// RendezvousHandler: what the agent (launcher/) needs from a rendezvous.
// Implemented by the C10d-style host/client rendezvous (c10d_rendezvous.h),
// standalone runs included (the agent hosts a one-node rendezvous). Event-driven:
// it runs on the agent's EventLoop and reports through Callbacks; no call blocks.
//
// Agent life cycle against this interface:
//   Join(n) -> on_round(info) -> start workers with info
//     local worker fails      -> ReportWorkerFailure(f) -> (stop workers) -> Join(n) again
//                                 or on_job_failed(f) when restarts are exhausted
//     on_restart_required(r)  -> stop workers -> Join(n) again
//     local workers succeed   -> ReportSucceeded() -> on_done() -> exit 0
//     a crash loop here       -> EndJob(kCrashLoop, f) -> on_job_failed(f) on every node
//     on_fatal(end, msg)      -> stop workers -> exit non-zero with msg
//   Watch() (kept out, e.g. by its health check) -> on_done / on_job_failed / on_fatal
//     when the job ends without it -> exit; or Join(n) later, once it may take part
// The end callbacks say why the job ended (JobEnd): the agent's exit code and
// whether it asks Slurm to requeue follow from that reason, never from the text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace elastic {

// A member of a completed round as a successor: where its agent listens for the
// rendezvous should it have to take over as host (docs/design.md "Failover").
struct Successor {
  std::string name;  // for messages
  std::string addr;  // as the host saw it: how the other nodes reach this agent
  int port = 0;      // its own rendezvous listening port
};

// One completed rendezvous round, as seen by one node.
struct RoundInfo {
  uint64_t round = 0;          // job-wide round number: TORCHELASTIC_RESTART_COUNT on every node
  int group_rank = 0;          // this node's rank in the round: GROUP_RANK
  int group_world_size = 1;    // nodes in the round: GROUP_WORLD_SIZE
  int rank_offset = 0;         // sum of local world sizes of lower group ranks
  int world_size = 1;          // total workers: WORLD_SIZE
  std::string store_addr;      // MASTER_ADDR for the workers
  int store_port = 0;          // MASTER_PORT for the workers
  bool use_agent_store = false;  // TORCHELASTIC_USE_AGENT_STORE
  int restarts_used = 0;       // failures counted against --max-restarts so far (job-wide)
  // The run's budget: the host's --max-restarts (-1: not said, a host before this field).
  // A joined job's agents (--elastic-join) have a budget of their own that is not the
  // run's; a host lost is judged, and a takeover hosts, by this one (RunRestartBudget).
  int max_restarts = -1;
  // The round's first members in group-rank order, at most failover_successors of
  // them (failover walks them from rank 0): not the whole list, so a round costs
  // each agent the same bytes whatever the number of nodes.
  std::vector<Successor> successors;
  int spares = 0;              // nodes standing by when it completed: voters, as its members
  // The regime's id: a nonce the host of the run's round 0 drew, carried over every
  // takeover. Run ids repeat (a fresh cluster, a Slurm reset); this does not, so a
  // regime record of an earlier run with the same id is told apart (regime_record.h).
  // "": unknown (a host or record without it).
  std::string regime;
};

// The first failure of a worker, as reported in the end-of-run summary.
struct WorkerFailure {
  int global_rank = -1;
  int local_rank = -1;
  std::string host;
  int exit_code = 0;           // valid when signal == 0
  int signal = 0;              // terminating signal, 0 if it exited
  int64_t time_unix_ms = 0;
  std::string message;         // from TORCHELASTIC_ERROR_FILE, if written
  std::string traceback;
  // The job ended because the rendezvous host was lost (restarts exhausted):
  // the node of group rank 0 may be gone, so every survivor tells it.
  bool host_lost = false;
};

// Why the rendezvous ended the job, as the host tells every agent (messages.h:
// "end_reason"). Exit codes: launcher/exit_codes.h.
enum class EndReason {
  kUnknown,       // not told (or a reason this agent does not know)
  kDone,          // every worker succeeded
  kWorkerFailed,  // a worker failed and --max-restarts is used up (or others had finished)
  kNodesLost,     // --max-restarts used up by the loss of a node (or of the host)
  kTooFewNodes,   // fewer than MIN nodes left, or too few came within join_timeout
  kStopped,       // fewer than MIN left because nodes were stopped by a signal (scancel, a time
                  // limit, preemption: Slurm is ending the job, so never requeued)
  kNoMajority,    // no strict majority of the last round came back: others may go on
  kHostLost,      // the rendezvous host is lost and no successor could take over
  kCrashLoop,     // the workers failed soon after their start round after round
  kNoProgress,    // failed rounds in a row made no progress (--progress-file)
  kBadInput,      // a configuration that cannot work (on the wire only: since protocol 4 a
                  // refusal before the welcome is unauthenticated and ends as kHostLost)
  kError,         // another error (out of descriptors, a protocol error)
};
// The wire and log name ("too_few_nodes"), and its parser: false for an unknown name.
const char* EndReasonName(EndReason reason);
bool ParseEndReason(const std::string& name, EndReason* out);

struct JobEnd {
  EndReason reason = EndReason::kUnknown;
  // This node acts for the whole job at its end (it asks Slurm to requeue, once):
  // the host, or after the host's loss the survivor that would have taken over.
  bool acts_for_job = false;
  // The job-wide restarts used at the end, when this side knows better than the
  // last round did (the host's own agent; a survivor of the host's loss); -1: not told.
  int restarts_used = -1;
};

// Why the workers must stop and rejoin: only a worker's failure counts toward a crash
// loop (launcher/crash_loop.h); nodes lost, joining or rejoining (churn) never do.
enum class RestartCause { kMembership, kWorkerFailure };

class RendezvousHandler {
 public:
  struct Callbacks {
    std::function<void(const RoundInfo&)> on_round;             // round complete: start workers
    std::function<void(const std::string& reason, RestartCause cause)>
        on_restart_required;  // membership changed or a peer failed: stop workers, Join again
    std::function<void(const WorkerFailure&, const JobEnd&)> on_job_failed;  // restarts exhausted
                                                                 // anywhere
    std::function<void()> on_done;                              // job finished: safe to exit 0
    std::function<void(const JobEnd&, const std::string& message)> on_fatal;  // lost host, below
                                                                 // min, timeout
  };
  virtual ~RendezvousHandler() = default;

  virtual void SetCallbacks(Callbacks callbacks) = 0;
  // Joins the next round with this node's number of workers.
  virtual void Join(int local_world_size) = 0;
  // Why this node should stand by rather than train ("": it may train), sent with
  // every later Join: Slurm drained it (launcher/slurm_node_state.h). The host puts
  // it on its wait list unless the round needs it to reach MIN; once the reason
  // clears, Join again and a round below MAX grows by it.
  virtual void SetStandBy(std::string reason) = 0;
  // Stays connected to the rendezvous as an observer without joining: never a
  // member, a voter or a participant counted for MIN, expected nodes or the
  // majority, but told the job's end (on_done, on_job_failed, on_fatal) like
  // every agent. Join() later makes it a participant (a latecomer).
  virtual void Watch() = 0;
  // A local worker failed (first failure of this attempt).
  virtual void ReportWorkerFailure(const WorkerFailure& failure) = 0;
  // All local workers of the current round succeeded.
  virtual void ReportSucceeded() = 0;
  // This node ends the job for every node (its workers are in a crash loop): the
  // host tells each, this one included, on_job_failed with `reason`, whatever the
  // restarts left. `failure` is the last one seen here (for the summary).
  virtual void EndJob(EndReason reason, const WorkerFailure& failure, const std::string& message) = 0;
  // Leave: the agent is exiting, because of `signal` (scancel, a time limit, preemption) or,
  // with 0, for a reason of its own (workers it cannot kill, a failing health check). The
  // host hears the signal (a node that falls below MIN through signals ends as kStopped,
  // never requeued). No callbacks after this.
  virtual void Shutdown(int signal) = 0;
  // Human-readable description for logs ("standalone", "c10d host 10.0.0.1:29400 ...").
  virtual std::string Describe() const = 0;
};

}  // namespace elastic
