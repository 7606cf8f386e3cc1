// The host and its clients over real loopback TCP, all on one EventLoop in one
// process: rounds, ranks, restarts, the end of the job, refusals.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "rendezvous/frame.h"
#include "rendezvous/messages.h"
#include "common/net.h"
#include "rendezvous/failover_rendezvous.h"
#include "testing/host_client_test_util.h"
#include "rendezvous/rendezvous_client.h"
#include "rendezvous/rendezvous_host.h"

namespace elastic {
namespace {

using Agent = TestAgent;

class HostClientTest : public LoopbackRendezvousTest {
 protected:
  void SetUp() override {
    settings.min_nodes = 2;
    settings.max_nodes = 3;
    settings.expected_nodes = 3;
    settings.max_restarts = 2;
    settings.token = "t0ken";
    settings.close_timeout_ms = 60'000;
  }
  int Connect() {
    SocketAddress addr;
    std::string err;
    EXPECT_TRUE(ResolveAddress("127.0.0.1", host_->port(), &addr, &err));
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr.storage), addr.len);
    EXPECT_TRUE(rc == 0 || errno == EINPROGRESS);
    return fd;
  }
  // Reads what is there (non-blocking) into *got; true once the peer closed.
  static bool ReadUntilEof(int fd, std::string* got) {
    char buf[4096];
    ssize_t n;
    while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) got->append(buf, size_t(n));
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }
  void StartThreeAndRun() {
    StartHost();
    StartClient(1);
    StartClient(2);
    for (int i = 0; i < 3; ++i) agents[i].handler->Join(2);
    ASSERT_TRUE(RunUntil([&] {
      return agents[0].rounds.size() == 1 && agents[1].rounds.size() == 1 &&
             agents[2].rounds.size() == 1;
    }));
  }
  // A worker of `rank` fails on agents[failing], which rejoins at once; true once the
  // other two were asked to restart.
  bool FailAndRejoin(int failing, int rank) {
    WorkerFailure f;
    f.global_rank = rank;
    agents[failing].handler->ReportWorkerFailure(f);
    agents[failing].handler->Join(2);
    return RunUntil([&] {
      for (int i = 0; i < 3; ++i)
        if (i != failing && agents[i].restarts.size() != 1) return false;
      return true;
    });
  }
};

TEST_F(HostClientTest, ThreeAgentsGetContiguousRanksAndTheAgentStore) {
  StartThreeAndRun();
  std::set<int> group_ranks;
  for (auto& [i, a] : agents) {
    const RoundInfo& r = a.rounds[0];
    EXPECT_EQ(r.round, 0u);
    EXPECT_EQ(r.world_size, 6);
    EXPECT_EQ(r.group_world_size, 3);
    EXPECT_EQ(r.rank_offset, 2 * r.group_rank);
    EXPECT_TRUE(r.use_agent_store);
    EXPECT_EQ(r.store_addr, "127.0.0.1");
    EXPECT_EQ(r.store_port, host_->store_port());
    group_ranks.insert(r.group_rank);
  }
  EXPECT_EQ(group_ranks, (std::set<int>{0, 1, 2}));
}

TEST_F(HostClientTest, WorkerFailureOnAClientRestartsEveryNodeIntoTheSameRound) {
  StartThreeAndRun();
  ASSERT_TRUE(FailAndRejoin(1, 3));
  EXPECT_TRUE(agents[1].restarts.empty());
  // A worker's failure, on the host's own agent and through the protocol alike: it counts
  // toward a crash loop (issue 19 item 19).
  EXPECT_EQ(agents[0].restart_causes[0], RestartCause::kWorkerFailure);
  EXPECT_EQ(agents[2].restart_causes[0], RestartCause::kWorkerFailure);
  agents[0].handler->Join(2);
  agents[2].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] {
    return agents[0].rounds.size() == 2 && agents[1].rounds.size() == 2 && agents[2].rounds.size() == 2;
  }));
  for (auto& [i, a] : agents) {
    EXPECT_EQ(a.rounds[1].round, 1u);
    EXPECT_EQ(a.rounds[1].restarts_used, 1);
    EXPECT_EQ(a.rounds[1].group_rank, a.rounds[0].group_rank);  // stable ranks
  }
}

