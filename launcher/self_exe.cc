#include "launcher/self_exe.h"

#include <unistd.h>

#include <filesystem>

#include "common/parse.h"

namespace elastic {
namespace {

constexpr char kSelfFd[] = "/proc/self/fd/";

std::string& ProgramArgv0() {
  static std::string argv0;
  return argv0;
}

}  // namespace

int BundleFdOfArgv0(const std::string& argv0) {
  if (!argv0.starts_with(kSelfFd)) return -1;
  std::string rest = argv0.substr(sizeof(kSelfFd) - 1);
  size_t slash = rest.find('/');
  long long fd = -1;
  if (slash == std::string::npos || !ParseInt(rest.substr(0, slash), 0, 1 << 30, &fd)) return -1;
  return static_cast<int>(fd);
}

std::string SelfExePath(const std::string& proc_self_exe, const std::string& argv0, int pid) {
  std::string name = proc_self_exe.substr(proc_self_exe.rfind('/') + 1);
  if (!name.starts_with("ld-linux") || argv0.find('/') == std::string::npos) return proc_self_exe;
  if (BundleFdOfArgv0(argv0) >= 0) {
    return "/proc/" + std::to_string(pid) + "/" + argv0.substr(sizeof("/proc/self/") - 1);
  }
  return argv0;
}

void SetProgramArgv0(const std::string& argv0) { ProgramArgv0() = argv0; }

std::string AgentExePath() {
  std::error_code ec;
  return SelfExePath(std::filesystem::read_symlink("/proc/self/exe", ec).string(), ProgramArgv0(),
                     static_cast<int>(::getpid()));
}

}  // namespace elastic
