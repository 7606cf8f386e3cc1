// `elasticrun --print-completion SHELL` (torchrun 2.14's --print-completion): a
// shell completion script for elasticrun's options, made from the option table.
#pragma once

#include <string>
#include <vector>

namespace elastic {

// The shells torchrun offers without shtab installed (argparse choices).
inline constexpr const char* kCompletionShells[] = {"bash", "zsh", "tcsh"};

// The script for `shell` (one of kCompletionShells) completing `options`
// (spellings with their dashes: "--nproc-per-node", "-m"): an option where the word
// starts with '-', else a file name.
std::string CompletionScript(const std::string& shell, const std::vector<std::string>& options);

}  // namespace elastic