// Slurm's verdict through the protocol (join's standby): the drained client stands by
// at the next round, the others train; cleared, it joins again and the round grows.
TEST_F(HostClientTest, ADrainedClientStandsByAtTheNextRoundAndRejoinsOnceCleared) {
  StartThreeAndRun();
  ASSERT_TRUE(FailAndRejoin(0, 0));
  agents[1].handler->SetStandBy("n2 is DRAIN in Slurm (reason: test)");
  agents[1].handler->Join(2);
  agents[2].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return agents[0].rounds.size() == 2 && agents[2].rounds.size() == 2; }));
  EXPECT_EQ(agents[1].rounds.size(), 1u);
  EXPECT_EQ(agents[0].rounds[1].group_world_size, 2);
  EXPECT_EQ(agents[0].rounds[1].spares, 1);
  agents[1].handler->SetStandBy("");
  agents[1].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return agents[0].restarts.size() == 1 && agents[2].restarts.size() == 2; }));
  agents[0].handler->Join(2);
  agents[2].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return agents[1].rounds.size() == 2 && agents[0].rounds.size() == 3; }));
  EXPECT_EQ(agents[1].rounds[1].group_world_size, 3);
  EXPECT_EQ(agents[1].rounds[1].restarts_used, 1);  // growth is no failure
}

// A client in a crash loop ends the job for every node, restarts left or not:
// each is told job_failed with the reason and the client's failure (the host's
// own agent included), and no round forms.
TEST_F(HostClientTest, EndJobFromAClientFailsTheJobEverywhereWithItsReason) {
  StartThreeAndRun();
  WorkerFailure f;
  f.global_rank = 3;
  f.host = "n2";
  agents[1].handler->ReportWorkerFailure(f);
  ASSERT_TRUE(RunUntil([&] { return agents[0].restarts.size() == 1 && agents[2].restarts.size() == 1; }));
  agents[0].handler->Join(2);
  agents[2].handler->Join(2);
  agents[1].handler->EndJob(EndReason::kCrashLoop, f, "crash loop");
  ASSERT_TRUE(RunUntil([&] {
    return agents[0].job_failed && agents[1].job_failed && agents[2].job_failed;
  }));
  for (auto& [i, a] : agents) {
    EXPECT_EQ(a.end.reason, EndReason::kCrashLoop) << i;
    EXPECT_EQ(a.failure.global_rank, 3) << i;
    EXPECT_EQ(a.rounds.size(), 1u) << i;  // round 1 never formed
  }
}

// PyTorch 2.x workers use the agent store without a per-attempt prefix: every
// round needs a store of its own, and the old one must be gone.
TEST_F(HostClientTest, EveryRoundGetsAFreshStoreAndTheOldOneIsClosed) {
  StartThreeAndRun();
  int old_port = agents[0].rounds[0].store_port;
  ASSERT_GT(old_port, 0);
  // A worker of round 0 still connected to its store (a straggler).
  SocketAddress addr;
  std::string err;
  ASSERT_TRUE(ResolveAddress("127.0.0.1", old_port, &addr, &err)) << err;
  UniqueFd straggler(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(::connect(straggler.get(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.len), 0);
  loop.RunOnce(Millis(10));
  WorkerFailure f;
  f.global_rank = 0;
  agents[0].handler->ReportWorkerFailure(f);
  agents[0].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return agents[1].restarts.size() == 1 && agents[2].restarts.size() == 1; }));
  agents[1].handler->Join(2);
  agents[2].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] {
    return agents[0].rounds.size() == 2 && agents[1].rounds.size() == 2 && agents[2].rounds.size() == 2;
  }));
  int new_port = agents[0].rounds[1].store_port;
  EXPECT_NE(new_port, old_port);
  for (auto& [i, a] : agents) EXPECT_EQ(a.rounds[1].store_port, new_port);
  EXPECT_EQ(host_->store_port(), new_port);
  // The straggler's connection was closed, and the old port takes no one.
  char byte = 0;
  ASSERT_TRUE(RunUntil([&] { return ::recv(straggler.get(), &byte, 1, MSG_DONTWAIT) == 0; }));
  UniqueFd late(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_NE(::connect(late.get(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.len), 0);
  EXPECT_EQ(errno, ECONNREFUSED);
}

TEST_F(HostClientTest, HostFinishesOnlyAfterEveryClientSucceededAndLeft) {
  StartThreeAndRun();
  agents[0].handler->ReportSucceeded();
  agents[1].handler->ReportSucceeded();
  ASSERT_TRUE(RunUntil([&] { return agents[1].done; }));
  EXPECT_FALSE(agents[0].done);  // node 2 still runs and needs the store
  agents[1].handler.reset();
  agents[2].handler->ReportSucceeded();
  ASSERT_TRUE(RunUntil([&] { return agents[2].done; }));
  agents[2].handler.reset();
  ASSERT_TRUE(RunUntil([&] { return agents[0].done; }));
}

// Nodes on the wait list (the round was full when they joined) when the
// running round finishes: the job is over for them too, not an error and not a
// wait without end; both the host's own agent and a client's.
TEST_F(HostClientTest, NodesStandingByWhenTheJobFinishesAreDoneToo) {
  settings.max_nodes = 2;
  settings.expected_nodes = 2;
  StartHost();
  StartClient(1);
  StartClient(2);
  agents[1].handler->Join(2);
  agents[2].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return agents[1].rounds.size() == 1 && agents[2].rounds.size() == 1; }));
  agents[0].handler->Join(2);  // the host's own agent: the round is full
  StartClient(3);
  agents[3].handler->Join(2);
  for (int i = 0; i < 5; ++i) loop.RunOnce(Millis(20));
  EXPECT_TRUE(agents[0].rounds.empty());
  EXPECT_TRUE(agents[3].rounds.empty());
  agents[1].handler->ReportSucceeded();
  agents[2].handler->ReportSucceeded();
  ASSERT_TRUE(RunUntil([&] { return agents[3].done || !agents[3].fatal.empty(); }));
  EXPECT_TRUE(agents[3].done);
  EXPECT_EQ(agents[3].fatal, "");
  for (int i : {1, 2, 3}) {
    ASSERT_TRUE(RunUntil([&] { return agents[i].done; }));
    agents[i].handler.reset();
  }
  ASSERT_TRUE(RunUntil([&] { return agents[0].done; }));
  EXPECT_EQ(agents[0].fatal, "");
}

