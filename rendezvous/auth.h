// Authentication of rendezvous joins: challenge-response against a fresh random
// nonce the host sends on every connection, so nothing on the wire can be replayed.
//   munge: the agent munge-encodes the challenge; the host decodes it with its own
//          munged and requires the same uid as its own (same user, same munge key:
//          a node of this cluster). Nothing to distribute.
//   token: the agent sends HMAC-SHA256(token, challenge); the token is shared out of
//          band (--rdzv-conf token=... or ELASTIC_RDZV_TOKEN).
//   none:  only for standalone/loopback runs or when neither is available (warned).
// It protects the rendezvous (who may join, get ranks, push failures); it does not
// encrypt traffic and the workers' TCPStore stays PyTorch's unauthenticated protocol,
// limited to the addresses of the round's nodes.
#pragma once

#include <string>

namespace elastic {

enum class AuthMethod { kNone, kToken, kMunge };

const char* AuthMethodName(AuthMethod method);
bool ParseAuthMethod(const std::string& text, AuthMethod* out);

std::string MakeNonce();  // 32 random bytes, hex
std::string ChallengeText(const std::string& nonce, const std::string& run_id);

// HMAC-SHA256 of data under key, as hex; false with *err when libcrypto cannot be loaded.
bool HmacSha256Hex(const std::string& key, const std::string& data, std::string* out, std::string* err);
bool ConstantTimeEquals(const std::string& a, const std::string& b);

// munge; all false with *err when munge support is not built in or munged is unreachable.
bool MungeAvailable(const std::string& socket, std::string* err);
bool MungeEncode(const std::string& socket, const std::string& payload, std::string* cred,
                 std::string* err);
// Checks the credential carries `payload` and was made by our own uid.
bool MungeVerify(const std::string& socket, const std::string& cred, const std::string& payload,
                 std::string* err);

// Proof for `method` over the challenge; verify on the host.
bool MakeProof(AuthMethod method, const std::string& token, const std::string& munge_socket,
               const std::string& challenge, std::string* proof, std::string* err);
bool VerifyProof(AuthMethod method, const std::string& token, const std::string& munge_socket,
                 const std::string& challenge, const std::string& proof, std::string* err);

}  // namespace elastic
