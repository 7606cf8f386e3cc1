#include "launcher/timeline.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "common/log.h"
#include "launcher/failure_report.h"

namespace elastic {
namespace {

constexpr double kWidth = 960, kHeight = 360;
constexpr double kLeft = 60, kRight = 20, kTop = 40, kBottom = 50;

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 has no place for most control characters, even escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += ' ';
        else out += c;
    }
  }
  return out;
}

const char* Colour(JobEventKind kind) {
  switch (kind) {
    case JobEventKind::kJobStart: return "#555555";
    case JobEventKind::kRound: return "#1f77b4";
    case JobEventKind::kWorkerFailure: return "#d62728";
    case JobEventKind::kNodeLost: return "#ff7f0e";
    case JobEventKind::kNodeJoined: return "#2ca02c";
    case JobEventKind::kEnd: return "#000000";
    case JobEventKind::kWorkerHung: return "#9467bd";
    case JobEventKind::kHealthCheck: return "#8c564b";
    case JobEventKind::kRequeue: return "#e377c2";
  }
  return "#999999";
}

std::string Describe(const JobEvent& e) {
  std::string what = fmt::format("{} {}", FormatUnixMillis(e.time_unix_ms), JobEventKindName(e.kind));
  switch (e.kind) {
    case JobEventKind::kJobStart:
      return what + fmt::format(" on {}{}", e.host, e.takeover ? " (takeover)" : "");
    case JobEventKind::kRound:
      what += fmt::format(" {} ({}): {} node(s), {} worker(s)", e.round, e.reason, e.nodes, e.world_size);
      if (e.recovery_ms) what += fmt::format(", recovered in {:.1f} s", *e.recovery_ms / 1000.0);
      return what;
    case JobEventKind::kWorkerFailure:
      return e.failure ? what + fmt::format(": rank {} on {}: {}", e.failure->global_rank, e.failure->host,
                                            DescribeExit(*e.failure))
                       : what;
    case JobEventKind::kNodeLost:
    case JobEventKind::kNodeJoined:
      return what + ": " + e.node + (e.reason.empty() ? "" : " (" + e.reason + ")");
    case JobEventKind::kEnd:
      return what + ": " + e.reason + (e.message.empty() ? "" : ": " + e.message);
    case JobEventKind::kWorkerHung:
    case JobEventKind::kHealthCheck:
    case JobEventKind::kRequeue:
      return what + " on " + e.node + ": " + e.reason + (e.message.empty() ? "" : ": " + e.message);
  }
  return what;
}

// The few words written beside a marker (rounds: none, the line says it).
std::string ShortLabel(const JobEvent& e) {
  constexpr size_t kMax = 40;
  std::string label;
  switch (e.kind) {
    case JobEventKind::kWorkerFailure:
      if (e.failure) label = fmt::format("rank {}: {}", e.failure->global_rank, DescribeExit(*e.failure));
      break;
    case JobEventKind::kNodeLost: label = e.node + " lost"; break;
    case JobEventKind::kNodeJoined: label = e.node + " joined"; break;
    case JobEventKind::kEnd: label = "end: " + e.reason; break;
    case JobEventKind::kJobStart:
      if (e.takeover) label = "takeover: " + e.host;
      break;
    case JobEventKind::kRound: break;
    case JobEventKind::kWorkerHung:
      label = e.failure ? fmt::format("rank {} hung", e.failure->global_rank) : e.node + " hung";
      break;
    case JobEventKind::kHealthCheck:
      label = e.node + " health check " + (e.reason == "passes" ? "passes" : "fails");
      break;
    case JobEventKind::kRequeue: label = e.reason; break;
  }
  return label.size() > kMax ? label.substr(0, kMax) + "..." : label;
}

}  // namespace

bool ReadEventRecord(const std::string& text, std::vector<JobEvent>* events, std::string* err) {
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    JobEvent e;
    std::string why;
    if (!DecodeJobEvent(line, &e, &why)) {
      *err = fmt::format("line {}: {}", number, why);
      return false;
    }
    events->push_back(std::move(e));
  }
  return true;
}

