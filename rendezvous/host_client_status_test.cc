// `elasticrun status` over the protocol (messages.h `status`): a client that asks
// gets the host observer's view and never joins; only the job's user is answered.
#include <unistd.h>

#include <gtest/gtest.h>

#include <optional>

#include "testing/host_client_test_util.h"

namespace elastic {
namespace {

class ViewObserver : public HostObserver {
 public:
  void OnHostStart(const RendezvousSettings&, const std::string&, const std::string&, const CarriedRound*,
                   TimePoint) override {}
  void OnHostStep(const HostStep&) override {}
  nlohmann::json Status(const RendezvousState& state, NodeId requester) override {
    return {{"round", state.round}, {"nodes", state.nodes.size()}, {"requester", requester}};
  }
};

class FixedOwners : public SocketOwners {
 public:
  explicit FixedOwners(SocketOwner owner) : owner_(std::move(owner)) {}
  SocketOwner PeerOwner(const sockaddr_storage&, const sockaddr_storage&) override { return owner_; }

 private:
  SocketOwner owner_;
};

class StatusRequestTest : public ::testing::Test {
 protected:
  // A host of run "job" on 127.0.0.1 with `auth`; the asking socket's owner is `owner`.
  void StartHost(AuthMethod auth, SocketOwner owner) {
    std::string err;
    host = MakeLoopbackHost(loop, settings, &err, [&](HostConfig* config) {
      config->auth = auth;
      config->observer = &observer;
      config->socket_owners = std::make_shared<FixedOwners>(std::move(owner));
    });
    ASSERT_TRUE(host) << err;
  }
  // Asks as `elasticrun status` does: Watch() with on_status set.
  void Ask() {
    client = MakeLoopbackClient(loop, settings, 0, host->port(), [this](ClientConfig* config) {
      config->node_name = "status@here";
      config->on_status = [this](const nlohmann::json& v) { view = v; };
    });
    RendezvousHandler::Callbacks cb;
    cb.on_fatal = [this](const JobEnd&, const std::string& m) { fatal = m; };
    client->SetCallbacks(cb);
    client->Watch();
    auto give_up = MonoClock::now() + std::chrono::seconds(60);  // a hang guard, not a timing assertion
    while (!view && fatal.empty() && MonoClock::now() < give_up) loop.RunOnce(Millis(100));
  }

  EventLoop loop;
  RendezvousSettings settings;
  ViewObserver observer;
  std::unique_ptr<RendezvousHost> host;
  std::unique_ptr<RendezvousClient> client;
  std::optional<nlohmann::json> view;
  std::string fatal;
};

TEST_F(StatusRequestTest, ATokenHolderGetsTheViewAndNeverJoins) {
  settings.token = "t0ken";
  StartHost(AuthMethod::kToken, SocketOwner{OwnerStatus::kFailed, 0, "not asked"});
  Ask();
  ASSERT_TRUE(view) << fatal;
  EXPECT_EQ(view->at("round"), 0);
  EXPECT_EQ(view->at("nodes"), 1);  // the asker, connected while it asks, never joined
  EXPECT_EQ(host->state().num_joined, 0u);
}

TEST_F(StatusRequestTest, WithoutAuthenticationTheJobsUserIsAnswered) {
  // A job without a token and with munge=0: where munged runs, an asker with munge
  // refuses a host without authentication (the downgrade), before the host is asked.
  settings.use_munge = false;
  StartHost(AuthMethod::kNone, SocketOwner{OwnerStatus::kFound, static_cast<uint32_t>(geteuid()), ""});
  Ask();
  ASSERT_TRUE(view) << fatal;
  EXPECT_EQ(view->at("round"), 0);
}

TEST_F(StatusRequestTest, WithoutAuthenticationAnotherUserIsRefused) {
  settings.use_munge = false;  // as above
  for (SocketOwner owner : {SocketOwner{OwnerStatus::kFound, static_cast<uint32_t>(geteuid()) + 1, ""},
                            SocketOwner{OwnerStatus::kGone, 0, "gone"},
                            SocketOwner{OwnerStatus::kUnavailable, 0, "no sock_diag"}}) {
    view.reset();
    fatal.clear();
    StartHost(AuthMethod::kNone, owner);
    Ask();
    EXPECT_FALSE(view);
    EXPECT_NE(fatal.find("the asking process is not the job's user"), std::string::npos) << fatal;
  }
}

TEST_F(StatusRequestTest, AWrongTokenIsRefusedInTheHandshake) {
  settings.token = "t0ken";
  StartHost(AuthMethod::kToken, SocketOwner{});
  settings.token = "other";
  Ask();
  EXPECT_FALSE(view);
  EXPECT_NE(fatal.find("authentication"), std::string::npos) << fatal;
}

// From outside the step (no per-step token) the asker proves its uid with munge; with
// munge off it says why before any proof (tests/rendezvous/test_hardening.py proves the
// munge path against private munged realms).
TEST_F(StatusRequestTest, WithoutTheTokenAndWithoutMungeTheAskerSaysWhy) {
  settings.token = "t0ken";
  StartHost(AuthMethod::kToken, SocketOwner{});
  settings.token.clear();
  settings.use_munge = false;
  Ask();
  EXPECT_FALSE(view);
  EXPECT_NE(fatal.find("authenticates with the step's token, which only the step's tasks hold, and munge, "
                       "which proves this user otherwise, is off (munge=0)"), std::string::npos) << fatal;
  EXPECT_EQ(host->state().num_joined, 0u);
}

}  // namespace
}  // namespace elastic
