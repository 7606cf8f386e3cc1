#include "rendezvous/host_discovery.h"

#include <chrono>

#include <fmt/format.h>

#include "common/net.h"
#include "rendezvous/messages.h"
#include "rendezvous/regime_record.h"

namespace elastic {

const char* PeerAnswerName(PeerAnswer answer) {
  switch (answer) {
    case PeerAnswer::kRefused: return "refused";
    case PeerAnswer::kSilent: return "silent";
    case PeerAnswer::kNoAnswer: return "no answer";
    case PeerAnswer::kOther: return "another run";
    case PeerAnswer::kFresh: return "a host forming round 0";
    case PeerAnswer::kRunning: return "a host that completed a round";
  }
  return "?";
}

PeerAnswer ClassifyPeerChallenge(std::string_view payload, std::string_view run_id) {
  Message msg;
  HostMessage host;
  if (!DecodeMessage(payload, &msg, nullptr) || !DecodeHostMessage(msg, &host, nullptr) ||
      host.kind != HostMessage::Kind::kChallenge || host.challenge.run_id != run_id)
    return PeerAnswer::kOther;
  return host.challenge.last_completed >= 0 ? PeerAnswer::kRunning : PeerAnswer::kFresh;
}

DiscoveryPlan PlanDiscovery(const std::vector<PeerAnswer>& answers, int endpoint,
                            bool may_ask_again) {
  auto indexes = [&](PeerAnswer kind) {
    std::vector<size_t> out;
    for (size_t i = 0; i < answers.size(); ++i)
      if (answers[i] == kind) out.push_back(i);
    return out;
  };
  DiscoveryPlan plan;
  std::vector<size_t> running = indexes(PeerAnswer::kRunning);
  if (!running.empty()) return {DiscoveryPlan::Kind::kWalk, running};
  if (!indexes(PeerAnswer::kFresh).empty()) return plan;
  if (endpoint >= 0 && static_cast<size_t>(endpoint) < answers.size() &&
      answers[static_cast<size_t>(endpoint)] == PeerAnswer::kSilent)
    return plan;
  std::vector<size_t> silent = indexes(PeerAnswer::kSilent);
  if (!silent.empty() && may_ask_again) return {DiscoveryPlan::Kind::kAskAgain, {}};
  if (!silent.empty()) return {DiscoveryPlan::Kind::kWalk, silent};
  return plan;
}

bool DiscoveryDecided(const std::vector<std::optional<PeerAnswer>>& answers) {
  for (const std::optional<PeerAnswer>& answer : answers) {
    if (!answer) return false;
    if (*answer == PeerAnswer::kRunning) return true;
  }
  return false;
}

namespace {

PeerAnswer AnswerOf(const FirstFrame& f, std::string_view run_id) {
  switch (f.status) {
    case FirstFrame::kRefused: return PeerAnswer::kRefused;
    case FirstFrame::kSilent: return PeerAnswer::kSilent;
    case FirstFrame::kNoAnswer: return PeerAnswer::kNoAnswer;
    case FirstFrame::kBadFrame: return PeerAnswer::kOther;
    case FirstFrame::kFrame: return ClassifyPeerChallenge(f.payload, run_id);
  }
  return PeerAnswer::kOther;
}

}  // namespace

RoundInfo DiscoveredRegime(const std::vector<std::string>& peers, int port,
                           const std::vector<size_t>& walk) {
  RoundInfo r;
  r.round = 0;
  r.group_rank = -1;
  for (size_t i : walk) r.successors.push_back(Successor{peers.at(i), peers.at(i), port});
  r.group_world_size = static_cast<int>(r.successors.size());
  return r;
}

std::vector<PeerAnswer> AskPeers(const std::vector<std::string>& peers, int port,
                                 std::string_view run_id, int timeout_ms) {
  std::vector<Successor> hosts;
  for (const std::string& p : peers) hosts.push_back(Successor{p, p, port});
  auto decide = [&](const std::vector<const FirstFrame*>& answered) {
    std::vector<std::optional<PeerAnswer>> so_far;
    for (const FirstFrame* f : answered)
      so_far.push_back(f ? std::optional<PeerAnswer>(AnswerOf(*f, run_id)) : std::nullopt);
    return DiscoveryDecided(so_far);
  };
  std::vector<PeerAnswer> answers;
  for (const FirstFrame& f : ReadFirstFrames(hosts, std::chrono::milliseconds(timeout_ms), decide))
    answers.push_back(AnswerOf(f, run_id));
  return answers;
}

}  // namespace elastic
