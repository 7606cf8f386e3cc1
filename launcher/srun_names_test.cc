#include "launcher/srun_names.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(SrunOptionNames, NamesWhatTheSrunUserTyped) {
  struct Case {
    const char* in;
    const char* out;
  } cases[] = {
      {"--python: '/x' is not an executable file (the interpreter must have torch)",
       "--elastic-python: '/x' is not an executable file (the interpreter must have torch)"},
      {"--log-dir: cannot create '/ro/x': Permission denied",
       "--elastic-log-dir: cannot create '/ro/x': Permission denied"},
      {"1 node(s) left, below the minimum of 2 (--nnodes)",
       "1 node(s) left, below the minimum of 2 (--elastic=MIN:MAX)"},
      {"not requeueing (--requeue=1)", "not requeueing (--elastic-requeue=1)"},
      {"restarts exhausted (2 of --max-restarts=2 used)",
       "restarts exhausted (2 of --elastic-max-restarts=2 used)"},
      {"--nproc-per-node=gpu: no GPU", "--elastic-nproc-per-node=gpu: no GPU"},
      {"--rdzv-conf join_timeout: 'x'", "--elastic-rdzv-conf join_timeout: 'x'"},
      // Whole flags only; text already in srun's words stays as it is.
      {"--no-python and --python-x and x--python", "--elastic-no-python and --python-x and x--python"},
      {"--elastic-max-restarts, --elastic=2:3", "--elastic-max-restarts, --elastic=2:3"},
      {"--tee and --redirects have no srun form", "--tee and --redirects have no srun form"},
      {"", ""},
      {"--", "--"},
  };
  for (const Case& c : cases) EXPECT_EQ(SrunOptionNames(c.in), c.out) << c.in;
}

}  // namespace
}  // namespace elastic