TEST_F(HostClientTest, LostClientRestartsSurvivorsIntoASmallerWorld) {
  StartThreeAndRun();
  agents[2].handler.reset();  // its connection drops: an immediate leave
  ASSERT_TRUE(RunUntil([&] { return agents[0].restarts.size() == 1 && agents[1].restarts.size() == 1; }));
  // Churn: never counted toward a crash loop (issue 19 item 19).
  EXPECT_EQ(agents[0].restart_causes[0], RestartCause::kMembership);
  EXPECT_EQ(agents[1].restart_causes[0], RestartCause::kMembership);
  agents[0].handler->Join(2);
  agents[1].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return agents[0].rounds.size() == 2 && agents[1].rounds.size() == 2; }));
  EXPECT_EQ(agents[0].rounds[1].world_size, 4);
  EXPECT_EQ(agents[1].rounds[1].round, 1u);
}

// Issue 24 over the protocol: a node of a joined job (guest) ranks after the run's own
// nodes; agents that leave with notice (Shutdown: its job ends) make the others restart
// at once into a smaller world, with no restart counted (max_restarts 0 here) and no
// majority lost: 2 of 4 would be none had they been lost without notice.
TEST_F(HostClientTest, AGuestRanksLastAndLeavingWithNoticeCountsNoRestart) {
  settings.min_nodes = 1;
  settings.max_nodes = 4;
  settings.expected_nodes = 4;
  settings.max_restarts = 0;
  settings.preferred_rank = 0;
  StartHost();
  settings.guest = true;
  settings.preferred_rank = 1;
  StartClient(1);  // preferred rank 1, but a guest
  settings.guest = false;
  settings.preferred_rank = 2;
  StartClient(2);
  settings.preferred_rank = 3;
  StartClient(3);
  for (int i = 0; i < 4; ++i) agents[i].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] {
    for (int i = 0; i < 4; ++i)
      if (agents[i].rounds.size() != 1) return false;
    return true;
  }));
  EXPECT_EQ(agents[1].rounds[0].group_rank, 3);
  EXPECT_EQ(agents[2].rounds[0].group_rank, 1);
  agents[1].handler->Shutdown(0);
  agents[3].handler->Shutdown(0);
  ASSERT_TRUE(RunUntil([&] { return !agents[0].restarts.empty() && !agents[2].restarts.empty(); }));
  EXPECT_NE(agents[0].restarts[0].find("left with notice"), std::string::npos) << agents[0].restarts[0];
  agents[0].handler->Join(2);
  agents[2].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return agents[0].rounds.size() == 2 && agents[2].rounds.size() == 2; }));
  EXPECT_EQ(agents[0].rounds[1].world_size, 4);
  EXPECT_EQ(agents[0].rounds[1].restarts_used, 0);
  EXPECT_FALSE(agents[0].job_failed);
  EXPECT_EQ(agents[0].fatal, "");
}

