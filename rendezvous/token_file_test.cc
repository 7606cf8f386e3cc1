#include "rendezvous/token_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

}  // namespace
}  // namespace elastic
