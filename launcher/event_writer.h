// EventWriter: the shell of the job's event record (job_events.h). It observes
// the rendezvous host this agent runs (from the start, or after a takeover) and
// appends each event as one line to every file it was given: --events PATH and
// LOG_DIR/events.jsonl under --log-dir.
//
// It never blocks the loop for long: lines wait in a bounded queue (at most
// kMaxQueuedLines; beyond, dropped and counted) and are written from the loop
// one write(2) each, with O_APPEND (a successor appending to the same file on a
// shared filesystem never overwrites), on the loop's next turn: a crash of the
// host loses at most the events of its last step. Each file is bounded
// (max_file_bytes): past it, one warning and no more lines.
//
// It also keeps what `elasticrun status` shows (job_status.h): the host asks it
// for the view (HostObserver::Status), with or without files.
//
// Every agent opens its files at start (any one may become the host), so an
// unwritable path is an error before anything runs, never mid-run.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/unique_fd.h"
#include "launcher/job_events.h"
#include "rendezvous/host_observer.h"

namespace elastic {

class EventWriter : public HostObserver {
 public:
  static constexpr size_t kMaxQueuedLines = 4096;
  static constexpr uint64_t kDefaultMaxFileBytes = 64ull << 20;

  struct File {
    std::string path;
    UniqueFd fd;
    uint64_t bytes = 0;  // written by this agent
    bool full = false;
  };

  // `what`: the option named in errors ("--events"). False with *err naming the path.
  static bool OpenFile(const std::string& path, const std::string& what, File* file, std::string* err);

  // `wall_ms`: the UTC clock (unix milliseconds); tests pass a fake one.
  EventWriter(EventLoop& loop, std::vector<File> files, bool echo_to_console,
              std::function<int64_t()> wall_ms, uint64_t max_file_bytes = kDefaultMaxFileBytes);

  void OnHostStart(const RendezvousSettings& settings, const std::string& run_id,
                   const std::string& node_name, const CarriedRound* carried, TimePoint now) override;
  void OnHostStep(const HostStep& step) override;
  nlohmann::json Status(const RendezvousState& state, NodeId requester) override;  // job_status.h

  uint64_t dropped() const { return dropped_; }
  // Told each event as it is queued (the job's live Comment: comment_updater.h);
  // on the loop, must not block. Empty: none. A host already started: told its start now.
  void SetListener(std::function<void(const JobEvent&)> listener);
  // Writes what is queued now (the posted flush does the same); for the end of the run.
  void Flush();
  // A verdict of this agent on its own node (job_events.h MakeWorkerHung,
  // MakeHealthCheckEvent, MakeRequeueEvent), host or not: into the same files, the
  // same way; the listener (the host's Comment) is not told.
  void Record(const JobEvent& event) { Write(event); }
  // The UTC clock this writer stamps with.
  int64_t NowUnixMillis() const { return wall_ms_(); }

 private:
  void Enqueue(const JobEvent& event);
  void Write(const JobEvent& event);

  EventLoop& loop_;
  std::vector<File> files_;
  bool echo_;
  std::function<int64_t()> wall_ms_;
  uint64_t max_file_bytes_;
  JobEventMemory memory_;
  std::deque<std::string> queue_;
  uint64_t dropped_ = 0;
  Posted posted_;
  std::function<void(const JobEvent&)> listener_;
  std::optional<JobEvent> start_;  // the last host start's event
};

int64_t WallClockMillis();

}  // namespace elastic
