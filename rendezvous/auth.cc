#include "rendezvous/auth.h"

#include <dlfcn.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#ifdef ELASTIC_HAVE_MUNGE
#include <munge.h>
#endif

namespace elastic {
namespace {

std::string Hex(const unsigned char* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(digits[data[i] >> 4]);
    out.push_back(digits[data[i] & 15]);
  }
  return out;
}

}  // namespace

const char* AuthMethodName(AuthMethod method) {
  switch (method) {
    case AuthMethod::kNone: return "none";
    case AuthMethod::kToken: return "token";
    case AuthMethod::kMunge: return "munge";
  }
  return "?";
}

bool ParseAuthMethod(const std::string& text, AuthMethod* out) {
  for (AuthMethod m : {AuthMethod::kNone, AuthMethod::kToken, AuthMethod::kMunge})
    if (text == AuthMethodName(m)) return *out = m, true;
  return false;
}

std::string MakeNonce() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
    else if (errno != EINTR) std::abort();  // no entropy source: nothing safe to do
  }
  return Hex(bytes, sizeof(bytes));
}

std::string AuthTranscript(AuthDirection direction, const Handshake& h) {
  bool down = direction == AuthDirection::kHostToAgent;
  std::string node_id = down ? fmt::format("node_id={}\n", h.node_id) : "";
  return fmt::format("slurm-elastic rendezvous v4\ndirection={}\nhost_nonce={}\nagent_nonce={}\n"
                     "auth={}\nround={}\nlast_completed={}\nname={}\npid={}\npreferred_rank={}\n"
                     "listen_port={}\nregime={}\n{}run_id={}",
                     down ? "host->agent" : "agent->host", h.host_nonce, h.agent_nonce, h.auth,
                     h.round, h.last_completed, h.name, h.pid, h.preferred_rank, h.listen_port,
                     h.regime, node_id, h.run_id) +
         (h.guest ? "\nguest=1" : "") + (h.observer ? "\nobserver=munge" : "");
}

bool SessionKey(const std::string& token, AuthDirection direction, const Handshake& h,
                std::string* key, std::string* err) {
  return HmacSha256Hex(token, "session\n" + AuthTranscript(direction, h), key, err);
}

namespace {

// libcrypto is opened on first use, not linked: mapping and relocating it took
// ~4 ms of every elasticrun start, and only token authentication needs it.
struct Crypto {
  decltype(&HMAC) hmac = nullptr;
  decltype(&EVP_sha256) sha256 = nullptr;
  std::string error;
};

const Crypto& LoadCrypto() {
  static const Crypto crypto = [] {
    Crypto c;
    void* lib = dlopen(ELASTIC_LIBCRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      c.error = fmt::format("cannot load {} for token authentication: {}", ELASTIC_LIBCRYPTO_SONAME, dlerror());
      return c;
    }
    c.hmac = reinterpret_cast<decltype(&HMAC)>(dlsym(lib, "HMAC"));
    c.sha256 = reinterpret_cast<decltype(&EVP_sha256)>(dlsym(lib, "EVP_sha256"));
    if (c.hmac == nullptr || c.sha256 == nullptr) c.error = fmt::format("{} lacks HMAC or EVP_sha256", ELASTIC_LIBCRYPTO_SONAME);
    return c;
  }();
  return crypto;
}

}  // namespace

bool HmacSha256Hex(const std::string& key, const std::string& data, std::string* out, std::string* err) {
  const Crypto& crypto = LoadCrypto();
  if (!crypto.error.empty()) {
    if (err) *err = crypto.error;
    return false;
  }
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (crypto.hmac(crypto.sha256(), key.data(), static_cast<int>(key.size()),
                  reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &len) == nullptr) {
    if (err) *err = "HMAC-SHA256 failed";
    return false;
  }
  *out = Hex(mac, len);
  return true;
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

#ifdef ELASTIC_HAVE_MUNGE
namespace {

struct MungeCtx {
  munge_ctx_t ctx = munge_ctx_create();
  ~MungeCtx() { munge_ctx_destroy(ctx); }
  bool Init(const std::string& socket, std::string* err) {
    if (!ctx) return (err && (*err = "munge_ctx_create failed", true)), false;
    if (!socket.empty() && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket.c_str()) != EMUNGE_SUCCESS) {
      if (err) *err = fmt::format("munge socket '{}': {}", socket, munge_ctx_strerror(ctx));
      return false;
    }
    return true;
  }
};

}  // namespace