std::string RenderTimeline(const std::vector<JobEvent>& events) {
  int64_t t0 = 0, t1 = 1;
  int max_ws = 1;
  if (!events.empty()) {
    t0 = t1 = events.front().time_unix_ms;
    for (const JobEvent& e : events) {
      t0 = std::min(t0, e.time_unix_ms - e.recovery_ms.value_or(0));
      t1 = std::max(t1, e.time_unix_ms);
      max_ws = std::max(max_ws, e.world_size);
    }
  }
  if (t1 <= t0) t1 = t0 + 1000;
  double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x = [&](int64_t t) { return kLeft + plot_w * static_cast<double>(t - t0) / static_cast<double>(t1 - t0); };
  auto y = [&](int ws) { return kTop + plot_h * (1.0 - static_cast<double>(ws) / max_ws); };

  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, kHeight);
  std::string run = events.empty() ? "" : events.front().run_id;
  out += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\">elastic job {}: world size over time</text>\n",
                     kLeft, XmlEscape(run));
  // Recoveries first, under the rest.
  for (const JobEvent& e : events) {
    if (e.kind != JobEventKind::kRound || !e.recovery_ms) continue;
    double a = x(e.time_unix_ms - *e.recovery_ms), b = x(e.time_unix_ms);
    out += fmt::format("<rect class=\"recovery\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" "
                       "fill=\"#d62728\" fill-opacity=\"0.15\"><title>recovery {:.1f} s</title></rect>\n",
                       a, kTop, std::max(b - a, 1.0), plot_h, *e.recovery_ms / 1000.0);
  }
  // Axes: world size 0..max, time in seconds from the first event.
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>\n", kLeft, kTop,
                     kTop + plot_h);
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#333\"/>\n", kLeft,
                     kTop + plot_h, kLeft + plot_w);
  for (int i = 0; i <= 4; ++i) {
    int ws = max_ws * i / 4;
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, y(ws) + 4, ws);
    int64_t t = t0 + (t1 - t0) * i / 4;
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.0f} s</text>\n", x(t),
                       kTop + plot_h + 18, static_cast<double>(t - t0) / 1000.0);
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\">workers (time from the first event; shaded: recovery)</text>\n",
                     kLeft, kHeight - 10);
  // The world size: a step line from round to round, 0 after a failure, a loss or the end.
  std::string path;
  int ws = 0;
  for (const JobEvent& e : events) {
    int next = ws;
    if (e.kind == JobEventKind::kRound) next = e.world_size;
    else if (e.kind != JobEventKind::kJobStart && e.kind != JobEventKind::kNodeJoined) next = 0;
    if (path.empty()) path = fmt::format("M{:.1f},{:.1f}", x(e.time_unix_ms), y(ws));
    path += fmt::format(" H{:.1f} V{:.1f}", x(e.time_unix_ms), y(next));
    ws = next;
  }
  if (!path.empty())
    out += fmt::format("<path class=\"world-size\" d=\"{}\" fill=\"none\" stroke=\"#1f77b4\" "
                       "stroke-width=\"2\"/>\n", path);
  // One marker per event; failures, losses, joins and the end also get a short label.
  ws = 0;
  int label_row = 0;
  for (const JobEvent& e : events) {
    if (e.kind == JobEventKind::kRound) ws = e.world_size;
    std::string label = ShortLabel(e);
    if (!label.empty()) {
      bool right = x(e.time_unix_ms) > kWidth - 200;  // near the right edge: written leftwards
      out += fmt::format("<text class=\"label\" x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\" font-size=\"11\" "
                         "text-anchor=\"{}\">{}</text>\n",
                         x(e.time_unix_ms) + (right ? -7 : 7), kTop + 12 + 13 * (label_row++ % 4),
                         Colour(e.kind), right ? "end" : "start", XmlEscape(label));
    }
    out += fmt::format("<circle class=\"marker {}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\">"
                       "<title>{}</title></circle>\n",
                       JobEventKindName(e.kind), x(e.time_unix_ms), y(ws), Colour(e.kind),
                       XmlEscape(Describe(e)));
  }
  out += "</svg>\n";
  return out;
}

int TimelineMain(const std::vector<std::string>& args) {
  std::string input, output;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "-o" || a == "--output") && i + 1 < args.size()) {
      output = args[++i];
    } else if (a.rfind("--output=", 0) == 0) {
      output = a.substr(9);
    } else if (a == "-h" || a == "--help") {
      fmt::print("usage: elasticrun timeline EVENTS.jsonl -o OUT.svg\n"
                 "Draws the job's event record (--events, LOG_DIR/events.jsonl) as an SVG picture:\n"
                 "world size over time, one marker per event, recoveries shaded.\n");
      return 0;
    } else if (input.empty() && (a.empty() || a[0] != '-')) {
      input = a;
    } else {
      Log(LogLevel::kError, "timeline: unexpected argument '{}' (usage: elasticrun timeline "
          "EVENTS.jsonl -o OUT.svg)", a);
      return 2;
    }
  }
  if (input.empty() || output.empty()) {
    Log(LogLevel::kError, "timeline: usage: elasticrun timeline EVENTS.jsonl -o OUT.svg");
    return 2;
  }
  std::ifstream in(input);
  if (!in) {
    Log(LogLevel::kError, "timeline: cannot read '{}': {}", input, strerror(errno));
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::vector<JobEvent> events;
  std::string err;
  if (!ReadEventRecord(text.str(), &events, &err)) {
    Log(LogLevel::kError, "timeline: '{}': {}", input, err);
    return 2;
  }
  std::ofstream out(output);
  out << RenderTimeline(events);
  out.close();
  if (!out) {
    Log(LogLevel::kError, "timeline: cannot write '{}': {}", output, strerror(errno));
    return 2;
  }
  return 0;
}

}  // namespace elastic
