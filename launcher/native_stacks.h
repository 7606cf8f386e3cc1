// The native frames of a hung worker (hung_worker.h): before the agent sends
// SIGABRT for the Python stacks, a native stack tool dumps every thread's C/C++
// frames (a collective inside NCCL, a lock in a library), which faulthandler
// cannot show. --native-stacks chooses it: auto (py-spy if on PATH, else gdb,
// else none), py-spy, gdb or off. The tool is looked up on PATH once, when the
// agent starts serving FileTimerClient (agent_file_timer.cc), and run through
// HealthCheck (health_check.h): `/bin/sh -c 'exec /abs/path/of/tool ARGS'`,
// so the shell looks nothing up; its own process group, a timeout
// (--native-stacks-timeout), then SIGKILL of that group; output appended to
// LOG_DIR/attempt_N/LOCAL_RANK/native_stacks.log.
//
// Both tools stop the worker with ptrace while they read it and detach when
// done; a tracer killed by SIGKILL is detached by the kernel, but its tracee
// can be left stopped (the SIGSTOP of PTRACE_ATTACH becomes a group stop).
// The agent therefore sends SIGCONT before SIGABRT, and the normal stop of the
// group (SIGTERM, then SIGKILL) follows in any case.
//
// The pure parts live here: the option's parser, the choice of the tool and
// its command line.
#pragma once

#include <sys/types.h>

#include <string>

namespace elastic {

enum class NativeStacksMode { kAuto, kPySpy, kGdb, kOff };

// "auto", "py-spy", "gdb", "off". False with *err naming `what` and the value.
bool ParseNativeStacksMode(const std::string& what, const std::string& text, NativeStacksMode* out,
                           std::string* err);
const char* NativeStacksModeName(NativeStacksMode mode);

struct NativeStackTool {
  std::string name;  // "py-spy" or "gdb"; "" = none
  std::string path;  // absolute path of the executable
};

struct NativeToolChoice {
  NativeStackTool tool;  // tool.name "" = no native frames
  std::string warning;   // non-empty: the chosen tool is not on PATH (one line for the log)
};

// Which tool dumps the native frames, from the mode and where each tool is on
// PATH ("" = not found). auto prefers py-spy (it shows Python and native frames
// interleaved) and says nothing when neither is there.
NativeToolChoice ChooseNativeStackTool(NativeStacksMode mode, const std::string& py_spy_path,
                                       const std::string& gdb_path);

// The /bin/sh command that dumps the native frames of `pid`, stdin from /dev/null:
//   py-spy: exec '/usr/bin/py-spy' dump --native --pid PID
//   gdb:    exec '/usr/bin/gdb' -p PID -batch -nx -iex 'set debuginfod enabled off'
//           -ex 'set pagination off' -ex 'thread apply all bt'
std::string NativeStackCommand(const NativeStackTool& tool, pid_t pid);

// `text` in single quotes for /bin/sh ("it's" -> 'it'\''s').
std::string ShellQuote(const std::string& text);

}  // namespace elastic
