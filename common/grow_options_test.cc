#include "common/grow_options.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(GrowOptionsTest, Table) {
  struct Row {
    const char* text;
    bool ok;
    GrowOptions want;     // when ok
    const char* error;    // when not: the whole message
  };
  GrowOptions scavenge;
  scavenge.partition = "scavenge";
  GrowOptions all;
  all.partition = "gpu-a100";
  all.qos = "preempt";
  all.account = "proj_1.x";
  all.time = "1-02:00:00";
  all.nice = 100;
  all.interval_s = 2;
  GrowOptions fast;
  fast.interval_s = 1;
  const Row rows[] = {
      {"", true, {}, ""},
      {"on", true, {}, ""},
      {"(null)", true, {}, ""},  // sbatch --elastic-grow, read back from the job's environment
      {"partition=scavenge", true, scavenge, ""},
      {"partition=gpu-a100,qos=preempt,account=proj_1.x,time=1-02:00:00,nice=100,interval=2", true, all, ""},
      {"interval=1", true, fast, ""},
      {"time=UNLIMITED", true, [] { GrowOptions o; o.time = "UNLIMITED"; return o; }(), ""},
      {"time=30", true, [] { GrowOptions o; o.time = "30"; return o; }(), ""},
      {"partition", false, {},
       "--elastic-grow=partition: 'partition' is not KEY=VALUE (allowed: partition=P, qos=Q, account=A, time=T, "
       "nice=N, interval=SECONDS)"},
      {"queue=x", false, {},
       "--elastic-grow=queue=x: unknown key 'queue' (allowed: partition=P, qos=Q, account=A, time=T, nice=N, "
       "interval=SECONDS)"},
      {"partition=a b", false, {},
       "--elastic-grow=partition=a b: partition='a b' is not a Slurm name (letters, digits, '_', '-', '.')"},
      {"qos=$(rm -rf x)", false, {},
       "--elastic-grow=qos=$(rm -rf x): qos='$(rm -rf x)' is not a Slurm name (letters, digits, '_', '-', '.')"},
      {"account=", false, {},
       "--elastic-grow=account=: account='' is not a Slurm name (letters, digits, '_', '-', '.')"},
      {"time=1h", false, {},
       "--elastic-grow=time=1h: time='1h' is not a Slurm time limit (MINUTES, HH:MM:SS, D-HH:MM, UNLIMITED)"},
      {"time=1-2-3", false, {},
       "--elastic-grow=time=1-2-3: time='1-2-3' is not a Slurm time limit (MINUTES, HH:MM:SS, D-HH:MM, UNLIMITED)"},
      {"nice=-5", false, {},
       "--elastic-grow=nice=-5: nice='-5' is not an integer 0..2147483645 (a user may only lower the helper "
       "jobs' priority)"},
      {"interval=0", false, {}, "--elastic-grow=interval=0: interval='0' is not seconds, 1..3600"},
      {"interval=2,interval=3", false, {}, "--elastic-grow=interval=2,interval=3: interval is given twice"},
      {"partition=a,", false, {},
       "--elastic-grow=partition=a,: '' is not KEY=VALUE (allowed: partition=P, qos=Q, account=A, time=T, "
       "nice=N, interval=SECONDS)"},
  };
  for (const Row& row : rows) {
    GrowOptions got;
    got.qos = "left";
    std::string err;
    EXPECT_EQ(ParseGrowOptions("--elastic-grow", row.text, &got, &err), row.ok) << row.text;
    if (row.ok) {
      EXPECT_EQ(got, row.want) << row.text;
      GrowOptions back;
      ASSERT_TRUE(ParseGrowOptions("--grow", FormatGrowOptions(got), &back, &err)) << err;
      EXPECT_EQ(back, got) << row.text << ": read back";
    } else {
      EXPECT_EQ(err, row.error);
      EXPECT_EQ(got.qos, "left") << row.text << ": left as it was";
    }
  }
}

TEST(GrowOptionsTest, SbatchArgs) {
  GrowOptions o;
  EXPECT_TRUE(GrowSbatchArgs(o).empty());
  EXPECT_EQ(FormatGrowOptions(o), "on");
  o.partition = "scavenge";
  o.qos = "low";
  o.time = "10";
  o.nice = 7;
  o.interval_s = 3;  // the keeper's, not sbatch's
  EXPECT_EQ(GrowSbatchArgs(o),
            (std::vector<std::string>{"--partition=scavenge", "--qos=low", "--time=10", "--nice=7"}));
}

}  // namespace
}  // namespace elastic
