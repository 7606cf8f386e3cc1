// Parsers for the values of elasticrun's options. Each returns false with *err
// naming `what` (the option or PET_ variable it came from) and the bad value.
#pragma once

#include <string>
#include <vector>

#include "launcher/launch_config.h"

namespace elastic {

// 1/0, true/false, yes/no, on/off (any case); "" is false.
bool ParseBool(const std::string& what, const std::string& text, bool* out, std::string* err);
// --redirects/--tee: 0-3, or LOCAL_RANK:0-3,...
bool ParseStdSpec(const std::string& what, const std::string& text, StdSpec* out, std::string* err);
// "0,2,3"; "" is the empty list.
bool ParseRankList(const std::string& what, const std::string& text, std::vector<int>* out,
                   std::string* err);
// "SIGTERM,INT,..." among TERM, INT, HUP, QUIT, USR1, USR2.
bool ParseSignals(const std::string& what, const std::string& text, std::vector<int>* out,
                  std::string* err);
// `text` is one of `choices`.
bool OneOf(const std::string& what, const std::string& text,
           std::initializer_list<const char*> choices, std::string* err);
// A CPU list like 0-3,8,10-11; "" is accepted.
bool ParseCpuList(const std::string& what, const std::string& text, std::string* err);

}  // namespace elastic
