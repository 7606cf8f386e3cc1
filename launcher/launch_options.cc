// elasticrun's options: --help's text and reading argv + env against the one
// option table (common/option_table.h; launch_options.h). What the values mean
// is launch_convert.cc's.
#include "launcher/launch_options.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstring>
#include <fmt/format.h>
#include <iterator>

#include "common/parse.h"
#include "elastic_version.h"
#include "launcher/completion.h"
#include "launcher/option_values.h"
#include "rendezvous/rendezvous_settings.h"

extern char** environ;

namespace elastic {
namespace {

// torchrun's own variables for some options, read after the option and its PET_
// variable (torchrun reads them where the flag is not given).
constexpr std::pair<Opt, const char*> kTorchrunEnv[] = {
    {Opt::kLogLinePrefixTemplate, "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"},
    {Opt::kShutdownTimeout, "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"},
    {Opt::kUninterruptibleTimeout, "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT"},
    {Opt::kPython, "PYTHON_EXEC"},
};
std::string HelpText(const OptionRow& def) {
  std::string text = def.help;
  if (def.def[0] != '\0') text += fmt::format(" [default: {}]", def.def);
  text += fmt::format(" [env: {}]", PetName(def));
  return text;
}

constexpr const char* kFooter = R"(
Other commands: `elasticrun status JOBID[.STEP] [--json]` (or with the job's
--rdzv-endpoint and --rdzv-id) shows a running job's round, members, restarts
and failures (`elasticrun status --help`); `elasticrun timeline EVENTS.jsonl -o
job.svg` draws an event record. (`elasticrun host-runner` is started by
the SPANK plugin, not by users: it runs scontrol and health checks on the host
for an agent in a container image; docs/containers.md.)

The program: a first argument ending in .py (or -m/--run-path) runs as
`PYTHON -u program args...` (--python, default python3 from PATH; it must have
torch); anything else is executed as given (PATH lookup); --no-python forces that.

Precedence: command line > PET_<NAME> environment variable > default. Under
`srun --elastic` (ELASTIC_SPANK_ARGV0 set) options come from PET_* only.

Exit status (for batch scripts): 0 every worker succeeded; 1 the job failed:
restarts used up by a worker's failures (the summary names the worker's exit
code or signal) or an agent error, or fewer than MIN nodes left because the
others were stopped by a signal (scancel, time limit: never requeued); 2 do not requeue: a bad option or value
(nothing was started) or a crash loop (--crash-loop-count); 3 nodes were
lost: fewer than MIN left, the restarts used up by node losses, no majority
came back, or the rendezvous host lost or refused this agent before it was
authenticated (run id, version, token: unproven, so never "do not requeue"):
requeueing may help (--requeue N does it in a batch job); 4 this node left
the job: a worker could not be killed (--uninterruptible-timeout), the others
go on without it; 5 do not requeue: no progress (--progress-file,
--no-progress-restarts); 128+N elasticrun got terminating signal N.)";

constexpr const char* kAuthHelp = R"(

Rendezvous authentication is mutual: agent and host each prove themselves over
fresh nonces of both, with the shared token when one is set (--rdzv-conf
token_file=PATH of mode 0600, ELASTIC_RDZV_TOKEN_FILE or ELASTIC_RDZV_TOKEN; a
token on the command line is readable by every local user and is warned
about), else with a munge credential of the same user
where munged runs (every Slurm cluster with auth/munge); an agent with either
never joins a host that offers none. It keeps other users' and other jobs'
processes from joining or posing as the host; it does not encrypt the traffic.
The host logs which method is in use; a multi-node run with neither warns.
)";
// `torchrun ... train.py -- --depth=26`: torchrun's argparse does not hand the
// script a `--` right after the program (Debian 12's and 13's torchrun, checked
// by tests/torch/test_torchrun_compat.py); neither do we. A later `--` is the
// script's. Under srun --elastic the task's arguments stay as srun passes them.
void DropDashDashAfterProgram(std::vector<std::string>* program) {
  if (program->size() > 1 && (*program)[1] == "--") program->erase(program->begin() + 1);
}

bool TakesValue(std::string_view arg) {
  for (const OptionRow& def : OptionTable()) {
    if (def.flag || def.PluginOnly()) continue;
    for (const std::string& name : Split(def.names, ',')) {
      if (name == arg) return true;
    }
  }
  return false;
}

// `--rdzv-id= --nproc-per-node=2 train.py`: CLI11 reads an empty `--opt=` as
// `--opt` and takes the next argument as its value (here the program's name or
// the next option: issue 19 item 9). An empty value is an error naming the
// option. Scans up to the program (the first argument that is not an option or
// an option's value) or `--`.
bool CheckNoEmptyValues(int argc, const char* const* argv, std::string* err) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--" || arg.size() < 2 || arg[0] != '-') return true;
    size_t eq = arg.find('=');
    if (eq != std::string_view::npos) {
      if (eq + 1 == arg.size()) {
        *err = fmt::format("{}: empty value (give one, e.g. {}VALUE, or leave the option out)",
                           arg.substr(0, eq), arg);
        return false;
      }
      continue;
    }
    if (TakesValue(arg)) ++i;  // its value, whatever it looks like
  }
  return true;
}
}  // namespace

