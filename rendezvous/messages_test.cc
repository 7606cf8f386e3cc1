#include "rendezvous/messages.h"

#include <gtest/gtest.h>

#include "rendezvous/frame.h"

namespace elastic {
namespace {

Message Decode(const std::string& frame) {
  FrameReader reader(1 << 20);
  reader.Feed(frame);
  std::string payload, err;
  EXPECT_EQ(reader.Next(&payload, &err), FrameReader::Result::kFrame);
  Message msg;
  EXPECT_TRUE(DecodeMessage(payload, &msg, &err)) << err;
  return msg;
}

TEST(MessagesTest, RoundInfoRoundTrips) {
  RoundInfo in;
  in.round = 4;
  in.group_rank = 1;
  in.group_world_size = 3;
  in.rank_offset = 2;
  in.world_size = 6;
  in.store_addr = "10.1.2.3";
  in.store_port = 40000;
  in.use_agent_store = true;
  in.restarts_used = 2;
  Message msg = Decode(EncodeMessage("round", RoundToJson(in)));
  EXPECT_EQ(msg.type, "round");
  RoundInfo out;
  std::string err;
  ASSERT_TRUE(RoundFromJson(msg.body, &out, &err)) << err;
  EXPECT_EQ(out.round, 4u);
  EXPECT_EQ(out.group_rank, 1);
  EXPECT_EQ(out.rank_offset, 2);
  EXPECT_EQ(out.world_size, 6);
  EXPECT_EQ(out.store_addr, "10.1.2.3");
  EXPECT_EQ(out.store_port, 40000);
  EXPECT_TRUE(out.use_agent_store);
  EXPECT_EQ(out.restarts_used, 2);
  EXPECT_EQ(out.max_restarts, -1);  // not said: the field is left out
  EXPECT_FALSE(RoundToJson(in).contains("max_restarts"));
  in.max_restarts = 3;  // the run's budget, which a joined node's agent counts against
  ASSERT_TRUE(RoundFromJson(Decode(EncodeMessage("round", RoundToJson(in))).body, &out, &err)) << err;
  EXPECT_EQ(out.max_restarts, 3);
}

TEST(MessagesTest, RoundWithOutOfRangeValuesIsRefused) {
  RoundInfo in;
  nlohmann::json j = RoundToJson(in);
  j["group_rank"] = 5;  // >= group_world_size
  RoundInfo out;
  std::string err;
  EXPECT_FALSE(RoundFromJson(j, &out, &err));
  j = RoundToJson(in);
  j["store_port"] = "http";
  EXPECT_FALSE(RoundFromJson(j, &out, &err));
  EXPECT_NE(err.find("store_port"), std::string::npos);
}

TEST(MessagesTest, WorkerFailureRoundTrips) {
  WorkerFailure in;
  in.global_rank = 3;
  in.local_rank = 1;
  in.host = "node7";
  in.exit_code = 0;
  in.signal = 9;
  in.time_unix_ms = 1234567;
  in.message = "boom";
  in.traceback = "Traceback ...\n";
  WorkerFailure out;
  std::string err;
  ASSERT_TRUE(FailureFromJson(FailureToJson(in), &out, &err)) << err;
  EXPECT_EQ(out.global_rank, 3);
  EXPECT_EQ(out.host, "node7");
  EXPECT_EQ(out.signal, 9);
  EXPECT_EQ(out.time_unix_ms, 1234567);
  EXPECT_EQ(out.traceback, "Traceback ...\n");
}

TEST(MessagesTest, InvalidUtf8IsReplacedNotThrown) {
  Message msg = Decode(EncodeMessage("fatal", {{"message", std::string("bad \xff byte")}}));
  EXPECT_EQ(msg.type, "fatal");
}

Message Raw(const std::string& json_text) {
  Message msg;
  std::string err;
  EXPECT_TRUE(DecodeMessage(json_text, &msg, &err)) << err;
  return msg;
}

// Wrongly typed or out-of-range fields are refused by the one decoder of each
// side, naming the field; nothing throws (a type_error used to abort the agent).
TEST(MessagesTest, HostMessageDecoderRefusesBadFieldsNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"error","message":1})", "'message'"},
      {R"({"type":"fatal","message":[1]})", "'message'"},
      {R"({"type":"waiting","message":{}})", "'message'"},
      {R"({"type":"waiting","message":"m","standby":3})", "'standby'"},
      {R"({"type":"waiting","message":"m","standby":{"round":-1}})", "'round'"},
      {R"({"type":"waiting","message":"m","standby":{"round":1,"spares":"1"}})", "'spares'"},
      {R"({"type":"waiting","message":"m","standby":{"round":1,"successors":[7]}})", "'successors'"},
      {R"({"type":"done","message":false})", "'message'"},
      {R"({"type":"restart","round":"1"})", "'round'"},
      {R"({"type":"restart","round":1,"reason":2})", "'reason'"},
      {R"({"type":"job_failed","failure":7})", "'failure'"},
      {R"({"type":"restart","round":1,"restarts_used":-2})", "'restarts_used'"},
      {R"({"type":"restart","round":1,"restarts_used":"1"})", "'restarts_used'"},
      {R"({"type":"fatal","message":"m","end_reason":3})", "'end_reason'"},
      {R"({"type":"job_failed","message":"m","end_reason":["nodes_lost"]})", "'end_reason'"},
      {R"({"type":"challenge","version":2,"run_id":"j","nonce":"zz","auth":"token"})", "'nonce'"},
      {R"({"type":"challenge","version":2,"run_id":"j","nonce":"00000000000000000000000000000000","auth":"rot13"})",
       "'auth'"},
      {R"({"type":"welcome","node_id":2})", "'proof'"},
      {R"({"type":"round","round":0,"group_rank":0,"group_world_size":1,"rank_offset":0,"world_size":1,"store_addr":"a","store_port":1,"restarts_used":0,"use_agent_store":"yes"})",
       "'use_agent_store'"},
      {R"({"type":"round","round":0,"group_rank":0,"group_world_size":4294967297,"rank_offset":0,"world_size":1,"store_addr":"a","store_port":1,"restarts_used":0})",
       "'group_world_size'"},
      // issue 19 item 10: MASTER_ADDR comes from here; only a host passes.
      {R"({"type":"round","round":0,"group_rank":0,"group_world_size":1,"rank_offset":0,"world_size":1,"store_addr":"a\nelasticrun: forged","store_port":1,"restarts_used":0})",
       "'store_addr' = 'a\\x0aelasticrun: forged' is not a host"},
      {R"({"type":"round","round":0,"group_rank":0,"group_world_size":1,"rank_offset":0,"world_size":1,"store_addr":"","store_port":1,"restarts_used":0})",
       "'store_addr'"},
      {R"({"type":"nonsense"})", "'nonsense'"},
      {R"({"type":"status"})", "'view'"},
  };
  for (const auto& [text, field] : cases) {
    HostMessage out;
    std::string err;
    EXPECT_FALSE(DecodeHostMessage(Raw(text), &out, &err)) << text;
    EXPECT_NE(err.find(field), std::string::npos) << text << " -> " << err;
  }
}

