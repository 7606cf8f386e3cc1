#include "launcher/completion.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace elastic {
namespace {

std::string Bash(const std::vector<std::string>& options) {
  return fmt::format(
      "# elasticrun completion for bash (elasticrun --print-completion bash)\n"
      "_elasticrun() {{\n"
      "  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\"\n"
      "  if [[ \"$cur\" == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))\n"
      "  else\n"
      "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      "  fi\n"
      "}}\n"
      "complete -o default -F _elasticrun elasticrun\n",
      fmt::join(options, " "));
}

std::string Zsh(const std::vector<std::string>& options) {
  return fmt::format(
      "#compdef elasticrun\n"
      "# elasticrun completion for zsh (elasticrun --print-completion zsh)\n"
      "local -a opts\n"
      "opts=({})\n"
      "if [[ $PREFIX == -* ]]; then\n"
      "  compadd -a opts\n"
      "else\n"
      "  _files\n"
      "fi\n",
      fmt::join(options, " "));
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
