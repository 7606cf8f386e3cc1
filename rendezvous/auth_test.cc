#include "rendezvous/auth.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

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
  std::string challenge = AuthTranscript(AuthDirection::kAgentToHost, MakeNonce(), MakeNonce(), "job1");
  std::string proof, err;
  ASSERT_TRUE(MakeProof(AuthMethod::kToken, "secret", "", challenge, &proof, &err));
  EXPECT_TRUE(VerifyProof(AuthMethod::kToken, "secret", "", challenge, proof, &err));
  EXPECT_FALSE(VerifyProof(AuthMethod::kToken, "other", "", challenge, proof, &err));
  // A proof captured on one connection is useless on the next (new nonce).
  std::string next = AuthTranscript(AuthDirection::kAgentToHost, MakeNonce(), MakeNonce(), "job1");
  EXPECT_FALSE(VerifyProof(AuthMethod::kToken, "secret", "", next, proof, &err));
}

// A fake host must not be able to use the agent as an oracle: the agent's proof
// (direction agent->host) never verifies as the host's over the same nonces.
TEST(AuthTest, ProofOfOneDirectionIsNotAProofOfTheOther) {
  std::string host_nonce = MakeNonce(), agent_nonce = MakeNonce(), proof, err;
  std::string up = AuthTranscript(AuthDirection::kAgentToHost, host_nonce, agent_nonce, "job1");
  std::string down = AuthTranscript(AuthDirection::kHostToAgent, host_nonce, agent_nonce, "job1");
  ASSERT_TRUE(MakeProof(AuthMethod::kToken, "secret", "", up, &proof, &err)) << err;
  EXPECT_FALSE(VerifyProof(AuthMethod::kToken, "secret", "", down, proof, &err));
  EXPECT_NE(up, AuthTranscript(AuthDirection::kAgentToHost, agent_nonce, host_nonce, "job1"));
  EXPECT_NE(up, AuthTranscript(AuthDirection::kAgentToHost, host_nonce, agent_nonce, "job2"));
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
  std::string challenge = AuthTranscript(AuthDirection::kAgentToHost, MakeNonce(), MakeNonce(), "job1");
  std::string proof;
  ASSERT_TRUE(MakeProof(AuthMethod::kMunge, "", "", challenge, &proof, &err)) << err;
  EXPECT_TRUE(VerifyProof(AuthMethod::kMunge, "", "", challenge, proof, &err)) << err;
  std::string other = AuthTranscript(AuthDirection::kAgentToHost, MakeNonce(), MakeNonce(), "job1");
  EXPECT_FALSE(VerifyProof(AuthMethod::kMunge, "", "", other, proof, &err));
}

}  // namespace
}  // namespace elastic
