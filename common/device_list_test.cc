#include "common/device_list.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

struct Row {
  const char* name;
  DeviceListKind kind;
  const char* text;
  bool ok;
  const char* expect;  // indexes/uuids joined by ",", or part of the error
};

std::string Joined(const DeviceList& list) {
  std::string s;
  for (const DeviceEntry& e : list.entries) {
    if (!s.empty()) s += ",";
    s += e.kind == DeviceEntry::Kind::kIndex ? std::to_string(e.index) : e.uuid;
  }
  return s;
}

TEST(DeviceListTest, Table) {
  constexpr auto kS = DeviceListKind::kSlurm;
  constexpr auto kC = DeviceListKind::kCuda;
  const Row rows[] = {
      {"empty", kS, "", true, ""},
      {"no dev files", kS, "NoDevFiles", true, ""},
      {"no dev files cuda", kC, " NoDevFiles ", true, ""},
      {"indexes", kS, "0,1,3", true, "0,1,3"},
      {"slurm range", kS, "0-3", true, "0,1,2,3"},
      {"slurm ranges and indexes", kS, "0-1,4,6-7", true, "0,1,4,6,7"},
      {"empty entries skipped", kS, "0,,2, ", true, "0,2"},
      {"spaces", kC, " 1 , 2 ", true, "1,2"},
      {"cuda uuids", kC, "GPU-aaa,GPU-bbb", true, "GPU-aaa,GPU-bbb"},
      {"cuda mig", kC, "MIG-abc", true, "MIG-abc"},
      {"cuda negative ends", kC, "0,1,-1,2", true, "0,1"},
      {"cuda minus one is none", kC, "-1", true, ""},
      {"slurm negative is bad", kS, "-1", false, "SLURM_STEP_GPUS='-1': '-1' is not a GPU index"},
      {"cuda has no ranges", kC, "0-3", false, "'0-3' is not a GPU index nor a GPU-<uuid>"},
      {"reversed range", kS, "3-1", false, "'3-1' is not a GPU index or range"},
      {"word", kS, "gpu0", false, "'gpu0'"},
      {"slurm uuid is bad", kS, "GPU-aaa", false, "'GPU-aaa'"},
      {"too large", kS, "2000000", false, "'2000000'"},
      {"huge range", kS, "0-5000", false, "more than 4096 GPUs"},
  };
  for (const Row& row : rows) {
    DeviceList list;
    std::string err;
    const char* what = row.kind == kS ? "SLURM_STEP_GPUS" : "CUDA_VISIBLE_DEVICES";
    bool ok = ParseDeviceList(row.kind, what, row.text, &list, &err);
    EXPECT_EQ(ok, row.ok) << row.name << ": " << err;
    if (row.ok) {
      EXPECT_EQ(Joined(list), row.expect) << row.name;
    } else {
      EXPECT_NE(err.find(row.expect), std::string::npos) << row.name << ": " << err;
    }
  }
}

}  // namespace
}  // namespace elastic
