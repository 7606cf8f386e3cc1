#include "launcher/interpreter_check.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/unique_fd.h"

extern char** environ;

namespace elastic {
namespace {

constexpr size_t kMaxSource = 256 * 1024;    // imports are at the top

// 1: the interpreter finds torch; 0: it does not; -1: cannot tell.
int PythonFindsTorch(const std::string& python, long long timeout_ms) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = {
      python, "-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  // Its exit, or the deadline: one poll on its pidfd (no sleep between checks).
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  auto deadline = MonoClock::now() + Millis(timeout_ms);
  bool exited = false;
  while (pidfd) {
    long long left = std::chrono::duration_cast<Millis>(deadline - MonoClock::now()).count();
    pollfd fd{pidfd.get(), POLLIN, 0};
    int n = poll(&fd, 1, static_cast<int>(std::clamp(left, 0LL, 3600LL * 1000)));
    if (n < 0 && errno == EINTR) continue;
    exited = n > 0;
    break;
  }
  if (!exited) kill(pid, SIGKILL);  // past the deadline, or no pidfd: not waited for
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (!exited) return -1;
  if (!WIFEXITED(status)) return -1;
  if (WEXITSTATUS(status) == 0) return 1;
  return WEXITSTATUS(status) == 3 ? 0 : -1;
}

}  // namespace

bool SourceImportsTorch(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    // Top level only: an indented import may sit in a try/except ImportError.
    for (std::string_view head : {std::string_view("import "), std::string_view("from ")}) {
      if (!line.starts_with(head)) continue;
      std::string_view rest = line.substr(head.size());
      rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
      if (!rest.starts_with("torch")) continue;
      std::string_view after = rest.substr(5);
      if (after.empty() || after[0] == '.' || after[0] == ' ' || after[0] == ',' || after[0] == '\t' ||
          after[0] == '\r' || after[0] == '#') {
        return true;
      }
    }
  }
  return false;
}

bool CheckInterpreterHasTorch(const std::string& script, const std::string& python, bool by_option,
                              long long timeout_ms, std::string* err) {
  std::ifstream file(script, std::ios::binary);
  if (!file) return true;
  std::string text(kMaxSource, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(file.gcount()));
  if (!SourceImportsTorch(text)) return true;
  int found = PythonFindsTorch(python, timeout_ms);
  if (found < 0) {
    Log(LogLevel::kDebug, "could not ask {} whether it has torch; going on", python);
    return true;
  }
  if (found == 1) return true;
  *err = fmt::format("the interpreter '{}' cannot import torch, which {} imports: every worker would fail; {}", python,
                     script,
                     by_option ? "give an interpreter that has it with --python=PATH (e.g. your venv's bin/python)"
                               : "run the script with a python that has it (e.g. your venv's bin/python; in a "
                                 "container: the image's)");
  return false;
}

}  // namespace elastic