TEST(MessagesTest, AgentMessageDecoderRefusesBadFieldsNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"join","local_world_size":"2"})", "'local_world_size'"},
      {R"({"type":"join","local_world_size":0})", "'local_world_size'"},
      {R"({"type":"join","local_world_size":1,"standby":7})", "'standby'"},
      {R"({"type":"succeeded","round":-1})", "'round'"},
      {R"({"type":"failure","round":0})", "'failure'"},
      {R"({"type":"end_job","message":"m"})", "'end_reason'"},
      {R"({"type":"end_job","message":"m","end_reason":"from_a_later_release"})", "'end_reason'"},
      {R"({"type":"end_job","message":7,"end_reason":"crash_loop"})", "'message'"},
      {R"({"type":"end_job","end_reason":"crash_loop","failure":[]})", "'failure'"},
      {R"({"type":"hello","version":2,"run_id":"j","name":"a\nb","pid":1,"preferred_rank":-1,"nonce":"00000000000000000000000000000000","proof":""})",
       "'name'"},
      {R"({"type":"hello","version":2,"run_id":"j","name":"n","pid":1,"preferred_rank":-1,"proof":""})",
       "'nonce'"},
      {R"({"type":"hel\nlo"})", "'hel\\x0alo'"},
      {R"({"type":"leave","signal":65})", "'signal'"},
      {R"({"type":"leave","signal":-1})", "'signal'"},
      {R"({"type":"leave","signal":"TERM"})", "'signal'"},
  };
  for (const auto& [text, field] : cases) {
    AgentMessage out;
    std::string err;
    EXPECT_FALSE(DecodeAgentMessage(Raw(text), &out, &err)) << text;
    EXPECT_NE(err.find(field), std::string::npos) << text << " -> " << err;
  }
}

