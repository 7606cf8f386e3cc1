// A worker whose FileTimerClient deadline passed (launcher/file_timer_server.h):
// the agent first collects its Python stacks, then fails it like any other
// failed worker. Workers run with PYTHONFAULTHANDLER=1 unless the user set it
// (worker_env.h), so SIGABRT makes the interpreter print the traceback of every
// thread to stderr, even when it is stuck in C code (a collective, a lock),
// before it dies of SIGABRT. The agent captures that stderr (WorkerOutput),
// writes the stacks to LOG_DIR/attempt_N/LOCAL_RANK/stacks.log and puts them in
// the failure summary. A worker still alive AgentSettings::stack_dump_grace_ms
// (5 s) after SIGABRT (it handles or ignores SIGABRT) gets the signal its timer
// asked for.
//
// The pure helpers for that live here; agent.cc does the signalling.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "launcher/file_timer_request.h"

namespace elastic {

constexpr size_t kMaxStackCapture = 64 * 1024;  // bytes of stderr kept after SIGABRT

// The timer whose expiry made a worker hang, and where its stacks went.
struct HangInfo {
  ExpiredTimer timer;
  double overdue_s = 0;      // how late the agent noticed, seconds
  std::string stacks_path;   // LOG_DIR/attempt_N/LOCAL_RANK/stacks.log
  // --native-stacks (native_stacks.h): the tool run first ("" = none), its output
  // file, and what went wrong ("" = it exited 0).
  std::string native_tool;
  std::string native_path;   // LOG_DIR/attempt_N/LOCAL_RANK/native_stacks.log
  std::string native_problem;
};

// The faulthandler dump within what the worker wrote to stderr after SIGABRT:
// from "Fatal Python error" (or the first "Thread 0x"/"Current thread 0x" line)
// to the end. The whole text when neither is there (not a Python worker, or
// faulthandler off): it is still what the worker said last.
std::string ExtractPythonStacks(const std::string& stderr_text);

// The failure message of a hung worker:
//   "hung: FileTimerClient timer 'train.py#17' expired 0.1 s ago (pid 4242); Python stacks
//    collected with SIGABRT: /logs/attempt_0/1/stacks.log; native frames (gdb):
//    /logs/attempt_0/1/native_stacks.log"
// A native tool that failed: "...; native frames: gdb failed (exit code 1): /logs/...".
std::string FormatHangMessage(const HangInfo& hang, bool have_stacks);

// Where a worker's timer file goes: $TORCHELASTIC_TIMER_FILE when the user set
// it, else `private_dir`/watchdog_timer (a fresh 0700 directory of the agent).
std::string TimerFilePath(const std::string& user_path, const std::string& private_dir);

}  // namespace elastic
