#include "launcher/log_prefix.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

// As Python's string.Template(templ).safe_substitute(role_name=..., rank=..., ...) in torchrun.
TEST(LogPrefixTest, TemplateTable) {
  const LogPrefixFields f{"trainer", 5, 1, "node07"};
  const std::pair<const char*, const char*> rows[] = {
      {"", "[rank5]: "},
      {"[${role_name}${rank}|${local_rank}]:", "[trainer5|1]:"},
      {"${hostname} rank ${rank}: ", "node07 rank 5: "},
      {"$hostname:$rank ", "node07:5 "},
      {"$rank_x ${rank}x ", "$rank_x 5x "},  // $rank_x is another (unknown) name
      {"$$rank ${unknown} $ ${rank ", "$rank ${unknown} $ ${rank "},
      {"cost $", "cost $"},
      {"${}", "${}"},
  };
  for (const auto& [templ, want] : rows) EXPECT_EQ(LogLinePrefix(templ, f), want) << templ;
}

}  // namespace
}  // namespace elastic
