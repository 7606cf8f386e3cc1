// Mutual authentication of rendezvous joins. Both sides contribute a fresh random
// nonce (host: in the challenge, agent: in the hello), and each proves itself over
// a transcript binding both nonces, the run id and the direction, so nothing on
// the wire can be replayed, and a proof one side made cannot serve as the other's.
//   munge: each side munge-encodes its transcript; the other decodes it with its own
//          munged and requires the same uid as its own (same user, same munge key:
//          a node of this cluster). Nothing to distribute.
//   token: each side sends HMAC-SHA256(token, transcript); the token is shared out
//          of band (--rdzv-conf token=... or ELASTIC_RDZV_TOKEN).
//   none:  only for standalone/loopback runs or when neither is available (warned).
//          An agent that holds a token or has munge never accepts it (downgrade).
// See docs/security.md, "Rendezvous authentication", for the threat model.
// It protects the rendezvous (who may join, get ranks, push failures); it does not
// encrypt traffic and the workers' TCPStore stays PyTorch's unauthenticated protocol,
// limited to the addresses of the round's nodes.
#pragma once

#include <cstdint>
#include <string>

namespace elastic {

enum class AuthMethod { kNone, kToken, kMunge };

const char* AuthMethodName(AuthMethod method);
bool ParseAuthMethod(const std::string& text, AuthMethod* out);

std::string MakeNonce();  // 32 random bytes, hex
enum class AuthDirection { kAgentToHost, kHostToAgent };

// Every field of the handshake that either side acts on (protocol 4): the
// challenge's (host nonce, auth method, round, last completed round, run id), the
// hello's (agent nonce, name, pid, preferred rank, failover port) and, from the
// host, the welcome's node id. Each side fills it from what it sent and what it
// received, so a field a man in the middle rewrote makes the proofs disagree and
// the handshake fail (protocol 3 covered the nonces and the run id only: a relay
// could swap the hello's rank preference and failover port).
struct Handshake {
  std::string host_nonce;
  std::string agent_nonce;
  std::string auth;
  uint64_t round = 0;
  int64_t last_completed = -1;
  std::string regime;  // the challenge's (RoundInfo::regime)
  std::string run_id;
  std::string name;
  int64_t pid = 0;
  int preferred_rank = -1;
  int listen_port = 0;
  bool guest = false;    // of a joined job (--elastic-join); in the transcript only when set
  // `elasticrun status` asking a host in token mode without the token: both proofs are
  // munge's (same uid), and the host answers status only. In the transcript only when set.
  bool observer = false;
  int64_t node_id = -1;  // the welcome's; covered by the host's proof only (the agent's comes first)
};

// What a proof covers: "slurm-elastic rendezvous v4", the direction, then every
// field of `h` one per line in a fixed order (names and run ids are printable
// ASCII without newlines, messages.cc), the run id last.
std::string AuthTranscript(AuthDirection direction, const Handshake& h);

// The key that authenticates the frames one direction sends after the
// handshake (RendezvousConnection::AuthenticateFrames): HMAC-SHA256 under the
// token of "session" and that direction's transcript, so each connection and
// each direction has its own. Token mode only: munge and none share no secret.
bool SessionKey(const std::string& token, AuthDirection direction, const Handshake& h,
                std::string* key, std::string* err);

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

// Proof for `method` over a transcript; the other side verifies it.
bool MakeProof(AuthMethod method, const std::string& token, const std::string& munge_socket,
               const std::string& challenge, std::string* proof, std::string* err);
bool VerifyProof(AuthMethod method, const std::string& token, const std::string& munge_socket,
                 const std::string& challenge, const std::string& proof, std::string* err);

}  // namespace elastic