ParseOutcome ReadOptions(int argc, const char* const* argv, const EnvMap& env, RawOptions* raw,
                         std::string* out, std::string* err) {
  CLI::App app{"elasticrun: elastic launcher for PyTorch workers (torchrun-compatible)", "elasticrun"};
  app.prefix_command();
  app.footer(std::string(kFooter) + kAuthHelp + "\n--rdzv-conf keys:\n" + RendezvousConfHelp());
  app.set_version_flag("--version", std::string("elasticrun: ") + ELASTIC_VERSION_LINE);
  app.get_formatter()->column_width(42);
  std::span<const OptionRow> table = OptionTable();
  const size_t kCount = table.size();
  std::vector<std::string> texts(kCount);
  std::vector<CLI::Option*> opts(kCount, nullptr);
  for (size_t i = 0; i < kCount; ++i) {
    const OptionRow& def = table[i];
    if (def.PluginOnly()) continue;  // srun's only (--elastic, --elastic-join, ...)
    if (def.flag) {
      opts[i] = app.add_flag(def.names)->description(HelpText(def));
    } else {
      // A repeated option: the last one wins, as with torchrun's argparse (scripts
      // append overrides to a base command line).
      opts[i] = app.add_option(def.names, texts[i], HelpText(def))
                    ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  }
  std::string completion_shell;
  CLI::Option* completion_opt =
      app.add_option("--print-completion,--print_completion", completion_shell,
                     "Print a shell completion script for elasticrun (bash, zsh or tcsh) and exit, "
                     "e.g. elasticrun --print-completion bash > ~/.local/share/bash-completion/completions/elasticrun.")
          ->check(CLI::IsMember(std::vector<std::string>(std::begin(kCompletionShells), std::end(kCompletionShells))));
  std::string print_binding;
  CLI::Option* print_opt =
      app.add_option("--print-binding,--print_binding", print_binding,
                     "Print the binding plan (table, or --print-binding=json) and exit.")
          ->expected(0, 1);

  auto spank = env.find("ELASTIC_SPANK_ARGV0");
  raw->spank_wrapped = spank != env.end() && !spank->second.empty();
  std::vector<std::string>& program = raw->program;
  try {
    if (raw->spank_wrapped) {
      const char* self[] = {argv[0]};
      app.parse(1, self);
      // Slurm < 23.11: our argv[0] replaced the task's, argv[1..] are its
      // arguments. Slurm >= 23.11 prepends us (ELASTIC_SPANK_ARGV_PREPENDED=1):
      // argv[1] is the task's own program again (as slurmstepd resolved it).
      auto prepended = env.find("ELASTIC_SPANK_ARGV_PREPENDED");
      int first = prepended != env.end() && prepended->second == "1" ? 2 : 1;
      program.push_back(spank->second);
      for (int i = first; i < argc; ++i) program.emplace_back(argv[i]);
    } else {
      if (!CheckNoEmptyValues(argc, argv, err)) return ParseOutcome::kUsageError;
      app.parse(argc, argv);
      program = app.remaining();
    }
  } catch (const CLI::CallForHelp&) {
    *out = app.help();
    return ParseOutcome::kExitOk;
  } catch (const CLI::CallForVersion& e) {
    *out = e.what();
    *out += "\n";
    return ParseOutcome::kExitOk;
  } catch (const CLI::ParseError& e) {
    *err = e.what();
    return ParseOutcome::kUsageError;
  }
  for (size_t i = 0; i < kCount; ++i) {
    const OptionRow& def = table[i];
    if (def.PluginOnly()) continue;
    OptionValue& v = raw->values[i];
    v.name = opts[i]->get_name();
    if (opts[i]->count() > 0) {
      v.text = def.flag ? "1" : texts[i];
      v.source = v.name;
      v.given = true;
    } else if (auto it = env.find(PetName(def)); it != env.end()) {
      v.text = it->second;
      v.source = PetName(def);
      v.given = true;
    } else {
      v.text = def.def;
    }
  }
  for (const auto& [opt, name] : kTorchrunEnv) {
    OptionValue& v = raw->values[static_cast<size_t>(opt)];
    if (auto it = env.find(name); !v.given && it != env.end()) {
      v.text = it->second;
      v.source = name;
      v.given = true;
    }
  }
  if (completion_opt->count() > 0) {
    std::vector<std::string> names;
    for (const CLI::Option* opt : app.get_options()) {
      for (const std::string& name : opt->get_lnames()) names.push_back("--" + name);
      for (const std::string& name : opt->get_snames()) names.push_back("-" + name);
    }
    *out = CompletionScript(completion_shell, names);
    return ParseOutcome::kExitOk;
  }
  if (print_opt->count() > 0) {
    raw->print_binding = print_binding.empty() ? "table" : print_binding;
    if (!OneOf("--print-binding", raw->print_binding, {"table", "json"}, err)) {
      return ParseOutcome::kUsageError;
    }
  }
  if (!program.empty() && program.front() == "--") {
    program.erase(program.begin());
    DropDashDashAfterProgram(&program);
  } else if (!program.empty() && !raw->spank_wrapped && program.front().size() > 1 &&
             program.front()[0] == '-') {
    // CLI11's prefix mode passes unknown options through as the "program".
    *err = fmt::format("unknown option '{}' (see --help; put -- before a program whose name starts with -)",
                       program.front());
    return ParseOutcome::kUsageError;
  }
  if (!raw->spank_wrapped) DropDashDashAfterProgram(&program);
  return ParseOutcome::kRun;
}

EnvMap CurrentEnv() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = strchr(*e, '=');
    if (eq == nullptr) continue;
    env.emplace(std::string(*e, eq - *e), std::string(eq + 1));
  }
  return env;
}

}  // namespace elastic