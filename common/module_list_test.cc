#include "common/module_list.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

struct Row {
  const char* name;
  const char* text;
  std::vector<std::string> want;  // empty with bad non-empty: an error
  const char* bad;                // the name the error quotes, or nullptr
};

TEST(ModuleListTest, Table) {
  const Row rows[] = {
      {"empty is no module", "", {}, nullptr},
      {"one", "torch", {"torch"}, nullptr},
      {"several", "torch,numpy,my_pkg", {"torch", "numpy", "my_pkg"}, nullptr},
      {"dotted", "torch.distributed,a.b_c.d2", {"torch.distributed", "a.b_c.d2"}, nullptr},
      {"underscore first", "_private", {"_private"}, nullptr},
      {"empty entry", "torch,,numpy", {}, ""},
      {"trailing comma", "torch,", {}, ""},
      {"leading comma", ",torch", {}, ""},
      {"leading dot", ".torch", {}, ".torch"},
      {"trailing dot", "torch.", {}, "torch."},
      {"double dot", "torch..nn", {}, "torch..nn"},
      {"digit first", "2to3", {}, "2to3"},
      {"digit after a dot", "a.2b", {}, "a.2b"},
      {"space", "torch, numpy", {}, " numpy"},
      {"dash", "my-pkg", {}, "my-pkg"},
      {"path", "pkg/mod", {}, "pkg/mod"},
  };
  for (const Row& row : rows) {
    std::vector<std::string> got{"stale"};
    std::string err;
    bool ok = ParseModuleList("--preload", row.text, &got, &err);
    EXPECT_EQ(ok, row.bad == nullptr) << row.name << ": " << err;
    if (row.bad) {
      EXPECT_TRUE(got.empty()) << row.name;
      EXPECT_EQ(err, std::string("--preload: '") + row.text + "' is not a list of Python modules: '" + row.bad +
                         "' is not a module name (comma-separated dotted names, e.g. torch,numpy)")
          << row.name;
    } else {
      EXPECT_EQ(got, row.want) << row.name;
      EXPECT_EQ(FormatModuleList(got), row.text) << row.name;
    }
  }
}

}  // namespace
}  // namespace elastic