TEST_F(HostClientTest, LosingTheHostIsFatalAndNamesIt) {
  StartThreeAndRun();
  agents[0].handler.reset();
  ASSERT_TRUE(RunUntil([&] { return !agents[1].fatal.empty() && !agents[2].fatal.empty(); }));
  EXPECT_NE(agents[1].fatal.find("lost the rendezvous host 127.0.0.1:"), std::string::npos)
      << agents[1].fatal;
}

TEST_F(HostClientTest, WrongTokenIsRefused) {
  StartHost();
  StartClient(1, "wrong");
  agents[1].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return !agents[1].fatal.empty(); }));
  EXPECT_NE(agents[1].fatal.find("refused"), std::string::npos) << agents[1].fatal;
  EXPECT_NE(agents[1].fatal.find("wrong token"), std::string::npos) << agents[1].fatal;
  EXPECT_TRUE(host_->state().nodes.empty());
}

TEST_F(HostClientTest, GarbageOnTheRendezvousPortIsDroppedAndOthersCarryOn) {
  StartHost();
  SocketAddress addr;
  std::string err;
  ASSERT_TRUE(ResolveAddress("127.0.0.1", host_->port(), &addr, &err));
  int raw = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(raw, reinterpret_cast<sockaddr*>(&addr.storage), addr.len), 0);
  const char garbage[] = "\xff\xff\xff\xffGET / HTTP/1.1\r\n\r\n";
  ASSERT_GT(send(raw, garbage, sizeof(garbage), 0), 0);
  StartClient(1);
  StartClient(2);
  for (int i = 0; i < 3; ++i) agents[i].handler->Join(1);
  ASSERT_TRUE(RunUntil([&] { return agents[2].rounds.size() == 1; }));
  char buf[4096];
  ssize_t n = 0;
  while ((n = recv(raw, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {}
  EXPECT_EQ(n, 0);  // the host closed the garbage connection
  close(raw);
  EXPECT_EQ(agents[0].rounds[0].world_size, 3);
}

TEST_F(HostClientTest, ConnectionThatNeverAuthenticatesIsDroppedAfterAuthTimeout) {
  settings.heartbeat_timeout_ms = 120'000;  // only auth_timeout may end it before the guard
  settings.auth_timeout_ms = 200;
  StartHost();
  SocketAddress addr;
  std::string err;
  ASSERT_TRUE(ResolveAddress("127.0.0.1", host_->port(), &addr, &err));
  int raw = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int rc = connect(raw, reinterpret_cast<sockaddr*>(&addr.storage), addr.len);
  ASSERT_TRUE(rc == 0 || errno == EINPROGRESS);
  bool closed = false;
  ASSERT_TRUE(RunUntil([&] {
    char buf[4096];
    ssize_t n;
    while ((n = recv(raw, buf, sizeof(buf), 0)) > 0) {}  // the challenge, then EOF
    closed = n == 0;
    return closed;
  }));
  close(raw);
}

// A stranger's frame header announcing 1 MiB - 1 used to make the host buffer
// that much per connection (1,000 connections: 1 GiB); before authentication
// the limit is auth_max_frame_bytes.
TEST_F(HostClientTest, PreAuthFrameOverTheAuthLimitClosesTheConnection) {
  settings.heartbeat_timeout_ms = 120'000;
  settings.auth_timeout_ms = 120'000;  // only the frame limit may end it before the guard
  StartHost();
  int raw = Connect();
  std::string big("\x00\x0f\xff\xff", 4);
  big += std::string(8192, 'x');
  ASSERT_EQ(send(raw, big.data(), big.size(), 0), static_cast<ssize_t>(big.size()));
  std::string got;
  ASSERT_TRUE(RunUntil([&] { return ReadUntilEof(raw, &got); }));
  close(raw);
}

// Past max_unauthenticated the host stops accepting: the next connection waits
// in the kernel's accept queue, neither closed (an agent would have to retry,
// and 16K agents connecting at once retried for tens of seconds) nor given a
// challenge, until a place frees up.
TEST_F(HostClientTest, UnauthenticatedConnectionsPastTheCapWaitUnacceptedUntilAPlaceFrees) {
  settings.max_unauthenticated = 3;
  settings.auth_timeout_ms = 120'000;
  StartHost();
  std::vector<int> strangers;
  for (int i = 0; i < 3; ++i) strangers.push_back(Connect());
  for (int fd : strangers) {  // each got its challenge: the host holds them
    std::string got;
    ASSERT_TRUE(RunUntil([&] {
      ReadUntilEof(fd, &got);
      return !got.empty();
    }));
  }
  int extra = Connect();
  for (int i = 0; i < 5; ++i) loop.RunOnce(Millis(1));  // whatever the host does with it
  char byte;
  ssize_t n = recv(extra, &byte, 1, MSG_DONTWAIT);
  int recv_errno = errno;
  EXPECT_EQ(n, -1) << (n == 0 ? "closed at accept" : "challenged past the cap");
  EXPECT_EQ(recv_errno, EAGAIN);
  close(strangers.back());  // one place frees: the waiting connection is accepted
  strangers.pop_back();
  std::string got;
  ASSERT_TRUE(RunUntil([&] {
    ReadUntilEof(extra, &got);
    return !got.empty();
  }));
  EXPECT_NE(got.find("challenge"), std::string::npos);
  close(extra);
  for (int fd : strangers) close(fd);
  // Their places free again once they are gone: a real agent joins.
  StartClient(1);
  agents[1].handler->Join(1);
  ASSERT_TRUE(RunUntil([&] { return host_->state().nodes.size() == 1 || !agents[1].fatal.empty(); }));
  EXPECT_EQ(agents[1].fatal, "");
}

// Anything from the network is logged escaped and bounded: a hello whose type
// holds a newline and escape sequences used to print a forged line.
TEST_F(HostClientTest, ForgedTypeIsLoggedEscapedAndBounded) {
  StartHost();
  int raw = Connect();
  std::string type = "hello\\nelasticrun: error: forged line\\u001b[2J" + std::string(3000, 'A');
  std::string frame = EncodeFrame("{\"type\":\"" + type + "\"}");
  ASSERT_EQ(send(raw, frame.data(), frame.size(), 0), static_cast<ssize_t>(frame.size()));
  testing::internal::CaptureStderr();
  std::string got;
  bool closed = RunUntil([&] { return ReadUntilEof(raw, &got); });
  std::string log = testing::internal::GetCapturedStderr();
  close(raw);
  ASSERT_TRUE(closed);
  EXPECT_EQ(log.find("\nelasticrun: error: forged"), std::string::npos) << log;
  EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
  EXPECT_NE(log.find("\\x0aelasticrun: error: forged line\\x1b[2J"), std::string::npos) << log;
  size_t start = 0;
  for (size_t end; (end = log.find('\n', start)) != std::string::npos; start = end + 1)
    EXPECT_LE(end - start, 400u) << log.substr(start, 80);
}

TEST_F(HostClientTest, WrongRunIdIsRefusedByTheClientWithBothIds) {
  StartHost();
  ClientConfig config;
  config.settings = settings;
  config.run_id = "other";
  config.node_name = "c";
  config.host = "127.0.0.1";
  config.port = host_->port();
  agents[1].handler = std::make_unique<RendezvousClient>(loop, config);
  agents[1].Wire();
  agents[1].handler->Join(1);
  ASSERT_TRUE(RunUntil([&] { return !agents[1].fatal.empty(); }));
  EXPECT_NE(agents[1].fatal.find("'job', not 'other'"), std::string::npos) << agents[1].fatal;
}

// ---- failover (failover_rendezvous.h): the same agents, wrapped ----

class FailoverTest : public HostClientTest {
 protected:
  void StartFailoverThree() { StartFailover(3); }
  void StartFailover(int n) {
    // Node ranks 0, 1, 2...: the successor order.
    settings.preferred_rank = 0;
    std::string err;
    auto host = MakeLoopbackHost(loop, settings, &err);
    ASSERT_TRUE(host) << err;
    int port = host->port();
    first_host = host.get();
    FailoverParams params{settings, "job", "host", ""};
    agents[0].handler = std::make_unique<FailoverRendezvous>(loop, params, std::move(host));
    agents[0].Wire();
    for (int i = 1; i < n; ++i) {
      params.node_name = "client" + std::to_string(i);
      params.settings.preferred_rank = i;
      agents[i].handler = std::make_unique<FailoverRendezvous>(loop, params, "127.0.0.1", port);
      agents[i].Wire();
    }
    for (int i = 0; i < n; ++i) agents[i].handler->Join(2);
    ASSERT_TRUE(RunUntil([&] {
      for (int i = 0; i < n; ++i)
        if (agents[i].rounds.size() != 1) return false;
      return true;
    }));
  }
  RendezvousHost* first_host = nullptr;  // agents[0]'s
};

// Issue 19 item 14: an agent started from a regime record (regime_record.h) walks the
// record's successors and joins only a host that completed the recorded round: a fresh
// host of round 0 at the first successor's address (the restarted first node binding the
// endpoint's free port) is skipped, the running regime's host is joined, as a latecomer.
TEST_F(FailoverTest, AnAgentStartedFromARecordNeverJoinsAFreshHost) {
  StartFailoverThree();
  std::string err;
  auto fresh = MakeLoopbackHost(loop, settings, &err);
  ASSERT_TRUE(fresh) << err;
  RoundInfo regime = agents[0].rounds[0];
  regime.group_rank = -1;
  regime.successors.insert(regime.successors.begin(), Successor{"fresh", "127.0.0.1", fresh->port()});
  FailoverParams params{settings, "job", "client3", ""};
  agents[3].handler = std::make_unique<FailoverRendezvous>(loop, params, regime, "had a regime here");
  agents[3].Wire();
  agents[3].handler->Join(2);
  // A full round (MAX 3): the latecomer stands by, wait-listed by the regime's host.
  ASSERT_TRUE(RunUntil([&] { return first_host->state().wait_list.size() == 1; }));
  EXPECT_TRUE(fresh->state().nodes.empty());  // refused at its challenge: never a member
  EXPECT_EQ(agents[3].fatal, "");
}

// With no successor of the record left but a fresh host, the agent walks again until
// join_timeout (failover_walk_clock_test.cc has the pauses), then ends (host lost): it
// never joins a second regime.
TEST_F(FailoverTest, AnAgentStartedFromARecordWithOnlyAFreshHostLeftEnds) {
  settings.join_timeout_ms = 1'500;
  settings.heartbeat_interval_ms = 200;
  std::string err;
  auto fresh = MakeLoopbackHost(loop, settings, &err);
  ASSERT_TRUE(fresh) << err;
  RoundInfo regime;
  regime.round = 2;
  regime.group_rank = -1;
  regime.successors.push_back(Successor{"fresh", "127.0.0.1", fresh->port()});
  FailoverParams params{settings, "job", "client3", ""};
  agents[3].handler = std::make_unique<FailoverRendezvous>(loop, params, regime, "had a regime here");
  agents[3].Wire();
  agents[3].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return !agents[3].fatal.empty(); }));
  EXPECT_NE(agents[3].fatal.find("no successor of round 2 became the rendezvous host within "
                                 "join_timeout (1.5 s"), std::string::npos)
      << agents[3].fatal;
  EXPECT_TRUE(fresh->state().nodes.empty());
}

