#include "launcher/completion.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string_view>

namespace elastic {
namespace {

// Both shells: an option where the word starts with '-', else a file name.
std::string OptionOrFile(std::string_view word, std::string_view options, std::string_view files,
                         std::string_view indent) {
  return fmt::format("{0}if [[ {1} == -* ]]; then\n{0}  {2}\n{0}else\n{0}  {3}\n{0}fi\n", indent, word,
                     options, files);
}

std::string Bash(const std::vector<std::string>& options) {
  std::string body = OptionOrFile("\"$cur\"", fmt::format("COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))",
                                                           fmt::join(options, " ")),
                                  "COMPREPLY=($(compgen -f -- \"$cur\"))", "  ");
  return "# elasticrun completion for bash (elasticrun --print-completion bash)\n"
         "_elasticrun() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\"\n" +
         body + "}\ncomplete -o default -F _elasticrun elasticrun\n";
}

std::string Zsh(const std::vector<std::string>& options) {
  return fmt::format("#compdef elasticrun\n"
                     "# elasticrun completion for zsh (elasticrun --print-completion zsh)\n"
                     "local -a opts\n"
                     "opts=({})\n",
                     fmt::join(options, " ")) +
         OptionOrFile("$PREFIX", "compadd -a opts", "_files", "");
}

// tcsh: `c/-/(...)/` completes a word starting with '-' from the list (the list's
// words without that '-'), `p/*/f/` every other word as a file.
std::string Tcsh(const std::vector<std::string>& options) {
  std::vector<std::string> tails;
  for (const std::string& o : options) tails.push_back(o.substr(1));
  return fmt::format("# elasticrun completion for tcsh (elasticrun --print-completion tcsh)\n"
                     "complete elasticrun 'c/-/({})/' 'p/*/f/'\n",
                     fmt::join(tails, " "));
}

}  // namespace

std::string CompletionScript(const std::string& shell, const std::vector<std::string>& options) {
  if (shell == "zsh") return Zsh(options);
  if (shell == "tcsh") return Tcsh(options);
  return Bash(options);
}

}  // namespace elastic