// leave's signal: optional (an agent of before it sends a bare leave), 1..64 when given.
TEST(MessagesTest, LeaveCarriesAnOptionalSignal) {
  AgentMessage out;
  std::string err;
  ASSERT_TRUE(DecodeAgentMessage(Raw(R"({"type":"leave"})"), &out, &err)) << err;
  EXPECT_EQ(out.kind, AgentMessage::Kind::kLeave);
  EXPECT_EQ(out.leave_signal, 0);
  ASSERT_TRUE(DecodeAgentMessage(Raw(R"({"type":"leave","signal":15})"), &out, &err)) << err;
  EXPECT_EQ(out.leave_signal, 15);
}

// join's standby (issue 19, Slurm's node state): optional, a string, bounded.
TEST(MessagesTest, JoinCarriesAnOptionalBoundedStandByReason) {
  AgentMessage out;
  std::string err;
  ASSERT_TRUE(DecodeAgentMessage(Raw(R"({"type":"join","local_world_size":2})"), &out, &err)) << err;
  EXPECT_EQ(out.standby, "");
  ASSERT_TRUE(DecodeAgentMessage(
      Raw(R"x({"type":"join","local_world_size":2,"standby":"n2 is DRAIN in Slurm (reason: test)"})x"), &out,
      &err)) << err;
  EXPECT_EQ(out.standby, "n2 is DRAIN in Slurm (reason: test)");
  std::string long_text = R"({"type":"join","local_world_size":2,"standby":")" + std::string(513, 'x') + R"("})";
  EXPECT_FALSE(DecodeAgentMessage(Raw(long_text), &out, &err));
  EXPECT_NE(err.find("'standby' is 513 bytes (at most 512)"), std::string::npos) << err;
}

// A spare's standby (round, successors, spares, restarts) and a round's spare count
// survive the round trip; a plain waiting message has no standby.
TEST(MessagesTest, StandbyAndSparesRoundTrip) {
  RoundInfo r;
  r.round = 4;
  r.restarts_used = 2;
  r.spares = 1;
  r.successors = {Successor{"n1", "10.0.0.1", 4001}, Successor{"n2", "10.0.0.2", 0}};
  r.group_world_size = 2;
  HostMessage out;
  std::string err;
  ASSERT_TRUE(DecodeHostMessage(Decode(EncodeMessage("waiting", {{"message", "full"},
                                                                 {"standby", StandbyToJson(r)}})),
                                &out, &err)) << err;
  ASSERT_TRUE(out.standby.has_value());
  EXPECT_EQ(out.text, "full");
  EXPECT_EQ(out.standby->round, 4u);
  EXPECT_EQ(out.standby->group_rank, -1);
  EXPECT_EQ(out.standby->spares, 1);
  EXPECT_EQ(out.standby->restarts_used, 2);
  ASSERT_EQ(out.standby->successors.size(), 2u);
  EXPECT_EQ(out.standby->successors[1].name, "n2");
  ASSERT_TRUE(DecodeHostMessage(Decode(EncodeMessage("waiting", {{"message", "m"}})), &out, &err));
  EXPECT_FALSE(out.standby.has_value());
  r.group_world_size = 2;
  r.world_size = 4;
  r.store_addr = "10.0.0.1";
  RoundInfo back;
  ASSERT_TRUE(RoundFromJson(RoundToJson(r), &back, &err)) << err;
  EXPECT_EQ(back.spares, 1);
  // The successors are the round's first nodes (failover_successors): fewer than
  // its size is a round, more is an error; a standby carries the size.
  r.group_world_size = 5;
  r.world_size = 10;
  ASSERT_TRUE(RoundFromJson(RoundToJson(r), &back, &err)) << err;
  EXPECT_EQ(back.group_world_size, 5);
  EXPECT_EQ(back.successors.size(), 2u);
  ASSERT_TRUE(DecodeHostMessage(Decode(EncodeMessage("waiting", {{"message", "full"},
                                                                 {"standby", StandbyToJson(r)}})),
                                &out, &err)) << err;
  EXPECT_EQ(out.standby->group_world_size, 5);
  r.group_world_size = 1;
  r.world_size = 2;
  EXPECT_FALSE(RoundFromJson(RoundToJson(r), &back, &err));
  EXPECT_NE(err.find("2 successors for 1 nodes"), std::string::npos) << err;
}

