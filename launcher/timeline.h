// `elasticrun timeline EVENTS.jsonl -o job.svg`: a picture of a job from its
// event record (job_events.h). RenderTimeline is pure (events in, SVG text out)
// and needs no plotting package: the world size over time as a step line, one
// marker per event (class "marker", its kind as a second class, a <title> that
// says what happened), each recovery shaded (from the detection to the round
// that followed, recovery_ms of that round).
#pragma once

#include <string>
#include <vector>

#include "launcher/job_events.h"

namespace elastic {

// Every line of an event record (empty lines skipped); false with *err naming
// the line number and what is wrong with it.
bool ReadEventRecord(const std::string& text, std::vector<JobEvent>* events, std::string* err);

std::string RenderTimeline(const std::vector<JobEvent>& events);

// The subcommand: argv after "timeline". Returns the exit code (2: bad usage or input).
int TimelineMain(const std::vector<std::string>& args);

}  // namespace elastic
