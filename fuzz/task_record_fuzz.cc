// The task record (launcher/task_record.h): a file the other tasks of a node write
// for task 0's agent. Invariants: a record that parses has only task variables,
// printable values and a CPU list, and formats to text that parses back to it; an
// error names the task record and is printable.
#include <cstdlib>
#include <string>

#include "launcher/option_values.h"
#include "launcher/task_record.h"

namespace {

bool Printable(const std::string& text) {
  for (char c : text)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  elastic::TaskRecord record;
  std::string err;
  if (!elastic::ParseTaskRecord(in, &record, &err)) {
    if (err.rfind("task record", 0) != 0 || !Printable(err)) std::abort();
    return 0;
  }
  for (const auto& [key, value] : record.set) {
    bool known = false;
    for (const char* const* v = elastic::kTaskVariables; *v; ++v) known = known || key == *v;
    if (!known || !Printable(value)) std::abort();
  }
  if (!Printable(record.cpus) || !elastic::ParseCpuList("cpus", record.cpus, &err)) std::abort();
  elastic::TaskRecord again;
  if (!elastic::ParseTaskRecord(elastic::FormatTaskRecord(record), &again, &err) ||
      again.set != record.set || again.cpus != record.cpus) {
    std::abort();
  }
  return 0;
}
