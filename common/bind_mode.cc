#include "common/bind_mode.h"

#include <fmt/format.h>

namespace elastic {
namespace {

template <typename T, size_t N>
bool Lookup(const std::pair<std::string_view, T> (&names)[N], std::string_view text, T* out) {
  for (const auto& [name, value] : names) {
    if (text == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

template <typename T, size_t N>
std::string NameOf(const std::pair<std::string_view, T> (&names)[N], T value) {
  for (const auto& [name, v] : names) {
    if (v == value) return std::string(name);
  }
  return "?";
}

constexpr std::pair<std::string_view, BindMode> kBindModes[] = {
    {"auto", BindMode::kAuto},
    {"gpu", BindMode::kGpu},
    {"gpu-exclusive", BindMode::kGpuExclusive},
    {"numa", BindMode::kNuma},
    {"none", BindMode::kNone},
};

constexpr std::pair<std::string_view, MemBind> kMemBinds[] = {
    {"preferred", MemBind::kPreferred},
    {"strict", MemBind::kStrict},
    {"none", MemBind::kNone},
};

}  // namespace

bool ParseBindMode(std::string_view what, std::string_view text, BindMode* out, std::string* err) {
  if (Lookup(kBindModes, text, out)) return true;
  if (err) {
    *err = fmt::format("{}: '{}' is not a binding mode (auto, gpu, gpu-exclusive, numa, none)", what, text);
  }
  return false;
}

bool ParseMemBind(std::string_view what, std::string_view text, MemBind* out, std::string* err) {
  if (Lookup(kMemBinds, text, out)) return true;
  if (err) *err = fmt::format("{}: '{}' is not a memory policy (preferred, strict, none)", what, text);
  return false;
}

std::string BindModeName(BindMode mode) { return NameOf(kBindModes, mode); }

std::string MemBindName(MemBind membind) { return NameOf(kMemBinds, membind); }

}  // namespace elastic
