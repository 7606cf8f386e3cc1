#include "launcher/local_rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <set>

#include "common/unique_fd.h"

namespace elastic {
namespace {

class LocalRendezvous : public RendezvousHandler {
 public:
  LocalRendezvous(EventLoop& loop, const RendezvousOptions& options) : loop_(loop), options_(options) {}
  ~LocalRendezvous() override { CancelPending(); }

  void SetCallbacks(Callbacks callbacks) override { callbacks_ = std::move(callbacks); }

  void Join(int local_world_size) override {
    if (job_failed_) return;  // on_job_failed is on its way
    RoundInfo info;
    info.round = joins_++;
    info.group_rank = 0;
    info.group_world_size = 1;
    info.rank_offset = 0;
    info.world_size = local_world_size;
    info.store_addr = "127.0.0.1";
    info.store_port = PickFreePort();
    info.use_agent_store = false;
    info.restarts_used = restarts_used_;
    Post([this, info] {
      if (callbacks_.on_round) callbacks_.on_round(info);
    });
  }

  void ReportWorkerFailure(const WorkerFailure& failure) override {
    // Restarts remain: the agent stops its workers and Joins again (no callback needed).
    if (restarts_used_ < options_.max_restarts) {
      ++restarts_used_;
    } else {
      job_failed_ = true;
      Post([this, failure] {
        if (callbacks_.on_job_failed) callbacks_.on_job_failed(failure);
      });
    }
  }

  void ReportSucceeded() override {
    Post([this] {
      if (callbacks_.on_done) callbacks_.on_done();
    });
  }

  void Shutdown() override {
    shut_down_ = true;
    CancelPending();
  }

  std::string Describe() const override { return "standalone (local rendezvous)"; }

 private:
  void Post(std::function<void()> fn) {
    if (shut_down_) return;
    auto id = std::make_shared<EventLoop::TimerId>(0);
    *id = loop_.AddTimer(Millis(0), [this, fn = std::move(fn), id] {
      pending_.erase(*id);
      if (!shut_down_) fn();
    });
    pending_.insert(*id);
  }
  void CancelPending() {
    for (auto id : pending_) loop_.CancelTimer(id);
    pending_.clear();
  }

  EventLoop& loop_;
  RendezvousOptions options_;
  Callbacks callbacks_;
  uint64_t joins_ = 0;
  int restarts_used_ = 0;
  bool shut_down_ = false;
  bool job_failed_ = false;
  std::set<EventLoop::TimerId> pending_;
};

}  // namespace

int PickFreePort() {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return 0;
  socklen_t len = sizeof(addr);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

std::unique_ptr<RendezvousHandler> CreateLocalRendezvous(EventLoop& loop, const RendezvousOptions& options) {
  return std::make_unique<LocalRendezvous>(loop, options);
}

}  // namespace elastic