// The fields added within protocol version 3 (restarts_used, end_reason) are
// optional both ways: absent reads as "not told", an unknown reason as kUnknown.
TEST(MessagesTest, RestartCountAndEndReasonAreOptional) {
  struct Row {
    const char* text;
    HostMessage::Kind kind;
    int restarts_used;     // restart
    EndReason end_reason;  // fatal, job_failed
  };
  using K = HostMessage::Kind;
  using R = EndReason;
  const Row rows[] = {
      {R"({"type":"restart","round":2,"reason":"r"})", K::kRestart, -1, R::kUnknown},
      {R"({"type":"restart","round":2,"reason":"r","restarts_used":3})", K::kRestart, 3, R::kUnknown},
      {R"({"type":"fatal","message":"m"})", K::kFatal, -1, R::kUnknown},
      {R"({"type":"fatal","message":"m","end_reason":"too_few_nodes"})", K::kFatal, -1, R::kTooFewNodes},
      {R"({"type":"fatal","message":"m","end_reason":"no_majority"})", K::kFatal, -1, R::kNoMajority},
      {R"({"type":"fatal","message":"m","end_reason":"bad_input"})", K::kFatal, -1, R::kBadInput},
      {R"({"type":"fatal","message":"m","end_reason":"from_a_later_release"})", K::kFatal, -1,
       R::kUnknown},
      {R"({"type":"job_failed","message":"m"})", K::kJobFailed, -1, R::kUnknown},
      {R"({"type":"job_failed","message":"m","end_reason":"worker_failed"})", K::kJobFailed, -1,
       R::kWorkerFailed},
      {R"({"type":"job_failed","message":"m","end_reason":"nodes_lost"})", K::kJobFailed, -1,
       R::kNodesLost},
  };
  for (const Row& r : rows) {
    HostMessage out;
    std::string err;
    ASSERT_TRUE(DecodeHostMessage(Raw(r.text), &out, &err)) << r.text << ": " << err;
    EXPECT_EQ(out.kind, r.kind) << r.text;
    if (r.kind == K::kRestart) {
      EXPECT_EQ(out.restart.restarts_used, r.restarts_used) << r.text;
    }
    EndReason got = r.kind == K::kJobFailed ? out.job_failed.end_reason : out.end_reason;
    EXPECT_EQ(got, r.end_reason) << r.text;
  }
}

TEST(MessagesTest, EveryEndReasonNameParsesBack) {
  for (EndReason r : {EndReason::kUnknown, EndReason::kDone, EndReason::kWorkerFailed,
                      EndReason::kNodesLost, EndReason::kTooFewNodes, EndReason::kNoMajority,
                      EndReason::kHostLost, EndReason::kCrashLoop, EndReason::kBadInput,
                      EndReason::kError, EndReason::kNoProgress, EndReason::kStopped}) {
    EndReason back = EndReason::kUnknown;
    ASSERT_TRUE(ParseEndReason(EndReasonName(r), &back)) << EndReasonName(r);
    EXPECT_EQ(back, r) << EndReasonName(r);
  }
  EndReason out = EndReason::kDone;
  EXPECT_FALSE(ParseEndReason("", &out));
  EXPECT_FALSE(ParseEndReason("Too_Few_Nodes", &out));
}

