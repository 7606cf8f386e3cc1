#include "common/nproc_spec.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

struct Row {
  const char* name;
  const char* text;
  bool ok;
  NprocSpec::Kind kind;
  int count;
};

TEST(NprocSpecTest, Table) {
  using Kind = NprocSpec::Kind;
  const Row rows[] = {
      {"one", "1", true, Kind::kCount, 1},
      {"four", "4", true, Kind::kCount, 4},
      {"most", "4096", true, Kind::kCount, 4096},
      {"gpu", "gpu", true, Kind::kGpu, 0},
      {"cpu", "cpu", true, Kind::kCpu, 0},
      {"auto", "auto", true, Kind::kAuto, 0},
      {"zero", "0", false, Kind::kCount, 0},
      {"too many", "4097", false, Kind::kCount, 0},
      {"negative", "-1", false, Kind::kCount, 0},
      {"empty", "", false, Kind::kCount, 0},
      {"upper case", "GPU", false, Kind::kCount, 0},
      {"space", " 4", false, Kind::kCount, 0},
      {"word", "zero", false, Kind::kCount, 0},
  };
  NprocSpec xpu;
  std::string xpu_err;
  EXPECT_FALSE(ParseNprocSpec("--nproc-per-node", "xpu", &xpu, &xpu_err));
  EXPECT_NE(xpu_err.find("NVIDIA and AMD GPUs only: give the number of workers"), std::string::npos) << xpu_err;
  for (const Row& row : rows) {
    NprocSpec spec{Kind::kCount, 7};
    std::string err;
    bool ok = ParseNprocSpec("--nproc-per-node", row.text, &spec, &err);
    EXPECT_EQ(ok, row.ok) << row.name << ": " << err;
    if (!row.ok) {
      EXPECT_EQ(err, std::string("--nproc-per-node: '") + row.text +
                         "' is not N (1..4096), gpu, cpu or auto") << row.name;
      EXPECT_EQ(spec, (NprocSpec{Kind::kCount, 7})) << row.name << ": left as it was";
      continue;
    }
    EXPECT_EQ(spec.kind, row.kind) << row.name;
    if (row.kind == Kind::kCount) {
      EXPECT_EQ(spec.count, row.count) << row.name;
    }
    EXPECT_EQ(FormatNprocSpec(spec), row.text) << row.name;
  }
}

}  // namespace
}  // namespace elastic
