#include "common/option_table.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(OptionTable, EverySrunRowIsElasticrunsLongNameWithElasticInFront) {
  size_t srun = 0;
  for (const OptionRow& row : OptionTable()) {
    if (!row.IsSrun() || row.PluginOnly()) continue;
    ++srun;
    EXPECT_EQ(std::string(row.srun.name), "elastic-" + LongName(row)) << row.names;
    // A flag of elasticrun is a flag of srun, an option with a value needs one;
    // only --elastic-grow may come bare (its defaults: elasticrun's --grow=on).
    int want = row.flag ? 0 : (row.id == Opt::kGrow ? 2 : 1);
    EXPECT_EQ(row.srun.has_arg, want) << row.srun.name;
  }
  EXPECT_EQ(srun, 16u);
}

TEST(OptionTable, PluginOnlyRowsAreSrunRowsWithoutElasticrunColumns) {
  std::set<std::string> plugin_only;
  for (const OptionRow& row : OptionTable()) {
    if (!row.PluginOnly()) continue;
    EXPECT_TRUE(row.IsSrun()) << row.help;
    EXPECT_EQ(std::string(row.dest), "") << row.srun.name;
    EXPECT_EQ(PetName(row), "") << row.srun.name;
    plugin_only.insert(row.srun.name);
  }
  EXPECT_EQ(plugin_only, (std::set<std::string>{"elastic", "elastic-join", "elastic-rdzv-port"}));
}

TEST(OptionTable, EveryRowHasHelpAndEverySrunRowUsageArginfoAndAUniqueName) {
  std::set<std::string> long_names, srun_names;
  for (const OptionRow& row : OptionTable()) {
    EXPECT_NE(std::string(row.help), "") << row.names;
    if (!row.PluginOnly()) {
      EXPECT_TRUE(long_names.insert(LongName(row)).second) << row.names;
      EXPECT_TRUE(PetName(row).starts_with("PET_")) << row.names;
    }
    if (!row.IsSrun()) continue;
    EXPECT_TRUE(std::string(row.srun.usage).starts_with("[elastic] ")) << row.srun.name;
    EXPECT_TRUE(srun_names.insert(row.srun.name).second) << row.srun.name;
    EXPECT_LT(std::string(row.srun.name).size(), 75u);  // Slurm's limit on an option name
    EXPECT_EQ(row.srun.has_arg == 0, row.srun.arginfo == nullptr) << row.srun.name;
  }
  EXPECT_EQ(srun_names.size(), kSrunOptionCount);
}

TEST(OptionTable, SrunRowsAreTheTablesSrunRowsInOrder) {
  size_t k = 0;
  for (const OptionRow& row : OptionTable()) {
    if (!row.IsSrun()) continue;
    ASSERT_LT(k, kSrunOptionCount);
    EXPECT_EQ(SrunRows()[k++], &row) << row.srun.name;
  }
  EXPECT_EQ(k, kSrunOptionCount);
  EXPECT_EQ(RowOf(Opt::kBind).id, Opt::kBind);
  EXPECT_EQ(LongName(RowOf(Opt::kRedirects)), "redirects");  // "-r,--redirects"
  EXPECT_EQ(PetName(RowOf(Opt::kNprocPerNode)), "PET_NPROC_PER_NODE");
}

TEST(CheckOptionValue, NamesTheOptionAsGivenAndTheBadValue) {
  struct Row {
    Opt id;
    const char* what;
    const char* bad;
  };
  for (const Row& r : {Row{Opt::kNprocPerNode, "--elastic-nproc-per-node", "lots"},
                       Row{Opt::kMaxRestarts, "--elastic-max-restarts", "-1"},
                       Row{Opt::kRequeue, "--elastic-requeue", "x"},
                       Row{Opt::kNodeMultiple, "--elastic-node-multiple", "0"},
                       Row{Opt::kRdzvConf, "--elastic-rdzv-conf", "novalue"},
                       Row{Opt::kBind, "--bind", "sometimes"},
                       Row{Opt::kRdzvEndpoint, "--elastic-rdzv-endpoint", "host:99999"},
                       Row{Opt::kPreload, "--elastic-preload", "torch,,numpy"},
                       Row{Opt::kRdzvId, "PET_RDZV_ID", "a\tb"}}) {
    std::string err;
    EXPECT_FALSE(CheckOptionValue(r.id, r.what, r.bad, &err)) << r.what;
    EXPECT_NE(err.find(r.what), std::string::npos) << err;
  }
  std::string err;
  for (const char* good : {"4", "gpu", "auto"}) EXPECT_TRUE(CheckOptionValue(Opt::kNprocPerNode, "x", good, &err));
  EXPECT_TRUE(CheckOptionValue(Opt::kLogLinePrefixTemplate, "x", "[${rank}]", &err));
  EXPECT_TRUE(CheckOptionValue(Opt::kHealthCheck, "x", "true; exit 0", &err));
}

}  // namespace
}  // namespace elastic