TEST_F(FailoverTest, RoundsTellEveryMemberItsSuccessors) {
  StartFailoverThree();
  for (auto& [i, a] : agents) {
    const RoundInfo& r = a.rounds[0];
    ASSERT_EQ(r.successors.size(), 3u);
    for (const Successor& s : r.successors) {
      EXPECT_EQ(s.addr, "127.0.0.1");
      EXPECT_GT(s.port, 0) << s.name;
    }
  }
}

TEST_F(FailoverTest, LosingTheHostMakesTheNextMemberHostOfTheNextRound) {
  StartFailoverThree();
  const RoundInfo r0 = agents[1].rounds[0];
  agents[0].handler.reset();  // the host dies: its connections drop
  ASSERT_TRUE(RunUntil([&] { return agents[1].restarts.size() == 1 && agents[2].restarts.size() == 1; }));
  EXPECT_NE(agents[1].restarts[0].find("lost the rendezvous host 127.0.0.1:"), std::string::npos)
      << agents[1].restarts[0];
  agents[1].handler->Join(2);
  agents[2].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return agents[1].rounds.size() == 2 && agents[2].rounds.size() == 2; }))
      << agents[1].fatal << agents[2].fatal;
  ASSERT_EQ(r0.group_rank, 1);
  auto* successor = dynamic_cast<FailoverRendezvous*>(agents[1].handler.get());
  ASSERT_NE(successor, nullptr);
  EXPECT_TRUE(successor->hosting());
  for (int i : {1, 2}) {
    const RoundInfo& r = agents[i].rounds[1];
    EXPECT_EQ(r.round, 1u);           // round numbers go on
    EXPECT_EQ(r.restarts_used, 1);    // the loss counted
    EXPECT_EQ(r.world_size, 4);
    EXPECT_EQ(r.group_world_size, 2);
    EXPECT_EQ(r.successors.size(), 2u);
    EXPECT_EQ(r.store_port, agents[1].rounds[1].store_port);
    EXPECT_NE(r.store_port, r0.store_port);  // a fresh store, on the new host
  }
  EXPECT_TRUE(agents[1].fatal.empty() && agents[2].fatal.empty());
}

