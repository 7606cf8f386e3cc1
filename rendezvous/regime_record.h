// Regime records: what a restarted agent knows of its run's current regime
// (docs/design.md "Failover", "A restarted node rejoins the regime").
//
// Why: after a failover the run's host is no longer at the endpoint. An agent
// restarted on the endpoint's node with its own command line (docs/user.md)
// found the endpoint's port free, hosted a fresh round 0 without any quorum, and
// a second restarted agent joined it: two groups of one run trained at once.
// So every agent records, at each round it takes part in, the round's number and
// successors in a node-local file (one per agent, in state_dir). A new agent of
// the same run and endpoint reads the latest record before it hosts or joins
// the endpoint: while any successor of that round still listens, it walks them
// as a latecomer (FailoverRendezvous::Rejoin) and joins only a host that has
// completed that round or a later one (a fresh host has completed none). Only
// when every successor refuses the connection (the regime is gone) does it
// start as before.
//
// The record is a host `waiting {standby}` message (messages.h): one parser,
// the one the protocol already uses and fuzzes.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rendezvous/rendezvous_handler.h"

namespace elastic {

// The file name stem shared by every agent of one run (run id) and endpoint.
std::string RegimeKey(std::string_view run_id, std::string_view endpoint);

// The record of `round` (its number, successors, spares, restarts used).
std::string EncodeRegimeRecord(const RoundInfo& round);
// false with *err naming what is wrong; *out has group_rank -1 (not a member now).
bool DecodeRegimeRecord(std::string_view text, RoundInfo* out, std::string* err);
// The latest (highest round) of the records that decode; nullopt if none does.
std::optional<RoundInfo> LatestRegime(const std::vector<std::string>& records);

// ---- the shell: files and sockets ----

// The directory of the records: `setting` if not empty, else $XDG_RUNTIME_DIR/slurm-elastic
// where that directory exists and is ours, else /tmp/slurm-elastic-UID. Created mode 0700; refused (empty, *err says why) unless it is
// a directory of ours that nobody else may write (another user could forge a regime).
std::string RegimeDir(const std::string& setting, std::string* err);
// Writes this agent's record (DIR/KEY.PID) atomically (a temporary file renamed over it).
bool WriteRegimeRecord(const std::string& path, const RoundInfo& round, std::string* err);
std::string RegimeRecordPath(const std::string& dir, const std::string& key);
// Every record of `key` in `dir` (any agent's), as text.
std::vector<std::string> ReadRegimeRecords(const std::string& dir, const std::string& key);
// True when some successor of `round` accepts a TCP connection, or has not answered
// within `timeout` (it may be alive behind a partition): the regime may still run.
// False when every one refused or is unreachable. Blocks up to `timeout`: call it
// before the event loop runs.
bool AnySuccessorListening(const RoundInfo& round, std::chrono::milliseconds timeout);

}  // namespace elastic
