#include "rendezvous/regime_record.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "common/net.h"
#include "common/unique_fd.h"
#include "rendezvous/frame.h"
#include "rendezvous/messages.h"

namespace elastic {

std::string RegimeKey(std::string_view run_id, std::string_view endpoint) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a: a stable name, not a secret
  auto mix = [&h](std::string_view text) {
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  };
  mix(run_id);
  mix(std::string_view("\n", 1));
  mix(endpoint);
  return fmt::format("regime-{:016x}", h);
}

std::string EncodeRegimeRecord(const RoundInfo& round) {
  // The message's JSON without the frame header: the file is the payload.
  nlohmann::json j = {{"type", "waiting"}, {"message", "regime record"},
                      {"standby", StandbyToJson(round)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool DecodeRegimeRecord(std::string_view text, RoundInfo* out, std::string* err) {
  Message msg;
  HostMessage host;
  if (!DecodeMessage(text, &msg, err) || !DecodeHostMessage(msg, &host, err)) return false;
  if (host.kind != HostMessage::Kind::kWaiting || !host.standby) {
    if (err) *err = fmt::format("a '{}' message without a standby round is no regime record",
                                HostMessageName(host.kind));
    return false;
  }
  *out = *host.standby;
  return true;
}

SuccessorAnswer ClassifyChallenge(std::string_view payload, const RoundInfo& record,
                                  std::string_view run_id) {
  Message msg;
  HostMessage host;
  if (!DecodeMessage(payload, &msg, nullptr) || !DecodeHostMessage(msg, &host, nullptr) ||
      host.kind != HostMessage::Kind::kChallenge || host.challenge.run_id != run_id)
    return SuccessorAnswer::kOther;
  // A record or host without a regime id (an older one) cannot tell: as before, ours.
  if (record.regime.empty() || host.challenge.regime.empty()) return SuccessorAnswer::kOurs;
  return host.challenge.regime == record.regime ? SuccessorAnswer::kOurs : SuccessorAnswer::kOther;
}

bool RegimeMayRun(const std::vector<SuccessorAnswer>& answers) {
  for (SuccessorAnswer a : answers)
    if (a == SuccessorAnswer::kOurs || a == SuccessorAnswer::kSilent) return true;
  return false;
}

std::optional<RoundInfo> LatestRegime(const std::vector<std::string>& records) {
  std::optional<RoundInfo> latest;
  for (const std::string& text : records) {
    RoundInfo r;
    if (DecodeRegimeRecord(text, &r, nullptr) && !r.successors.empty() &&
        (!latest || r.round > latest->round))
      latest = std::move(r);
  }
  return latest;
}

// ---- the shell ----

std::string RegimeDir(const std::string& setting, std::string* err) {
  std::string dir = setting;
  if (dir.empty()) {
    // Slurm passes the submitting shell's XDG_RUNTIME_DIR on, which may not exist on
    // the compute node: use it only where it does.
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    struct stat rt{};
    bool usable = runtime && *runtime == '/' && stat(runtime, &rt) == 0 && S_ISDIR(rt.st_mode) &&
                  rt.st_uid == getuid();
    dir = usable ? fmt::format("{}/slurm-elastic", runtime)
                 : fmt::format("/tmp/slurm-elastic-{}", getuid());
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (err) *err = fmt::format("cannot create {}: {}", dir, std::strerror(errno));
    return {};
  }
  struct stat st{};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 022) != 0) {
    if (err) *err = fmt::format("{} is not a directory of uid {} that only it may write", dir,
                                getuid());
    return {};
  }
  return dir;
}

std::string RegimeRecordPath(const std::string& dir, const std::string& key) {
  return fmt::format("{}/{}.{}", dir, key, getpid());
}

bool WriteRegimeRecord(const std::string& path, const RoundInfo& round, std::string* err) {
  std::string tmp = path + ".tmp";
  std::string text = EncodeRegimeRecord(round);
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  bool ok = fd && write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (ok) ok = rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    if (err) *err = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    unlink(tmp.c_str());
  }
  return ok;
}

namespace {

// Every record file of `key` in `dir` (any agent's) with its text.
std::vector<std::pair<std::string, std::string>> ReadRecordFiles(const std::string& dir,
                                                                 const std::string& key) {
  std::vector<std::pair<std::string, std::string>> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  std::string prefix = key + ".";
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0 || name.ends_with(".tmp")) continue;
    UniqueFd fd(open((dir + "/" + name).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st{};
    // A regular file of ours, no larger than the largest round message could be.
    if (!fd || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid() ||
        st.st_size <= 0 || st.st_size > (64 << 20))
      continue;
    std::string text(static_cast<size_t>(st.st_size), '\0');
    ssize_t n = read(fd.get(), text.data(), text.size());
    if (n <= 0) continue;
    text.resize(static_cast<size_t>(n));
    out.emplace_back(dir + "/" + name, std::move(text));
  }
  closedir(d);
  return out;
}

}  // namespace

