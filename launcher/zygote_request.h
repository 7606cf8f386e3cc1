// The agent <-> zygote protocol (launcher/python/zygote.py; docs/elasticrun.md,
// "Preloading"): frames over a unix stream socket pair the agent made.
//
// Frame: a 4-byte little-endian payload length (at most kMaxZygoteFrame), then the
// payload: NUL-terminated fields, the first the message kind, then key, value
// pairs (a key may repeat: "arg", "env"). Argument and environment strings are
// C strings, so NUL separation loses nothing.
//
// agent -> zygote   "spawn": one worker; its stdout and stderr travel with the
//                   frame's first byte (SCM_RIGHTS, that order).
// zygote -> agent   "ready" (modules imported, no thread, CUDA untouched),
//                   "unfit" (with "reason": the agent falls back to normal starts),
//                   "spawned" (with "pid": the worker, already the agent's child, in
//                   its own process group), "error" (with "reason").
//
// The agent encodes requests and parses replies here, once; the zygote parses
// requests (zygote.py, _parse_request) and encodes replies.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace elastic {

constexpr size_t kMaxZygoteFrame = 8 << 20;  // ARG_MAX-sized environments fit

// What a worker forked from the zygote runs and gets: exactly what a normal start
// (child_process.h) gives it, in data rather than in system calls.
struct SpawnRequest {
  bool module = false;                   // -m: `target` is a module name
  std::string target;                    // the script path or the module
  std::vector<std::string> args;         // sys.argv[1:]
  std::vector<std::string> env;          // KEY=VALUE, the whole environment
  std::string cwd;
  pid_t agent = 0;                       // the parent the worker must end up with
  std::vector<int> default_signals;      // dispositions reset to SIG_DFL
  // The worker's binding (hwloc_binding/binding.h, KernelBinding): words of the CPU
  // mask (empty: unbound) and the memory policy (-1: left alone).
  std::vector<unsigned long> cpu_mask;
  int mem_mode = -1;
  std::vector<unsigned long> mem_nodes;
  int fallback_mode = -1;
  std::vector<unsigned long> fallback_nodes;
  unsigned long maxnode = 0;
};

enum class ZygoteReplyKind { kReady, kUnfit, kSpawned, kError };

struct ZygoteReply {
  ZygoteReplyKind kind = ZygoteReplyKind::kError;
  pid_t pid = 0;           // kReady: the zygote's; kSpawned: the worker's
  std::string reason;      // kUnfit, kError
  std::string modules;     // kReady: what was imported
};

// The payload of a "spawn" request (no length prefix).
std::string EncodeSpawnRequest(const SpawnRequest& request);

// The 4-byte length prefix of a payload of `size` bytes.
std::string FrameHeader(size_t size);

// The payload length in a 4-byte header; false (with *err) above kMaxZygoteFrame.
bool ParseFrameHeader(std::string_view header, size_t* size, std::string* err);

// Parses one reply payload; false with *err naming what is wrong.
bool ParseZygoteReply(std::string_view payload, ZygoteReply* reply, std::string* err);

}  // namespace elastic
