#include "common/bind_mode.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(BindModeTest, Table) {
  struct Row {
    const char* text;
    bool ok;
    BindMode mode;
  };
  const Row rows[] = {
      {"auto", true, BindMode::kAuto},   {"gpu", true, BindMode::kGpu},
      {"gpu-exclusive", true, BindMode::kGpuExclusive},
      {"numa", true, BindMode::kNuma},   {"none", true, BindMode::kNone},
      {"socket", false, BindMode::kAuto}, {"", false, BindMode::kAuto},
      {"GPU", false, BindMode::kAuto},   {"gpu ", false, BindMode::kAuto},
  };
  for (const Row& row : rows) {
    BindMode mode = BindMode::kNone;
    std::string err;
    EXPECT_EQ(ParseBindMode("--bind", row.text, &mode, &err), row.ok) << row.text;
    if (row.ok) {
      EXPECT_EQ(mode, row.mode) << row.text;
      EXPECT_EQ(BindModeName(mode), row.text);
    } else {
      EXPECT_EQ(err, std::string("--bind: '") + row.text +
                         "' is not a binding mode (auto, gpu, gpu-exclusive, numa, none)");
      EXPECT_EQ(mode, BindMode::kNone) << "left as it was";
    }
  }
}

TEST(MemBindTest, Table) {
  struct Row {
    const char* text;
    bool ok;
    MemBind membind;
  };
  const Row rows[] = {
      {"preferred", true, MemBind::kPreferred}, {"strict", true, MemBind::kStrict},
      {"none", true, MemBind::kNone},           {"interleave", false, MemBind::kNone},
      {"", false, MemBind::kNone},              {"Strict", false, MemBind::kNone},
  };
  for (const Row& row : rows) {
    MemBind membind = MemBind::kNone;
    std::string err;
    EXPECT_EQ(ParseMemBind("PET_MEMBIND", row.text, &membind, &err), row.ok) << row.text;
    if (row.ok) {
      EXPECT_EQ(membind, row.membind) << row.text;
      EXPECT_EQ(MemBindName(membind), row.text);
    } else {
      EXPECT_EQ(err, std::string("PET_MEMBIND: '") + row.text +
                         "' is not a memory policy (preferred, strict, none)");
    }
  }
}

}  // namespace
}  // namespace elastic