// Issue 19 item 13: a round tells every agent only its first failover_successors
// members (constant bytes per agent), yet a node ranked past them fails over with
// the others, and the new host weighs the majority against the whole round.
TEST_F(FailoverTest, NodesPastTheSuccessorsFailOverAndTheMajorityCountsTheWholeRound) {
  settings.min_nodes = 1;
  settings.max_nodes = settings.expected_nodes = 4;
  settings.failover_successors = 2;
  StartFailover(4);
  for (auto& [i, a] : agents) {
    EXPECT_EQ(a.rounds[0].group_world_size, 4);
    EXPECT_EQ(a.rounds[0].successors.size(), 2u);
  }
  ASSERT_EQ(agents[3].rounds[0].group_rank, 3);
  agents[0].handler.reset();  // the host dies
  ASSERT_TRUE(RunUntil([&] {
    return agents[1].restarts.size() == 1 && agents[2].restarts.size() == 1 &&
           agents[3].restarts.size() == 1;
  }));
  // Node 3 alone would be below a majority of the 4 (3 of them are needed):
  // the new host waits for it as for node 2.
  agents[1].handler->Join(2);
  agents[2].handler->Join(2);
  agents[3].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] {
    return agents[1].rounds.size() == 2 && agents[2].rounds.size() == 2 &&
           agents[3].rounds.size() == 2;
  })) << agents[1].fatal << agents[2].fatal << agents[3].fatal;
  for (int i : {1, 2, 3}) {
    EXPECT_EQ(agents[i].rounds[1].round, 1u);
    EXPECT_EQ(agents[i].rounds[1].group_world_size, 3);
    EXPECT_EQ(agents[i].rounds[1].successors.size(), 2u);
    EXPECT_TRUE(agents[i].fatal.empty()) << agents[i].fatal;
  }
  auto* successor = dynamic_cast<FailoverRendezvous*>(agents[1].handler.get());
  ASSERT_NE(successor, nullptr);
  EXPECT_TRUE(successor->hosting());
}

