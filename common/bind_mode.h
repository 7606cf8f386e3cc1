// How workers are bound (--bind, --membind, --elastic-bind, plugstack bind=,
// PET_BIND, PET_MEMBIND), parsed once into types shared by the plugin, the
// launcher and the binding (hwloc_binding/binding.h says what each mode does):
//   BindMode: auto | gpu | gpu-exclusive | numa | none
//   MemBind:  preferred | strict | none
#pragma once

#include <string>
#include <string_view>

namespace elastic {

enum class BindMode { kAuto, kGpu, kGpuExclusive, kNuma, kNone };
enum class MemBind { kPreferred, kStrict, kNone };

// Each parses `text`, the value of `what` (named in the error with the value
// and the choices).
bool ParseBindMode(std::string_view what, std::string_view text, BindMode* out, std::string* err);
bool ParseMemBind(std::string_view what, std::string_view text, MemBind* out, std::string* err);

// The names the parsers read back: "gpu-exclusive", "preferred", ...
std::string BindModeName(BindMode mode);
std::string MemBindName(MemBind membind);

}  // namespace elastic
