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
// Run ids repeat (a fresh cluster, a Slurm reset, a user's fixed --rdzv-id): a record
// of an earlier run with the same id made a new run's agent walk the old run's
// nodes, where the new run's agents now listened, and wait there for a host that
// had completed the old round (issue 19). So a record names its regime
// (RoundInfo::regime: a nonce the run's first host drew, carried over every
// takeover), every host names its regime in its challenge, and a successor
// counts as the recorded regime's only when it names the same one. A regime none
// of whose successors is its own is gone: its records are deleted (expired).
//
// The record is a host `waiting {standby}` message (messages.h): one parser,
// the one the protocol already uses and fuzzes.
#pragma once

#include <chrono>
#include <functional>
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

// What a recorded successor's address answered (the pure part of RegimeMayRun).
enum class SuccessorAnswer {
  kRefused,      // nothing listens, or it closed without a word: not there
  kSilent,       // accepted but said nothing in time, or no answer at all: an agent's
                 // takeover listener, or a host behind a partition (may be the regime's)
  kOurs,         // a host of the recorded run id and regime (or one that names none)
  kOther,        // a host of another run id or regime, or not our protocol: not ours
};
// Classifies the first frame a successor sent (a host's challenge) against the record.
SuccessorAnswer ClassifyChallenge(std::string_view payload, const RoundInfo& record,
                                  std::string_view run_id);
// The regime may still run while any successor is its own or silent.
bool RegimeMayRun(const std::vector<SuccessorAnswer>& answers);

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
// Deletes the records of `key` that belong to `regime` (a regime found gone).
void ExpireRegimeRecords(const std::string& dir, const std::string& key, const RoundInfo& regime);
// What a host's address said first, read by ReadFirstFrames.
struct FirstFrame {
  // kSilent: connected, no frame in time; kNoAnswer: the connection itself was not
  // answered in time (a node behind a partition, or a first contact still resolving
  // the neighbour on a loaded machine).
  enum Status { kRefused, kSilent, kNoAnswer, kBadFrame, kFrame } status = kSilent;
  std::string payload;  // kFrame: the first frame's payload (a host's challenge)
};
// Whether the frames read so far decide the question (nullptr: that host has not
// answered yet), so that the ask ends before its timeout.
using FramesDecide = std::function<bool(const std::vector<const FirstFrame*>& answered)>;
// Connects to every one of `hosts` (numeric addresses; port 0 or a bad address: refused)
// at once and reads its first frame, for at most `timeout` in all, or until `decide`
// (when given) says the answers so far are enough. Blocks: call it before the event
// loop runs.
std::vector<FirstFrame> ReadFirstFrames(const std::vector<Successor>& hosts,
                                        std::chrono::milliseconds timeout,
                                        const FramesDecide& decide = nullptr);
// Asks every successor of `round` (connects, reads the challenge a host sends at
// once) and classifies its answer. Blocks up to `timeout`: call it before the
// event loop runs.
std::vector<SuccessorAnswer> AskSuccessors(const RoundInfo& round, std::string_view run_id,
                                           std::chrono::milliseconds timeout);

}  // namespace elastic
