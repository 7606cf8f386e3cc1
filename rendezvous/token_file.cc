#include "rendezvous/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace elastic {

bool ReadTokenFile(const std::string& path, std::string* token, std::string* err) {
  auto fail = [&](std::string why) {
    if (err) *err = fmt::format("token_file '{}': {}", path, why);
    return false;
  };
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fail(std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("not a regular file");
  if (st.st_uid != geteuid())
    return fail(fmt::format("owned by uid {}, not by this user (uid {})", st.st_uid, geteuid()));
  if ((st.st_mode & (S_IRGRP | S_IROTH | S_IWGRP | S_IWOTH)) != 0)
    return fail(fmt::format("mode {:04o} lets others read or change the token: chmod 600 {}",
                            st.st_mode & 07777, path));
  if (st.st_size > static_cast<off_t>(kMaxTokenFileBytes))
    return fail(fmt::format("{} bytes, more than {} for a token", st.st_size, kMaxTokenFileBytes));
  std::string text(kMaxTokenFileBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxTokenFileBytes) return fail(fmt::format("more than {} bytes for a token", kMaxTokenFileBytes));
  text.resize(got);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t'))
    text.pop_back();
  if (text.empty()) return fail("empty (no token in it)");
  *token = std::move(text);
  return true;
}

}  // namespace elastic
