// The rendezvous token read from a file, so that it never has to be on a
// command line (readable by every local user in /proc/PID/cmdline).
#pragma once

#include <cstddef>
#include <string>

namespace elastic {

// The token kept in a file (--rdzv-conf token_file=PATH, ELASTIC_RDZV_TOKEN_FILE):
// a command line is readable by every local user (/proc/PID/cmdline), a file
// need not be. Refuses a file that is not regular, not owned by this user, or
// readable by its group or others ("chmod 600 PATH"), over 4 KiB, or empty; one
// trailing newline (and whitespace) is not part of the token.
inline constexpr size_t kMaxTokenFileBytes = 4096;
bool ReadTokenFile(const std::string& path, std::string* token, std::string* err);

inline constexpr const char* kTokenFileEnv = "ELASTIC_RDZV_TOKEN_FILE";

// The per-step token the SPANK plugin hands the task (token_key=PATH in
// plugstack.conf; spank_plugin/step_token.h): a sealed memfd named by
// ELASTIC_RDZV_TOKEN_FILE=/proc/self/fd/N. HandedTokenFd: N (> 2) for such a
// value, else -1 (a path of a file, read by ReadTokenFile).
int HandedTokenFd(const std::string& path);
// Reads the token from `fd` with ReadTokenFile's checks (regular, this user's,
// no group or other bits, at most 4 KiB) and closes `fd`, whatever the outcome.
bool AdoptTokenFd(int fd, std::string* token, std::string* err);

// elasticrun's first step (main, before the guardian forks): when
// ELASTIC_RDZV_TOKEN_FILE names one of this process's descriptors, adopts the
// token from it, closes it and unsets the variable, so that no worker or side
// program inherits either. handed: the variable named a descriptor (error: why
// it could not be read; the run must not go on without the token).
struct HandedToken {
  bool handed = false;
  std::string token;
  std::string error;
};
HandedToken AdoptHandedToken();

}  // namespace elastic
