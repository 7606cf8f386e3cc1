#include "rendezvous/auth.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

Handshake Fields(std::string host_nonce = MakeNonce(), std::string agent_nonce = MakeNonce(),
                 std::string run_id = "job1") {
  Handshake h;
  h.host_nonce = std::move(host_nonce);
  h.agent_nonce = std::move(agent_nonce);
  h.run_id = std::move(run_id);
  h.auth = "token";
  h.round = 3;
  h.last_completed = 2;
  h.name = "n1";
  h.pid = 4242;
  h.preferred_rank = 1;
  h.listen_port = 29401;
  h.node_id = 7;
  return h;
}

TEST(AuthTest, NoncesAreFreshAndLong) {
  std::string a = MakeNonce(), b = MakeNonce();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
}

TEST(AuthTest, HmacSha256MatchesRfc4231TestCase2) {
  std::string mac, err;
  ASSERT_TRUE(HmacSha256Hex("Jefe", "what do ya want for nothing?", &mac, &err)) << err;
  EXPECT_EQ(mac, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(AuthTest, TokenProofVerifiesOnlyForItsChallengeAndToken) {
  std::string challenge = AuthTranscript(AuthDirection::kAgentToHost, Fields());
  std::string proof, err;
  ASSERT_TRUE(MakeProof(AuthMethod::kToken, "secret", "", challenge, &proof, &err));
  EXPECT_TRUE(VerifyProof(AuthMethod::kToken, "secret", "", challenge, proof, &err));
  EXPECT_FALSE(VerifyProof(AuthMethod::kToken, "other", "", challenge, proof, &err));
  // A proof captured on one connection is useless on the next (new nonce).
  std::string next = AuthTranscript(AuthDirection::kAgentToHost, Fields());
  EXPECT_FALSE(VerifyProof(AuthMethod::kToken, "secret", "", next, proof, &err));
}

// A fake host must not be able to use the agent as an oracle: the agent's proof
// (direction agent->host) never verifies as the host's over the same nonces.
TEST(AuthTest, ProofOfOneDirectionIsNotAProofOfTheOther) {
  std::string host_nonce = MakeNonce(), agent_nonce = MakeNonce(), proof, err;
  std::string up = AuthTranscript(AuthDirection::kAgentToHost, Fields(host_nonce, agent_nonce, "job1"));
  std::string down = AuthTranscript(AuthDirection::kHostToAgent, Fields(host_nonce, agent_nonce, "job1"));
  ASSERT_TRUE(MakeProof(AuthMethod::kToken, "secret", "", up, &proof, &err)) << err;
  EXPECT_FALSE(VerifyProof(AuthMethod::kToken, "secret", "", down, proof, &err));
  EXPECT_NE(up, AuthTranscript(AuthDirection::kAgentToHost, Fields(agent_nonce, host_nonce, "job1")));
  EXPECT_NE(up, AuthTranscript(AuthDirection::kAgentToHost, Fields(host_nonce, agent_nonce, "job2")));
}

// Protocol 4: every handshake field is in both directions' transcripts (the
// welcome's node id in the host's only), so a relay that rewrites any of them
// makes the proof fail. Protocol 3 covered the nonces and the run id only.
TEST(AuthTest, EveryHandshakeFieldChangesTheTranscript) {
  const Handshake base = Fields();
  struct Row {
    const char* field;
    void (*change)(Handshake&);
    bool agent_proof_covers;
  };
  const Row rows[] = {
      {"host_nonce", [](Handshake& h) { h.host_nonce = MakeNonce(); }, true},
      {"agent_nonce", [](Handshake& h) { h.agent_nonce = MakeNonce(); }, true},
      {"auth", [](Handshake& h) { h.auth = "munge"; }, true},
      {"round", [](Handshake& h) { h.round = 4; }, true},
      {"last_completed", [](Handshake& h) { h.last_completed = -1; }, true},
      {"regime", [](Handshake& h) { h.regime = MakeNonce(); }, true},
      {"run_id", [](Handshake& h) { h.run_id = "job2"; }, true},
      {"name", [](Handshake& h) { h.name = "n2"; }, true},
      {"pid", [](Handshake& h) { h.pid = 4243; }, true},
      {"preferred_rank", [](Handshake& h) { h.preferred_rank = 0; }, true},
      {"listen_port", [](Handshake& h) { h.listen_port = 1; }, true},
      {"node_id", [](Handshake& h) { h.node_id = 8; }, false},
      {"guest", [](Handshake& h) { h.guest = true; }, true},
      {"observer", [](Handshake& h) { h.observer = true; }, true},
  };
  for (const Row& row : rows) {
    Handshake changed = base;
    row.change(changed);
    EXPECT_NE(AuthTranscript(AuthDirection::kHostToAgent, base),
              AuthTranscript(AuthDirection::kHostToAgent, changed)) << row.field;
    EXPECT_EQ(AuthTranscript(AuthDirection::kAgentToHost, base) !=
                  AuthTranscript(AuthDirection::kAgentToHost, changed),
              row.agent_proof_covers) << row.field;
    std::string proof, err;
    ASSERT_TRUE(MakeProof(AuthMethod::kToken, "secret", "", AuthTranscript(AuthDirection::kHostToAgent, base),
                          &proof, &err)) << err;
    EXPECT_FALSE(VerifyProof(AuthMethod::kToken, "secret", "",
                             AuthTranscript(AuthDirection::kHostToAgent, changed), proof, &err)) << row.field;
  }
  EXPECT_EQ(AuthTranscript(AuthDirection::kAgentToHost, base).rfind("slurm-elastic rendezvous v4\n", 0), 0u);
}

TEST(AuthTest, TokenProofWithoutATokenExplainsWhatToSet) {
  std::string proof, err;
  EXPECT_FALSE(MakeProof(AuthMethod::kToken, "", "", "c", &proof, &err));
  EXPECT_NE(err.find("ELASTIC_RDZV_TOKEN"), std::string::npos) << err;
}

TEST(AuthTest, MethodNamesRoundTrip) {
  for (AuthMethod m : {AuthMethod::kNone, AuthMethod::kToken, AuthMethod::kMunge}) {
    AuthMethod parsed;
    ASSERT_TRUE(ParseAuthMethod(AuthMethodName(m), &parsed));
    EXPECT_EQ(parsed, m);
  }
  AuthMethod parsed;
  EXPECT_FALSE(ParseAuthMethod("kerberos", &parsed));
}

TEST(AuthTest, MungeProofWhereMungedRuns) {
  std::string err;
  if (!MungeAvailable("", &err)) GTEST_SKIP() << "munged not reachable: " << err;
  std::string challenge = AuthTranscript(AuthDirection::kAgentToHost, Fields());
  std::string proof;
  ASSERT_TRUE(MakeProof(AuthMethod::kMunge, "", "", challenge, &proof, &err)) << err;
  EXPECT_TRUE(VerifyProof(AuthMethod::kMunge, "", "", challenge, proof, &err)) << err;
  std::string other = AuthTranscript(AuthDirection::kAgentToHost, Fields());
  EXPECT_FALSE(VerifyProof(AuthMethod::kMunge, "", "", other, proof, &err));
}

}  // namespace
}  // namespace elastic
