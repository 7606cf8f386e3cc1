// --progress-file's text (launcher/no_progress.h). Invariants: a parsed iteration is
// non-negative and printed back it appears in the text.
#include <cstdlib>
#include <string>

#include "launcher/no_progress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::optional<int64_t> v = elastic::ParseProgress(in);
  if (v && (*v < 0 || in.find(std::to_string(*v)) == std::string_view::npos)) std::abort();
  elastic::NoProgressState state;
  if (elastic::NoteRoundProgress(1, v, &state) == static_cast<bool>(v)) std::abort();  // first known: progress
  return 0;
}
