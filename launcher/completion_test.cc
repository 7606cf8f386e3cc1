// The completion scripts (completion.h); test_process.py sources the bash one in bash.
#include "launcher/completion.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(CompletionScript, EveryShellNamesEveryOption) {
  std::vector<std::string> options = {"--nproc-per-node", "--nproc_per_node", "-m"};
  struct Row {
    const char* shell;
    const char* binds;   // what hooks it into the shell
    const char* option;  // how an option appears
  } rows[] = {{"bash", "complete -o default -F _elasticrun elasticrun", " --nproc_per_node "},
              {"zsh", "#compdef elasticrun", " --nproc_per_node "},
              {"tcsh", "complete elasticrun 'c/-/(", " -nproc_per_node "}};
  for (const Row& row : rows) {
    std::string script = CompletionScript(row.shell, options);
    EXPECT_NE(script.find(row.binds), std::string::npos) << row.shell << ":\n" << script;
    EXPECT_NE(script.find(row.option), std::string::npos) << row.shell << ":\n" << script;
    EXPECT_NE(script.find("-nproc-per-node"), std::string::npos) << row.shell;
  }
}

}  // namespace
}  // namespace elastic
