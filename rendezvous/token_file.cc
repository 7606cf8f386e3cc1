#include "rendezvous/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace elastic {
namespace {

// The checks and the read, on an open descriptor; pread from offset 0: the
// plugin's memfd is handed with its offset past what it wrote.
bool ReadTokenFromFd(int fd, std::string* token, std::string* fail_why) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return *fail_why = std::strerror(errno), false;
  if (!S_ISREG(st.st_mode)) return *fail_why = "not a regular file", false;
  if (st.st_uid != geteuid())
    return *fail_why = fmt::format("owned by uid {}, not by this user (uid {})", st.st_uid, geteuid()), false;
  if ((st.st_mode & (S_IRGRP | S_IROTH | S_IWGRP | S_IWOTH)) != 0)
    return *fail_why = fmt::format("mode {:04o} lets others read or change the token: chmod 600",
                                   st.st_mode & 07777), false;
  if (st.st_size > static_cast<off_t>(kMaxTokenFileBytes))
    return *fail_why = fmt::format("{} bytes, more than {} for a token", st.st_size, kMaxTokenFileBytes), false;
  std::string text(kMaxTokenFileBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return *fail_why = std::strerror(errno), false;
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxTokenFileBytes) return *fail_why = fmt::format("more than {} bytes for a token", kMaxTokenFileBytes), false;
  text.resize(got);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t'))
    text.pop_back();
  if (text.empty()) return *fail_why = "empty (no token in it)", false;
  *token = std::move(text);
  return true;
}

}  // namespace

bool ReadTokenFile(const std::string& path, std::string* token, std::string* err) {
  std::string why;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  bool ok = fd >= 0 ? ReadTokenFromFd(fd, token, &why) : (why = std::strerror(errno), false);
  if (fd >= 0) close(fd);
  if (!ok && err) {
    // The mode's remedy names the file.
    if (why.ends_with("chmod 600")) why += " " + path;
    *err = fmt::format("token_file '{}': {}", path, why);
  }
  return ok;
}

int HandedTokenFd(const std::string& path) {
  constexpr std::string_view prefix = "/proc/self/fd/";
  if (!path.starts_with(prefix) || path.size() == prefix.size() || path.size() > prefix.size() + 9)
    return -1;
  int fd = 0;
  for (char c : path.substr(prefix.size())) {
    if (c < '0' || c > '9') return -1;
    fd = fd * 10 + (c - '0');
  }
  return fd > 2 ? fd : -1;
}

bool AdoptTokenFd(int fd, std::string* token, std::string* err) {
  std::string why;
  bool ok = ReadTokenFromFd(fd, token, &why);
  close(fd);
  if (!ok && err) *err = fmt::format("ELASTIC_RDZV_TOKEN_FILE /proc/self/fd/{}: {}", fd, why);
  return ok;
}

HandedToken AdoptHandedToken() {
  HandedToken out;
  const char* value = getenv(kTokenFileEnv);
  if (value == nullptr) return out;
  int fd = HandedTokenFd(value);
  if (fd < 0) return out;  // a file path: read where the settings are built
  out.handed = true;
  if (!AdoptTokenFd(fd, &out.token, &out.error)) out.token.clear();
  unsetenv(kTokenFileEnv);  // no worker or side program inherits the name of a closed fd
  return out;
}

}  // namespace elastic
