// Slurm's verdict on this node (issue 19, docs/user.md "Slurm's node state"): a
// node that an admin or a health daemon marks DRAIN, DOWN or FAIL during the job
// stands by at the next round instead of training (the host's spare logic:
// RendezvousHandler::SetStandBy), unless the round needs it to reach MIN.
//
// The agent asks Slurm for its own node (SLURMD_NODENAME) before it joins a round,
// at most once per AgentSettings::node_state_min_interval_ms (the answer is
// reused in between), and, while it stands by for that reason, again every
// AgentSettings::node_state_recheck_ms: once the verdict clears it joins again.
// The question goes through SlurmNodeReader, a child process on the event loop
// with a deadline (the real one runs
// `scontrol --oneliner show node NAME` through scontrol.h). A failed or late
// answer (scontrol or its configuration missing in a container, no munge, the
// controller silent) means "node state unknown": one warning, the node trains as
// before, and Slurm is not asked again in this run, so no later round waits for it.
//
// Pure parts here (parser, verdict, rate limit), tested as tables; the shell is
// ScontrolNodeReader (slurm_node_state.cc) and the agent (agent_resilience.cc).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/event_loop.h"
#include "launcher/scontrol.h"

namespace elastic {

// One node as `scontrol --oneliner show node NAME` prints it (Slurm 22.05 .. 26.05):
// "NodeName=n2 Arch=... State=MIXED+DRAIN ThreadsPerCore=... Reason=test [root@2026-...]".
struct SlurmNodeState {
  std::string name;    // NodeName
  std::string state;   // "MIXED+DRAIN", "DOWN*", "IDLE"
  std::string reason;  // Reason without its " [user@time]" ("" when none)
  std::string addr = {};  // NodeAddr ("" when absent): where Slurm reaches it (status_target.h)
};

// The one parser of that line: false with *err naming what is missing. The state
// and reason are kept as printed; escape them before printing (EscapeForLog).
bool ParseScontrolNode(std::string_view text, SlurmNodeState* out, std::string* err);

// "DRAIN", "DOWN" or "FAIL" when the state keeps the node from training (DOWN
// first, then FAIL, then DRAIN when several hold); "" otherwise. Reads both the
// complete form (MIXED+DRAIN, IDLE+FAIL) and the short one (DRAINING, DRAINED,
// FAILING, DOWN*).
std::string NodeVerdict(const std::string& state);

// The reason given to the host and printed: "n2 is DRAIN in Slurm (reason: test)",
// escaped, the reason cut at 200 bytes; "" when the node may train.
std::string StandByReason(const SlurmNodeState& node);

// The rate limit: ask Slurm now, or reuse the last answer (asked at `last_asked`)
// when younger than `min_interval` (AgentSettings::node_state_min_interval_ms);
// never once `unknown` (a question failed: no later round waits for another).
bool ShouldAskSlurm(bool unknown, std::optional<MonoClock::time_point> last_asked, MonoClock::time_point now,
                    std::chrono::milliseconds min_interval);

// Asks Slurm for one node. done(ok, node, why) is called once, from the loop, never
// from Read itself; `why` says what failed. pid(): the process it runs while it runs
// (-1: none), which its owner must neither reap nor kill with the workers' leftovers
// (the agent reaps and kills orphans: agent.h; it asks while the workers stop).
class SlurmNodeReader {
 public:
  virtual ~SlurmNodeReader() = default;
  virtual void Read(const std::string& node,
                    std::function<void(bool ok, SlurmNodeState node, std::string why)> done) = 0;
  virtual pid_t pid() const = 0;
};

// The real one: `scontrol --oneliner show node NAME` through the one scontrol
// runner (scontrol.h: a deadline, SLURM_CONF checked first); spec.timeout should
// be AgentSettings::node_state_timeout_ms, spec.output_path a private file (its
// stdout).
std::unique_ptr<SlurmNodeReader> MakeScontrolNodeReader(EventLoop& loop, ScontrolSpec spec);

}  // namespace elastic
