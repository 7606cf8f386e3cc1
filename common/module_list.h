// Python module lists (elasticrun --preload, srun --elastic-preload, plugstack
// preload=): "torch,numpy,my_pkg.models": comma-separated dotted names. One
// parser for the launcher and the plugin; errors quote the whole value and the bad name (no dependency beyond the standard
// library and fmt).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace elastic {

// "" is the empty list. On error *err names `what` and the bad name.
bool ParseModuleList(std::string_view what, std::string_view text, std::vector<std::string>* out,
                     std::string* err);
std::string FormatModuleList(const std::vector<std::string>& modules);

}  // namespace elastic
