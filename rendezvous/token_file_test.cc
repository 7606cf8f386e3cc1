#include "rendezvous/token_file.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace elastic {
namespace {

// token_file: what is accepted, and what is refused naming the file and why.
TEST(TokenFileTest, AcceptsAPrivateFileAndRefusesTheRestNamingIt) {
  struct Row {
    const char* what;
    std::string content;
    mode_t mode;
    std::string token;  // "" = refused
    const char* error;  // part of the message when refused
  };
  const Row rows[] = {
      {"0600 with a newline", "s3cret\n", 0600, "s3cret", ""},
      {"0400 without a newline", "s3cret", 0400, "s3cret", ""},
      {"CRLF and spaces at the end", "s3cret \r\n", 0600, "s3cret", ""},
      {"group-readable", "s3cret\n", 0640, "", "mode 0640 lets others read or change the token: chmod 600"},
      {"world-readable", "s3cret\n", 0604, "", "mode 0604"},
      {"group-writable", "s3cret\n", 0620, "", "mode 0620"},
      {"empty", "\n", 0600, "", "empty"},
      {"too long", std::string(kMaxTokenFileBytes + 1, 'x'), 0600, "", "more than 4096"},
  };
  for (const Row& row : rows) {
    char path[] = "/tmp/elastic-token-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << row.content;
    ASSERT_EQ(chmod(path, row.mode), 0);
    std::string token = "unchanged", err;
    bool ok = ReadTokenFile(path, &token, &err);
    unlink(path);
    if (!row.token.empty()) {
      EXPECT_TRUE(ok) << row.what << ": " << err;
      EXPECT_EQ(token, row.token) << row.what;
      continue;
    }
    EXPECT_FALSE(ok) << row.what;
    EXPECT_EQ(token, "unchanged") << row.what;
    EXPECT_NE(err.find(row.error), std::string::npos) << row.what << ": " << err;
    EXPECT_NE(err.find(path), std::string::npos) << row.what << ": " << err;
  }
  std::string token, err;
  EXPECT_FALSE(ReadTokenFile("/nonexistent/token", &token, &err));
  EXPECT_NE(err.find("token_file '/nonexistent/token': No such file"), std::string::npos) << err;
  EXPECT_FALSE(ReadTokenFile("/tmp", &token, &err));
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
}

TEST(HandedTokenFdTest, OnlyThisProcesssOwnDescriptorsAbove2) {
  struct Row {
    const char* path;
    int fd;
  } rows[] = {
      {"/proc/self/fd/7", 7},     {"/proc/self/fd/123", 123}, {"/proc/self/fd/2", -1},
      {"/proc/self/fd/", -1},     {"/proc/self/fd/7x", -1},   {"/proc/1/fd/7", -1},
      {"/run/user/1000/token", -1}, {"/proc/self/fd/12345678901", -1},
  };
  for (const Row& row : rows) EXPECT_EQ(HandedTokenFd(row.path), row.fd) << row.path;
}

// A memfd as the plugin hands it: written (its offset past the token), mode 0600.
int PluginMemfd(const std::string& content, mode_t mode = 0600) {
  int fd = memfd_create("test-token", MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  EXPECT_EQ(fchmod(fd, mode), 0);
  EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
  return fd;
}

TEST(AdoptTokenFdTest, ReadsFromTheStartAndClosesTheDescriptor) {
  int fd = PluginMemfd("0123abcd");
  std::string token, err;
  ASSERT_TRUE(AdoptTokenFd(fd, &token, &err)) << err;
  EXPECT_EQ(token, "0123abcd");
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);  // closed
  fd = PluginMemfd("0123abcd", 0644);
  EXPECT_FALSE(AdoptTokenFd(fd, &token, &err));
  EXPECT_NE(err.find("/proc/self/fd/" + std::to_string(fd) + ": mode 0644"), std::string::npos) << err;
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);  // closed all the same
}

TEST(AdoptHandedTokenTest, TakesTheTokenAndLeavesNoVariableNorDescriptor) {
  int fd = PluginMemfd("s3cret-of-the-step");
  ASSERT_EQ(setenv(kTokenFileEnv, ("/proc/self/fd/" + std::to_string(fd)).c_str(), 1), 0);
  HandedToken handed = AdoptHandedToken();
  EXPECT_TRUE(handed.handed);
  EXPECT_EQ(handed.token, "s3cret-of-the-step");
  EXPECT_EQ(handed.error, "");
  EXPECT_EQ(getenv(kTokenFileEnv), nullptr);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);
  // A descriptor that is not open is an error, not a run without the token.
  ASSERT_EQ(setenv(kTokenFileEnv, "/proc/self/fd/999", 1), 0);
  handed = AdoptHandedToken();
  EXPECT_TRUE(handed.handed);
  EXPECT_EQ(handed.token, "");
  EXPECT_NE(handed.error.find("/proc/self/fd/999: Bad file descriptor"), std::string::npos) << handed.error;
  EXPECT_EQ(getenv(kTokenFileEnv), nullptr);
  // A file path is left for ReadTokenFile.
  ASSERT_EQ(setenv(kTokenFileEnv, "/run/user/1000/token", 1), 0);
  handed = AdoptHandedToken();
  EXPECT_FALSE(handed.handed);
  EXPECT_STREQ(getenv(kTokenFileEnv), "/run/user/1000/token");
  unsetenv(kTokenFileEnv);
}

}  // namespace
}  // namespace elastic
