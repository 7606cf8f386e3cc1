#include "launcher/task_record.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/log_escape.h"
#include "common/parse.h"
#include "launcher/option_values.h"

namespace elastic {

const char* const kTaskVariables[] = {
    "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
    "ZE_AFFINITY_MASK",     "SLURM_PROCID",         "SLURM_LOCALID",       nullptr};

namespace {

bool IsTaskVariable(const std::string& key) {
  for (const char* const* v = kTaskVariables; *v; ++v) {
    if (key == *v) return true;
  }
  return false;
}

bool Printable(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

}  // namespace

std::string FormatTaskRecord(const TaskRecord& record) {
  std::string out;
  for (const auto& [key, value] : record.set) out += key + "=" + value + "\n";
  if (!record.cpus.empty()) out += "cpus=" + record.cpus + "\n";
  return out;
}

bool ParseTaskRecord(const std::string& text, TaskRecord* record, std::string* err) {
  TaskRecord out;
  for (const std::string& line : Split(text, '\n')) {
    if (line.empty()) continue;
    size_t eq = line.find('=');
    std::string key = line.substr(0, eq);
    if (eq == std::string::npos || (key != "cpus" && !IsTaskVariable(key)) || !Printable(line)) {
      *err = fmt::format("task record: '{}' is not KEY=VALUE with KEY a task variable or cpus "
                         "and a printable value", EscapeForLog(line));
      return false;
    }
    std::string value = line.substr(eq + 1);
    if (key == "cpus") {
      if (!ParseCpuList("task record: cpus", value, err)) return false;
      out.cpus = value;
    } else {
      out.set[key] = value;
    }
  }
  *record = std::move(out);
  return true;
}

}  // namespace elastic
