#include "launcher/native_stacks.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(NativeStacksTest, ParsesEveryModeAndNamesABadValue) {
  struct Case {
    const char* text;
    bool ok;
    NativeStacksMode want;
  } cases[] = {
      {"auto", true, NativeStacksMode::kAuto},
      {"py-spy", true, NativeStacksMode::kPySpy},
      {"gdb", true, NativeStacksMode::kGdb},
      {"off", true, NativeStacksMode::kOff},
      {"", false, {}},
      {"GDB", false, {}},
      {"pyspy", false, {}},
      {"lldb", false, {}},
      {"gdb ", false, {}},
  };
  for (const Case& c : cases) {
    NativeStacksMode mode = NativeStacksMode::kAuto;
    std::string err;
    EXPECT_EQ(ParseNativeStacksMode("--native-stacks", c.text, &mode, &err), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(mode, c.want) << c.text;
      EXPECT_STREQ(NativeStacksModeName(mode), c.text);
    } else {
      EXPECT_EQ(err, std::string("--native-stacks: '") + c.text + "': expected auto, py-spy, gdb or off");
    }
  }
}

TEST(NativeStacksTest, ChoosesFromTheModeAndWhatIsOnPath) {
  using M = NativeStacksMode;
  const std::string spy = "/usr/bin/py-spy", gdb = "/usr/bin/gdb";
  struct Case {
    M mode;
    std::string spy, gdb;
    std::string want_name, want_path;
    bool warns;
  } cases[] = {
      {M::kAuto, spy, gdb, "py-spy", spy, false},
      {M::kAuto, "", gdb, "gdb", gdb, false},
      {M::kAuto, spy, "", "py-spy", spy, false},
      {M::kAuto, "", "", "", "", false},  // nothing installed: Python stacks only, silently
      {M::kGdb, spy, gdb, "gdb", gdb, false},
      {M::kGdb, spy, "", "", "", true},
      {M::kPySpy, spy, gdb, "py-spy", spy, false},
      {M::kPySpy, "", gdb, "", "", true},
      {M::kOff, spy, gdb, "", "", false},
  };
  for (const Case& c : cases) {
    NativeToolChoice got = ChooseNativeStackTool(c.mode, c.spy, c.gdb);
    SCOPED_TRACE(std::string(NativeStacksModeName(c.mode)) + " spy='" + c.spy + "' gdb='" + c.gdb + "'");
    EXPECT_EQ(got.tool.name, c.want_name);
    EXPECT_EQ(got.tool.path, c.want_path);
    EXPECT_EQ(!got.warning.empty(), c.warns) << got.warning;
  }
  EXPECT_EQ(ChooseNativeStackTool(M::kGdb, spy, "").warning,
            "--native-stacks gdb: no gdb on PATH: hung workers get their Python stacks only");
}

TEST(NativeStacksTest, CommandRunsTheToolFoundOnPathQuoted) {
  EXPECT_EQ(NativeStackCommand({"py-spy", "/opt/py spy/bin/py-spy"}, 4242),
            "exec '/opt/py spy/bin/py-spy' dump --native --pid 4242 </dev/null");
  EXPECT_EQ(NativeStackCommand({"gdb", "/usr/bin/gdb"}, 7),
            "exec '/usr/bin/gdb' -p 7 -batch -nx -iex 'set debuginfod enabled off' "
            "-ex 'set pagination off' -ex 'thread apply all bt' </dev/null");
}

TEST(NativeStacksTest, ShellQuoteSurvivesQuotes) {
  EXPECT_EQ(ShellQuote("/bin/gdb"), "'/bin/gdb'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
}

}  // namespace
}  // namespace elastic
