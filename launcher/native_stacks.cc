#include "launcher/native_stacks.h"

#include <fmt/format.h>

namespace elastic {
namespace {

struct ModeName {
  NativeStacksMode mode;
  const char* name;
};
constexpr ModeName kModes[] = {
    {NativeStacksMode::kAuto, "auto"},
    {NativeStacksMode::kPySpy, "py-spy"},
    {NativeStacksMode::kGdb, "gdb"},
    {NativeStacksMode::kOff, "off"},
};

NativeToolChoice Chosen(const char* name, const std::string& path) {
  NativeToolChoice c;
  if (path.empty()) {
    c.warning = fmt::format("--native-stacks {}: no {} on PATH: hung workers get their Python stacks only",
                            name, name);
    return c;
  }
  c.tool = {name, path};
  return c;
}

}  // namespace

bool ParseNativeStacksMode(const std::string& what, const std::string& text, NativeStacksMode* out,
                           std::string* err) {
  for (const ModeName& m : kModes) {
    if (text == m.name) {
      *out = m.mode;
      return true;
    }
  }
  *err = fmt::format("{}: '{}': expected auto, py-spy, gdb or off", what, text);
  return false;
}

const char* NativeStacksModeName(NativeStacksMode mode) {
  for (const ModeName& m : kModes) {
    if (m.mode == mode) return m.name;
  }
  return "?";
}

NativeToolChoice ChooseNativeStackTool(NativeStacksMode mode, const std::string& py_spy_path,
                                       const std::string& gdb_path) {
  switch (mode) {
    case NativeStacksMode::kOff:
      return {};
    case NativeStacksMode::kPySpy:
      return Chosen("py-spy", py_spy_path);
    case NativeStacksMode::kGdb:
      return Chosen("gdb", gdb_path);
    case NativeStacksMode::kAuto:
      if (!py_spy_path.empty()) return {{"py-spy", py_spy_path}, ""};
      if (!gdb_path.empty()) return {{"gdb", gdb_path}, ""};
      return {};
  }
  return {};
}

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string NativeStackCommand(const NativeStackTool& tool, pid_t pid) {
  if (tool.name == "py-spy") {
    return fmt::format("exec {} dump --native --pid {} </dev/null", ShellQuote(tool.path), pid);
  }
  // -nx: no ~/.gdbinit; no debuginfod downloads (a compute node has no network,
  // and a prompt would wait); no pager.
  return fmt::format("exec {} -p {} -batch -nx -iex 'set debuginfod enabled off' "
                     "-ex 'set pagination off' -ex 'thread apply all bt' </dev/null",
                     ShellQuote(tool.path), pid);
}

}  // namespace elastic
