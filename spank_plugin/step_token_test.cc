#include "spank_plugin/step_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

namespace elastic::spank {
namespace {

// The key file's rules as a table: what is accepted, and what each refusal names.
TEST(CheckTokenKey, RootOwned0600Of32To65536Bytes) {
  struct Case {
    const char* name;
    TokenKeyStat st;
    const char* error_has;  // nullptr: accepted
  } cases[] = {
      {"64 bytes, root, 0600", {true, 0, 0600, 64}, nullptr},
      {"0400", {true, 0, 0400, 64}, nullptr},
      {"32 bytes", {true, 0, 0600, 32}, nullptr},
      {"65536 bytes", {true, 0, 0600, 65536}, nullptr},
      {"group may read", {true, 0, 0640, 64}, "mode 0640 lets others read or change the key: chmod 600 /etc/k"},
      {"others may write", {true, 0, 0602, 64}, "mode 0602"},
      {"group execute", {true, 0, 0610, 64}, "mode 0610"},
      {"owned by a user", {true, 1000, 0600, 64}, "owned by uid 1000, not by root: chown root /etc/k"},
      {"31 bytes", {true, 0, 0600, 31}, "31 bytes; a key has 32 to 65536"},
      {"empty", {true, 0, 0600, 0}, "0 bytes"},
      {"65537 bytes", {true, 0, 0600, 65537}, "65537 bytes"},
      {"a directory", {false, 0, 0700, 4096}, "not a regular file"},
  };
  for (const Case& c : cases) {
    std::string err;
    bool ok = CheckTokenKey("/etc/k", c.st, &err);
    EXPECT_EQ(ok, c.error_has == nullptr) << c.name << ": " << err;
    if (c.error_has) {
      EXPECT_NE(err.find("token_key '/etc/k'"), std::string::npos) << c.name << ": " << err;
      EXPECT_NE(err.find(c.error_has), std::string::npos) << c.name << ": " << err;
    }
  }
}

TEST(ReadTokenKey, RelativeAndMissingPathsAreNamed) {
  std::string key, err;
  EXPECT_FALSE(ReadTokenKey("etc/token.key", &key, &err));
  EXPECT_EQ(err, "plugstack.conf: token_key 'etc/token.key': not an absolute path");
  EXPECT_FALSE(ReadTokenKey("/nonexistent/token.key", &key, &err));
  EXPECT_EQ(err, "plugstack.conf: token_key '/nonexistent/token.key': No such file or directory");
}

TEST(ReadTokenKey, AFileOfThisUserIsReadOnlyWhenItIsRoots) {
  char path[] = "/tmp/token_key_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string data(64, 'k');
  ASSERT_EQ(write(fd, data.data(), data.size()), 64);
  close(fd);
  std::string key, err;
  bool ok = ReadTokenKey(path, &key, &err);
  if (geteuid() == 0) {
    EXPECT_TRUE(ok) << err;
    EXPECT_EQ(key, data);
  } else {
    EXPECT_FALSE(ok);
    EXPECT_NE(err.find("not by root"), std::string::npos) << err;
  }
  unlink(path);
}

// RFC 4231 test cases 1, 2 and 6 (a key longer than the block size), through
// libcrypto as the plugin loads it.
TEST(DlopenHmac, Rfc4231KnownAnswers) {
  struct Case {
    std::string key, data, mac;
  } cases[] = {
      {std::string(20, '\x0b'), "Hi There",
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {"Jefe", "what do ya want for nothing?",
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
  };
  DlopenHmac hmac;
  for (const Case& c : cases) {
    std::string out, err;
    ASSERT_TRUE(hmac.Sha256Hex(c.key, c.data, &out, &err)) << err;
    EXPECT_EQ(out, c.mac) << c.data;
  }
}

TEST(StepToken, MessageNamesTheVersionTheUserAndTheRun) {
  EXPECT_EQ(StepTokenMessage(1000, "42.0"), "slurm-elastic rendezvous token v1\nuid=1000\nrun_id=42.0");
}

TEST(StepToken, DiffersByUidAndRunIdAndKeyAndIsStable) {
  DlopenHmac hmac;
  std::string key(64, 'k'), err;
  auto derive = [&](const std::string& k, uint32_t uid, const std::string& run) {
    std::string token;
    EXPECT_TRUE(DeriveStepToken(hmac, k, uid, run, &token, &err)) << err;
    EXPECT_EQ(token.size(), 64u);
    return token;
  };
  std::string base = derive(key, 1000, "42.0");
  EXPECT_EQ(derive(key, 1000, "42.0"), base);  // every node of the step agrees
  EXPECT_NE(derive(key, 1001, "42.0"), base);
  EXPECT_NE(derive(key, 1000, "42.1"), base);
  EXPECT_NE(derive(key, 1000, "43.0"), base);
  EXPECT_NE(derive(std::string(64, 'K'), 1000, "42.0"), base);
  std::string expected;
  ASSERT_TRUE(hmac.Sha256Hex(key, StepTokenMessage(1000, "42.0"), &expected, &err));
  EXPECT_EQ(base, expected);
}

// A failing HMAC (no libcrypto) is the derivation's error.
class NoCrypto : public Hmac {
 public:
  bool Sha256Hex(const std::string&, const std::string&, std::string*, std::string* err) override {
    *err = "cannot load libcrypto.so.3";
    return false;
  }
};

TEST(StepToken, NoLibcryptoIsAnError) {
  NoCrypto hmac;
  std::string token, err;
  EXPECT_FALSE(DeriveStepToken(hmac, "k", 1, "r", &token, &err));
  EXPECT_EQ(err, "cannot load libcrypto.so.3");
}

TEST(MakeSealedMemfd, HoldsTheTokenSealedAndSurvivesExec) {
  std::string err;
  int fd = MakeSealedMemfd("test-token", "abc123", &err);
  ASSERT_GE(fd, 0) << err;
  EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_EQ(fcntl(fd, F_GET_SEALS), F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  // Read back as elasticrun does: through /proc/self/fd/N.
  int again = open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(again, 0);
  char buf[16] = {};
  EXPECT_EQ(read(again, buf, sizeof(buf)), 6);
  EXPECT_EQ(std::string(buf), "abc123");
  close(again);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, geteuid());
  // Sealed: no write, no growing, no shrinking, no unsealing.
  EXPECT_EQ(pwrite(fd, "x", 1, 0), -1);
  EXPECT_EQ(ftruncate(fd, 100), -1);
  EXPECT_EQ(ftruncate(fd, 0), -1);
  EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), -1);
  close(fd);
}

}  // namespace
}  // namespace elastic::spank
