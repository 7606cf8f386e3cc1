// The per-step rendezvous token (docs/security.md, "The per-step token"): where
// agents have no munge socket (a container), slurmstepd derives a secret for the
// step from a key only root can read (plugstack.conf token_key=PATH) and hands it
// to the step's task alone, as a sealed memfd (ELASTIC_RDZV_TOKEN_FILE=/proc/self/fd/N).
//   token = hex(HMAC-SHA256(key, "slurm-elastic rendezvous token v1\nuid=UID\nrun_id=RUN_ID"))
// Every node of a step (and a step joining it: same user, same run id) derives the
// same token; another user's, or another run's, is different.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace elastic::spank {

inline constexpr size_t kTokenKeyMinBytes = 32;
inline constexpr size_t kTokenKeyMaxBytes = 65536;

// What the plugin checks of the key file (fstat of the open file).
struct TokenKeyStat {
  bool regular = true;
  uid_t owner = 0;
  mode_t mode = 0600;  // permission bits
  off_t size = 64;
};

// The rules as a pure function: a regular file owned by root, no group or other
// bits, kTokenKeyMinBytes..kTokenKeyMaxBytes. The error names the path and what
// to do.
bool CheckTokenKey(const std::string& path, const TokenKeyStat& st, std::string* err);

// Opens (no symlink followed), checks and reads the key. slurmstepd, as root.
bool ReadTokenKey(const std::string& path, std::string* key, std::string* err);

// HMAC-SHA256 behind an interface: the plugin never links libcrypto (srun loads
// the plugin where libcrypto may be absent); DlopenHmac opens it when a token is
// derived, in slurmstepd.
class Hmac {
 public:
  virtual ~Hmac() = default;
  // Lowercase hex of HMAC-SHA256(key, data); false with *err when it cannot be computed.
  virtual bool Sha256Hex(const std::string& key, const std::string& data, std::string* out,
                         std::string* err) = 0;
};

class DlopenHmac : public Hmac {
 public:
  bool Sha256Hex(const std::string& key, const std::string& data, std::string* out,
                 std::string* err) override;
};

// The message the token is the HMAC of.
std::string StepTokenMessage(uint32_t uid, const std::string& run_id);
bool DeriveStepToken(Hmac& hmac, const std::string& key, uint32_t uid, const std::string& run_id,
                     std::string* token, std::string* err);

// A memfd holding `content`, sealed (no write, shrink, grow, or further seals),
// mode 0600, NOT close-on-exec (it is for the exec'd task). The caller owns it.
// -1 with *err on failure.
int MakeSealedMemfd(const char* name, const std::string& content, std::string* err);

// The variable elasticrun reads the token from (rendezvous/token_file.h).
inline constexpr const char* kTokenFileVar = "ELASTIC_RDZV_TOKEN_FILE";

}  // namespace elastic::spank