TEST_F(FailoverTest, LosingTheHostWithRestartsExhaustedFailsTheJob) {
  settings.max_restarts = 0;
  StartFailoverThree();
  agents[0].handler.reset();
  ASSERT_TRUE(RunUntil([&] { return agents[1].job_failed && agents[2].job_failed; }));
  EXPECT_NE(agents[1].failure.message.find("restarts exhausted"), std::string::npos)
      << agents[1].failure.message;
}

// A client that lost its host before any round knows no successor: fatal, as before.
TEST_F(FailoverTest, LosingTheHostBeforeAnyRoundIsFatal) {
  settings.expected_nodes = 3;
  StartHost();
  FailoverParams params{settings, "job", "client1", ""};
  agents[1].handler = std::make_unique<FailoverRendezvous>(loop, params, "127.0.0.1", host_->port());
  agents[1].Wire();
  agents[1].handler->Join(2);
  ASSERT_TRUE(RunUntil([&] { return host_->state().num_joined == 1; }));
  agents[0].handler.reset();
  ASSERT_TRUE(RunUntil([&] { return !agents[1].fatal.empty(); }));
  EXPECT_NE(agents[1].fatal.find("no successor known"), std::string::npos) << agents[1].fatal;
}


// A candidate successor (on_unreachable set) is given up, never retried, when
// it refuses, when it sends no challenge in time, or when it is stale.
class CandidateTest : public HostClientTest {
 protected:
  void StartCandidate(int port, std::optional<uint64_t> last_round_run) {
    ClientConfig config;
    config.settings = settings;
    config.run_id = "job";
    config.node_name = "survivor";
    config.host = "127.0.0.1";
    config.port = port;
    config.candidate_timeout_ms = 200;
    config.last_round_run = last_round_run;
    config.on_unreachable = [this](const std::string& why) { unreachable = why; };
    agents[1].handler = std::make_unique<RendezvousClient>(loop, config);
    agents[1].Wire();
    agents[1].handler->Join(2);
  }
  static UniqueFd Listening(int* port) {
    SocketAddress addr;
    std::string err;
    EXPECT_TRUE(ResolveAddress("127.0.0.1", 0, &addr, &err));
    int bind_errno = 0;
    UniqueFd fd = ListenOn(addr, &bind_errno, &err);
    *port = LocalPort(fd.get());
    return fd;
  }
  std::string unreachable;
};

