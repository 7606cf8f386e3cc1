// Under `srun --elastic` the user typed srun's options (--elastic-python,
// --elastic=MIN:MAX, ...), never elasticrun's flags, which the plugin passes as
// PET_* variables: messages must name what the user typed.
#pragma once

#include <string>

namespace elastic {

// `message` with each elasticrun flag that has an srun form replaced by it:
// --python -> --elastic-python, --nnodes -> --elastic=MIN:MAX, ... A flag is
// matched whole ("--python" not inside "--no-python" or "--python-x"); the rest
// of the text, a value after '=' included, is kept.
std::string SrunOptionNames(const std::string& message);

}  // namespace elastic