std::vector<std::string> ReadRegimeRecords(const std::string& dir, const std::string& key) {
  std::vector<std::string> out;
  for (auto& [path, text] : ReadRecordFiles(dir, key)) out.push_back(std::move(text));
  return out;
}

void ExpireRegimeRecords(const std::string& dir, const std::string& key, const RoundInfo& regime) {
  for (const auto& [path, text] : ReadRecordFiles(dir, key)) {
    RoundInfo r;
    if (!DecodeRegimeRecord(text, &r, nullptr) || r.regime == regime.regime) unlink(path.c_str());
  }
}

namespace {

// One host being asked: connecting, then reading its first frame.
struct Asking {
  UniqueFd fd;
  bool connected = false;
  FrameReader reader{4096};  // a challenge is a few hundred bytes
  FirstFrame frame;          // kSilent until it says something
  bool done = false;
};

void Step(Asking& a, short revents) {
  if (!a.connected) {
    if (ConnectError(a.fd.get()) != 0) return a.done = true, a.frame.status = FirstFrame::kRefused, void();
    a.connected = true;
    if (!(revents & POLLIN)) return;
  }
  char buf[4096];
  ssize_t n = read(a.fd.get(), buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) return a.done = true, a.frame.status = FirstFrame::kRefused, void();
  a.reader.Feed(std::string_view(buf, static_cast<size_t>(n)));
  switch (a.reader.Next(&a.frame.payload, nullptr)) {
    case FrameReader::Result::kNeedMore: return;
    case FrameReader::Result::kError: a.frame.status = FirstFrame::kBadFrame; break;
    case FrameReader::Result::kFrame: a.frame.status = FirstFrame::kFrame; break;
  }
  a.done = true;
}

}  // namespace

std::vector<FirstFrame> ReadFirstFrames(const std::vector<Successor>& hosts,
                                        std::chrono::milliseconds timeout,
                                        const FramesDecide& decide) {
  std::vector<Asking> asking(hosts.size());
  for (size_t i = 0; i < asking.size(); ++i) {
    const Successor& s = hosts[i];
    SocketAddress addr;
    if (s.port != 0 && ResolveNumericAddress(s.addr, s.port, &addr, nullptr))
      asking[i].fd = StartConnect(addr, nullptr);
    if (!asking[i].fd) asking[i].done = true, asking[i].frame.status = FirstFrame::kRefused;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::vector<pollfd> polls;
    std::vector<size_t> which;
    for (size_t i = 0; i < asking.size(); ++i) {
      if (asking[i].done) continue;
      polls.push_back(pollfd{asking[i].fd.get(), static_cast<short>(asking[i].connected ? POLLIN : POLLOUT), 0});
      which.push_back(i);
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (polls.empty() || left.count() <= 0) break;  // the rest: kSilent (connected) or kNoAnswer
    int n = poll(polls.data(), polls.size(), static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) break;
    for (size_t k = 0; k < polls.size() && n > 0; ++k)
      if (polls[k].revents != 0) Step(asking[which[k]], polls[k].revents);
    if (decide && n > 0) {
      std::vector<const FirstFrame*> answered;
      for (const Asking& a : asking) answered.push_back(a.done ? &a.frame : nullptr);
      if (decide(answered)) break;  // the rest: as at the timeout
    }
  }
  std::vector<FirstFrame> frames;
  for (Asking& a : asking) {
    if (!a.done && !a.connected) a.frame.status = FirstFrame::kNoAnswer;
    frames.push_back(std::move(a.frame));
  }
  return frames;
}

std::vector<SuccessorAnswer> AskSuccessors(const RoundInfo& round, std::string_view run_id,
                                           std::chrono::milliseconds timeout) {
  std::vector<SuccessorAnswer> answers;
  for (const FirstFrame& f : ReadFirstFrames(round.successors, timeout)) {
    switch (f.status) {
      case FirstFrame::kRefused: answers.push_back(SuccessorAnswer::kRefused); break;
      case FirstFrame::kSilent:
      case FirstFrame::kNoAnswer: answers.push_back(SuccessorAnswer::kSilent); break;  // may run
      case FirstFrame::kBadFrame: answers.push_back(SuccessorAnswer::kOther); break;
      case FirstFrame::kFrame: answers.push_back(ClassifyChallenge(f.payload, round, run_id)); break;
    }
  }
  return answers;
}

}  // namespace elastic