TEST_F(CandidateTest, ARefusedConnectionIsUnreachableAtOnce) {
  int port = 0;
  { UniqueFd gone = Listening(&port); }  // closed: connections are refused
  StartCandidate(port, 0);
  ASSERT_TRUE(RunUntil([&] { return !unreachable.empty(); }));
  EXPECT_NE(unreachable.find("refused"), std::string::npos) << unreachable;
  EXPECT_TRUE(agents[1].fatal.empty());
}

TEST_F(CandidateTest, NoChallengeWithinTheCandidateTimeoutIsUnreachable) {
  int port = 0;
  UniqueFd backlog = Listening(&port);  // accepts into its backlog, never answers
  StartCandidate(port, 0);
  ASSERT_TRUE(RunUntil([&] { return !unreachable.empty(); }));
  EXPECT_NE(unreachable.find("no challenge within 0.2 s"), std::string::npos) << unreachable;
  EXPECT_TRUE(agents[1].fatal.empty());
}

TEST_F(CandidateTest, AHostNotPastTheLastRoundRunIsStale) {
  StartHost();  // forms round 0
  StartCandidate(host_->port(), 0);  // this agent already ran round 0
  ASSERT_TRUE(RunUntil([&] { return !unreachable.empty(); }));
  EXPECT_NE(unreachable.find("a former host"), std::string::npos) << unreachable;
  EXPECT_TRUE(host_->state().nodes.empty());  // it never joined
}

// The candidate dies as this agent says hello (a reset after its challenge): the next
// successor may be the host. It used to end the agent (exit 3) (the fault run, issue 19).
TEST_F(CandidateTest, AHostLostAfterItsChallengeIsUnreachable) {
  int port = 0;
  UniqueFd listening = Listening(&port);
  StartCandidate(port, std::nullopt);
  UniqueFd peer;
  ASSERT_TRUE(RunUntil([&] {
    peer = UniqueFd(::accept4(listening.get(), nullptr, nullptr, SOCK_CLOEXEC));
    return peer.get() >= 0;
  }));
  std::string challenge = EncodeFrame(fmt::format(
      R"({{"type":"challenge","version":{},"run_id":"job","nonce":"{}","auth":"token","round":1,)"
      R"("last_completed":0}})", kRendezvousProtocolVersion, std::string(32, 'a')));
  ASSERT_EQ(::write(peer.get(), challenge.data(), challenge.size()),
            static_cast<ssize_t>(challenge.size()));
  char hello[1];
  ASSERT_TRUE(RunUntil([&] { return ::recv(peer.get(), hello, 1, MSG_DONTWAIT | MSG_PEEK) > 0; }));
  linger reset{1, 0};  // close with a reset, as a killed host's kernel does to unread data
  ::setsockopt(peer.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  peer = UniqueFd();
  ASSERT_TRUE(RunUntil([&] { return !unreachable.empty() || !agents[1].fatal.empty(); }));
  EXPECT_NE(unreachable.find("lost before its welcome"), std::string::npos) << unreachable;
  EXPECT_TRUE(agents[1].fatal.empty()) << agents[1].fatal;
}

TEST_F(CandidateTest, AHostFormingTheNextRoundIsJoined) {
  StartHost();
  StartCandidate(host_->port(), std::nullopt);
  ASSERT_TRUE(RunUntil([&] { return host_->state().num_joined == 1; }));
  EXPECT_TRUE(unreachable.empty()) << unreachable;
}

}  // namespace
}  // namespace elastic
