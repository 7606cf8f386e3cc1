#include "spank_plugin/step_token.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#ifndef ELASTIC_LIBCRYPTO_SONAME
#define ELASTIC_LIBCRYPTO_SONAME "libcrypto.so.3"
#endif

namespace elastic::spank {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

bool CheckTokenKey(const std::string& path, const TokenKeyStat& st, std::string* err) {
  auto fail = [&](const std::string& why) {
    *err = fmt::format("plugstack.conf: token_key '{}': {}", path, why);
    return false;
  };
  if (!st.regular) return fail("not a regular file");
  if (st.owner != 0) return fail(fmt::format("owned by uid {}, not by root: chown root {}", st.owner, path));
  if ((st.mode & 077) != 0)
    return fail(fmt::format("mode {:04o} lets others read or change the key: chmod 600 {}",
                            st.mode & 07777, path));
  if (st.size < static_cast<off_t>(kTokenKeyMinBytes) || st.size > static_cast<off_t>(kTokenKeyMaxBytes))
    return fail(fmt::format("{} bytes; a key has {} to {} (head -c 64 /dev/urandom > {})", st.size,
                            kTokenKeyMinBytes, kTokenKeyMaxBytes, path));
  return true;
}

bool ReadTokenKey(const std::string& path, std::string* key, std::string* err) {
  if (path.empty() || path.front() != '/') {
    *err = fmt::format("plugstack.conf: token_key '{}': not an absolute path", path);
    return false;
  }
  Fd f{open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK)};
  if (f.fd < 0) {
    *err = fmt::format("plugstack.conf: token_key '{}': {}", path, std::strerror(errno));
    return false;
  }
  struct stat st {};
  if (fstat(f.fd, &st) != 0) {
    *err = fmt::format("plugstack.conf: token_key '{}': {}", path, std::strerror(errno));
    return false;
  }
  if (!CheckTokenKey(path, {S_ISREG(st.st_mode), st.st_uid, st.st_mode & 07777, st.st_size}, err))
    return false;
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = read(f.fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *err = fmt::format("plugstack.conf: token_key '{}': {}", path,
                         n < 0 ? std::strerror(errno) : "shorter than its size (changed while read)");
      return false;
    }
    got += static_cast<size_t>(n);
  }
  *key = std::move(data);
  return true;
}

bool DlopenHmac::Sha256Hex(const std::string& key, const std::string& data, std::string* out,
                           std::string* err) {
  // libcrypto's HMAC() and EVP_sha256(), declared here: the plugin is built
  // without OpenSSL's headers in its link.
  using HmacFn = unsigned char* (*)(const void* md, const void* key, int key_len,
                                    const unsigned char* d, size_t n, unsigned char* out,
                                    unsigned int* out_len);
  using Sha256Fn = const void* (*)();
  void* lib = dlopen(ELASTIC_LIBCRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    *err = fmt::format("cannot load {} for the per-step token (install OpenSSL's libcrypto on "
                       "this node): {}", ELASTIC_LIBCRYPTO_SONAME, why ? why : "?");
    return false;
  }
  auto hmac = reinterpret_cast<HmacFn>(dlsym(lib, "HMAC"));
  auto sha256 = reinterpret_cast<Sha256Fn>(dlsym(lib, "EVP_sha256"));
  unsigned char mac[64];
  unsigned int len = 0;
  bool ok = hmac != nullptr && sha256 != nullptr &&
            hmac(sha256(), key.data(), static_cast<int>(key.size()),
                 reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &len) != nullptr &&
            len == 32;
  dlclose(lib);
  if (!ok) {
    *err = fmt::format("{}: HMAC-SHA256 failed", ELASTIC_LIBCRYPTO_SONAME);
    return false;
  }
  static const char* digits = "0123456789abcdef";
  out->clear();
  for (unsigned i = 0; i < len; ++i) {
    out->push_back(digits[mac[i] >> 4]);
    out->push_back(digits[mac[i] & 15]);
  }
  return true;
}

std::string StepTokenMessage(uint32_t uid, const std::string& run_id) {
  return fmt::format("slurm-elastic rendezvous token v1\nuid={}\nrun_id={}", uid, run_id);
}

bool DeriveStepToken(Hmac& hmac, const std::string& key, uint32_t uid, const std::string& run_id,
                     std::string* token, std::string* err) {
  return hmac.Sha256Hex(key, StepTokenMessage(uid, run_id), token, err);
}

int MakeSealedMemfd(const char* name, const std::string& content, std::string* err) {
  // Not MFD_CLOEXEC: the task's exec keeps it; the task's own program (elasticrun)
  // closes it once read.
  int fd = memfd_create(name, MFD_ALLOW_SEALING);
  if (fd < 0) {
    *err = fmt::format("memfd_create: {}", std::strerror(errno));
    return -1;
  }
  const char* what = nullptr;
  size_t done = 0;
  while (what == nullptr && done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) what = "write";
    else done += static_cast<size_t>(n);
  }
  if (what == nullptr && fchmod(fd, 0600) != 0) what = "fchmod";
  if (what == nullptr &&
      fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    what = "sealing";
  if (what != nullptr) {
    *err = fmt::format("the token's memfd: {}: {}", what, std::strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace elastic::spank