TEST(MessagesTest, EndJobDecodesWithItsReasonAndFailure) {
  WorkerFailure f;
  f.global_rank = 3;
  f.host = "n2";
  f.exit_code = 1;
  AgentMessage out;
  std::string err;
  ASSERT_TRUE(DecodeAgentMessage(Decode(EncodeMessage("end_job", {{"end_reason", "crash_loop"},
                                                                   {"failure", FailureToJson(f)},
                                                                   {"message", "crash loop"}})),
                                 &out, &err)) << err;
  EXPECT_EQ(out.kind, AgentMessage::Kind::kEndJob);
  EXPECT_EQ(out.end_reason, EndReason::kCrashLoop);
  EXPECT_EQ(out.failure.global_rank, 3);
  EXPECT_EQ(out.failure.host, "n2");
  EXPECT_EQ(out.message, "crash loop");
  // Without a failure of its own (a node whose workers were only stopped).
  AgentMessage bare;
  ASSERT_TRUE(DecodeAgentMessage(Raw(R"({"type":"end_job","end_reason":"crash_loop"})"), &bare, &err)) << err;
  EXPECT_EQ(bare.failure.global_rank, -1);
}

TEST(MessagesTest, HelloDecodes) {
  AgentMessage out;
  std::string err;
  ASSERT_TRUE(DecodeAgentMessage(
      Raw(R"({"type":"hello","version":2,"run_id":"j","name":"n1","pid":7,"preferred_rank":3,"nonce":"00000000000000000000000000000000","proof":"p"})"),
      &out, &err)) << err;
  EXPECT_EQ(out.kind, AgentMessage::Kind::kHello);
  EXPECT_EQ(out.hello.name, "n1");
  EXPECT_EQ(out.hello.preferred_rank, 3);
  EXPECT_EQ(out.hello.proof, "p");
  EXPECT_FALSE(out.hello.guest);  // absent: a node of the run's own job
  ASSERT_TRUE(DecodeAgentMessage(
      Raw(R"({"type":"hello","version":2,"run_id":"j","name":"n1","pid":7,"preferred_rank":3,"nonce":"00000000000000000000000000000000","proof":"p","guest":true})"),
      &out, &err)) << err;
  EXPECT_TRUE(out.hello.guest);
  EXPECT_FALSE(out.hello.observer);  // absent: a node, or a status asker with the job's proof
  ASSERT_TRUE(DecodeAgentMessage(
      Raw(R"({"type":"hello","version":2,"run_id":"j","name":"n1","pid":7,"preferred_rank":3,"nonce":"00000000000000000000000000000000","proof":"p","observer":true})"),
      &out, &err)) << err;
  EXPECT_TRUE(out.hello.observer);
  EXPECT_FALSE(DecodeAgentMessage(
      Raw(R"({"type":"hello","version":2,"run_id":"j","name":"n1","pid":7,"preferred_rank":3,"nonce":"00000000000000000000000000000000","proof":"p","observer":1})"),
      &out, &err));
  EXPECT_NE(err.find("observer"), std::string::npos) << err;
  EXPECT_FALSE(DecodeAgentMessage(
      Raw(R"({"type":"hello","version":2,"run_id":"j","name":"n1","pid":7,"preferred_rank":3,"nonce":"00000000000000000000000000000000","proof":"p","guest":"yes"})"),
      &out, &err));
}

// `elasticrun status`: the request has no fields; the answer carries the view as
// any JSON value (its reader, launcher/job_status.h, checks it).
TEST(MessagesTest, StatusRequestAndAnswerDecode) {
  AgentMessage request;
  std::string err;
  ASSERT_TRUE(DecodeAgentMessage(Raw(R"({"type":"status"})"), &request, &err)) << err;
  EXPECT_EQ(request.kind, AgentMessage::Kind::kStatus);
  HostMessage answer;
  ASSERT_TRUE(DecodeHostMessage(Raw(R"({"type":"status","view":{"v":1,"round":3}})"), &answer, &err)) << err;
  EXPECT_EQ(answer.kind, HostMessage::Kind::kStatus);
  EXPECT_EQ(answer.status_view.at("round"), 3);
  ASSERT_TRUE(DecodeHostMessage(Raw(R"({"type":"status","view":null})"), &answer, &err)) << err;
  EXPECT_TRUE(answer.status_view.is_null());
  EXPECT_STREQ(HostMessageName(HostMessage::Kind::kStatus), "status");
}

}  // namespace
}  // namespace elastic