bool MungeEncode(const std::string& socket, const std::string& payload, std::string* cred,
                 std::string* err) {
  MungeCtx m;
  if (!m.Init(socket, err)) return false;
  char* out = nullptr;
  munge_err_t rc = munge_encode(&out, m.ctx, payload.data(), static_cast<int>(payload.size()));
  if (rc != EMUNGE_SUCCESS) {
    if (err) *err = fmt::format("munge_encode: {}", munge_strerror(rc));
    std::free(out);
    return false;
  }
  *cred = out;
  std::free(out);
  return true;
}

bool MungeVerify(const std::string& socket, const std::string& cred, const std::string& payload,
                 std::string* err) {
  MungeCtx m;
  if (!m.Init(socket, err)) return false;
  void* data = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  munge_err_t rc = munge_decode(cred.c_str(), m.ctx, &data, &len, &uid, &gid);
  std::string got = data ? std::string(static_cast<char*>(data), static_cast<size_t>(len)) : "";
  std::free(data);
  if (rc != EMUNGE_SUCCESS) {
    if (err) *err = fmt::format("munge credential refused: {}", munge_strerror(rc));
    return false;
  }
  if (uid != geteuid()) {
    if (err) *err = fmt::format("munge credential of uid {}, not the job's uid {}", uid, geteuid());
    return false;
  }
  if (!ConstantTimeEquals(got, payload)) {
    if (err) *err = "munge credential is for another transcript (not this connection)";
    return false;
  }
  return true;
}

bool MungeAvailable(const std::string& socket, std::string* err) {
  std::string cred;
  return MungeEncode(socket, "probe", &cred, err);
}
#else
bool MungeEncode(const std::string&, const std::string&, std::string*, std::string* err) {
  if (err) *err = "built without munge support";
  return false;
}
bool MungeVerify(const std::string&, const std::string&, const std::string&, std::string* err) {
  if (err) *err = "built without munge support";
  return false;
}
bool MungeAvailable(const std::string&, std::string* err) {
  if (err) *err = "built without munge support";
  return false;
}
#endif

bool MakeProof(AuthMethod method, const std::string& token, const std::string& munge_socket,
               const std::string& challenge, std::string* proof, std::string* err) {
  switch (method) {
    case AuthMethod::kNone:
      proof->clear();
      return true;
    case AuthMethod::kToken:
      if (token.empty()) {
        if (err) *err = "the rendezvous host requires a token: set --rdzv-conf token_file=PATH, "
                        "ELASTIC_RDZV_TOKEN_FILE or ELASTIC_RDZV_TOKEN to the host's value";
        return false;
      }
      return HmacSha256Hex(token, challenge, proof, err);
    case AuthMethod::kMunge:
      return MungeEncode(munge_socket, challenge, proof, err);
  }
  return false;
}

bool VerifyProof(AuthMethod method, const std::string& token, const std::string& munge_socket,
                 const std::string& challenge, const std::string& proof, std::string* err) {
  switch (method) {
    case AuthMethod::kNone:
      return true;
    case AuthMethod::kToken: {
      std::string expected;
      if (!HmacSha256Hex(token, challenge, &expected, err)) return false;
      if (ConstantTimeEquals(expected, proof)) return true;
      if (err) *err = "wrong token";
      return false;
    }
    case AuthMethod::kMunge:
      return MungeVerify(munge_socket, proof, challenge, err);
  }
  return false;
}

}  // namespace elastic
