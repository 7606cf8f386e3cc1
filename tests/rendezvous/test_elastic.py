"""Multi-agent rendezvous on loopback with real elasticrun agents and real
PyTorch workers (gloo through the agent store): training, ranks, elasticity,
losses, authentication (the host's loss: test_failover.py). Every test ends
with nothing left."""
import os
import re
import signal
import subprocess
import unittest

from rdzv_test_util import HERE, RendezvousTestCase, free_port

TRAIN = os.path.join(HERE, "../../examples/train.py")
ENV_WORKER = os.path.join(HERE, "env_worker.sh")


class ProtocolTest(RendezvousTestCase):
    """Without torch: what every worker of a multi-agent run is told."""

    def test_four_agents_agree_on_ranks_round_and_the_agent_store(self):
        agents = [self.start_agent(4, nproc=3, extra=["--no-python"], program=ENV_WORKER)
                  for _ in range(4)]
        for agent in agents:
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
        lines = [dict(kv.split("=", 1) for kv in m.group(1).split())
                 for a in agents for m in re.finditer(r"envworker (.*)", a.output())]
        self.assertEqual(len(lines), 12, self.dump())
        self.assertEqual(sorted(int(l["rank"]) for l in lines), list(range(12)))
        for l in lines:
            self.assertEqual((l["world"], l["group_world"], l["round"], l["agent_store"]),
                             ("12", "4", "0", "True"))
            self.assertEqual(int(l["rank"]) // 3, int(l["group_rank"]))
        self.assertEqual(len({l["master"] for l in lines}), 1, "one store for everyone")
        self.assert_nothing_left()

    def test_agents_of_another_run_id_are_refused(self):
        host = self.start_agent(2, extra=["--no-python"], program=ENV_WORKER)
        self.wait_listening()
        self.run_id = "another-run"
        stray = self.start_agent(2, extra=["--no-python"], program=ENV_WORKER)
        # The challenge is unauthenticated: its run id refuses the host but never
        # ends the job as bad input (exit 2, do not requeue); as a lost host: 3.
        self.assertEqual(self.wait_exit(stray), 3, stray.output())
        self.assertIn("(--rdzv-id)", stray.output())
        os.kill(host.proc.pid, signal.SIGTERM)
        self.assertNotEqual(self.wait_exit(host), 0)
        self.assert_nothing_left()


class RequeueTest(RendezvousTestCase):
    """--requeue N without Slurm: a fake scontrol on PATH records what it is asked."""

    def lose_a_node(self, slurm_env):
        """Three agents of --nnodes=3 in a "batch job"; the third agent is SIGKILLed while
        its workers run: fewer than MIN nodes are left, but a strict majority of the round
        (with two nodes, the survivor could be the cut-off side: it never acts for the job).
        Returns the host agent, exited."""
        fake = os.path.join(self.dir, "bin")
        os.makedirs(fake, exist_ok=True)
        with open(os.path.join(fake, "scontrol"), "w") as f:
            f.write('#!/bin/sh\necho "$@" >> "%s/scontrol.log"\n' % self.dir)
        os.chmod(os.path.join(fake, "scontrol"), 0o755)
        # The job's live Comment off: the fake counts requeues.
        env = {"PATH": fake + ":" + os.environ["PATH"], "FAIL_RANK": "99", "FAIL_ROUNDS": "all",
               "PET_SLURM_COMMENT_INTERVAL": "0", **slurm_env}
        agents = []
        for i in range(3):
            agents.append(self.start_agent(3, nproc=1, program=ENV_WORKER, env=env,
                                           extra=["--no-python", "--requeue=1", "--node-rank=%d" % i]))
            if i == 0:
                self.wait_listening()
        for agent in agents:
            self.wait_for(lambda a=agent: "envworker" in a.output(), "the workers to start")
        os.kill(agents[2].agent_pid(), signal.SIGKILL)
        self.assertEqual(self.wait_exit(agents[0]), 3, self.dump())  # nodes lost
        for agent in agents[1:]:
            self.wait_exit(agent)
        self.assert_nothing_left()
        return agents[0]

    def scontrol_calls(self):
        path = os.path.join(self.dir, "scontrol.log")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return f.read().splitlines()

    def test_too_few_nodes_requeues_the_batch_job_once_and_not_past_the_limit(self):
        host = self.lose_a_node({"SLURM_JOB_ID": "77", "ENVIRONMENT": "BATCH"})
        self.assertIn("requeueing job 77 (requeue 1 of 1)", host.output())
        self.assertEqual(self.scontrol_calls(), ["requeue 77"])  # once, by the host only
        # The job's second run (Slurm counts requeues in SLURM_RESTART_COUNT): no more.
        os.remove(os.path.join(self.dir, "scontrol.log"))
        self.port = free_port()
        host = self.lose_a_node({"SLURM_JOB_ID": "77", "ENVIRONMENT": "BATCH",
                                 "SLURM_RESTART_COUNT": "1"})
        self.assertIn("not requeueing job 77: it was requeued 1 time(s), the most --requeue=1 allows",
                      host.output())
        self.assertEqual(self.scontrol_calls(), [])


class SlurmCommentTest(RendezvousTestCase):
    """Issue 25 item 2 without Slurm: the job's live Comment through a fake scontrol
    on PATH (the real one: spank.e2e's test_squeue_shows_the_live_comment)."""

    def run_three(self, scontrol_body, interval):
        fake = os.path.join(self.dir, "bin")
        os.makedirs(fake, exist_ok=True)
        with open(os.path.join(fake, "scontrol"), "w") as f:
            f.write('#!/bin/sh\necho "$@" >> "%s/scontrol.log"\n%s\n' % (self.dir, scontrol_body))
        os.chmod(os.path.join(fake, "scontrol"), 0o755)
        # The PET_ form of --slurm-comment-interval.
        env = {"PATH": fake + ":" + os.environ["PATH"], "SLURM_JOB_ID": "77", "FAIL_RANK": "3",
               "PET_SLURM_COMMENT_INTERVAL": interval}
        agents = []
        for i in range(3):
            agents.append(self.start_agent(3, program=ENV_WORKER, env=env,
                                           extra=["--no-python", "--max-restarts=2", "--node-rank=%d" % i]))
            if i == 0:
                self.wait_listening()  # node rank 0 hosts
        for agent in agents:
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
        self.assert_nothing_left()
        with open(os.path.join(self.dir, "scontrol.log")) as f:
            return agents, f.read().splitlines()

    def test_the_host_alone_writes_the_first_state_at_once_then_the_end(self):
        # An interval longer than the job: the first state, then only the final one
        # (the rounds in between wait for the interval, and the end's line replaces them).
        agents, calls = self.run_three("exit 0", "1000")
        self.assertEqual(len(calls), 2, calls)
        self.assertEqual(calls[0], "update JobId=77 Comment=elastic: starting, round 0, restarts 0/2")
        self.assertRegex(calls[1], r"^update JobId=77 Comment=elastic: ended \(done\), round 1, 3/3 nodes, "
                         r"6 workers, restarts 1/2, last: rank 3 failed on \S+ \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        for agent in agents:
            self.assertNotIn("Comment", agent.output())

    def test_an_update_not_permitted_warns_once_and_nothing_else_changes(self):
        agents, calls = self.run_three(
            'echo "slurm_update error: Access/permission denied" >&2; exit 1', "0.001")
        self.assertEqual(len(calls), 1, calls)  # never again, not even the end
        warnings = [l for l in agents[0].output().splitlines() if "live status" in l]
        self.assertEqual(len(warnings), 1, agents[0].output())
        self.assertIn("cannot write the job's live status to Slurm's Comment (scontrol update JobId=77): "
                      "exit code 1", warnings[0])
        self.assertEqual([l for a in agents[1:] for l in a.output().splitlines() if "Comment" in l], [])

    def test_off_with_0(self):
        fake_log = os.path.join(self.dir, "scontrol.log")
        open(fake_log, "w").close()
        _, calls = self.run_three("exit 0", "0")
        self.assertEqual(calls, [])


class ConsoleTest(RendezvousTestCase):
    """srun merges every node's stderr: a job-level event is one line, from node rank 0;
    the other nodes tell it only at -v."""

    def start_three(self, env, max_restarts, verbose_last=False):
        agents = []
        for i in range(3):
            extra = ["--no-python", "--max-restarts=%d" % max_restarts, "--node-rank=%d" % i]
            if verbose_last and i == 2:
                extra.append("-v")
            agents.append(self.start_agent(3, extra=extra, program=ENV_WORKER, env=env))
            if i == 0:
                self.wait_listening()  # node rank 0 hosts
        return agents

    @staticmethod
    def console(agent):
        return [l for l in agent.output().splitlines() if l.startswith("elasticrun: ")]

    def test_a_restart_is_one_line_from_node_rank_0(self):
        agents = self.start_three({"FAIL_RANK": "3"}, max_restarts=1, verbose_last=True)
        for agent in agents:
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
        first, second = self.console(agents[0]), self.console(agents[1])
        restarts = [l for l in first if "restart" in l]
        self.assertEqual(len(restarts), 1, self.dump())
        self.assertIn("the rendezvous asks for a restart: worker 3 (local rank 1)", restarts[0])
        self.assertEqual([l for l in first if "complete" in l and "round" in l],
                         ["elasticrun: rendezvous: round 0 complete: 3 node(s), 6 worker(s)",
                          "elasticrun: rendezvous: round 1 complete: 3 node(s), 6 worker(s)"],
                         self.dump())
        self.assertEqual(second, [], "node rank 1 (where rank 3 failed) tells nothing\n" + self.dump())
        verbose = agents[2].output()
        self.assertIn("the rendezvous asks for a restart: worker 3", verbose)
        self.assertNotIn("binding plan", "\n".join(first + second))
        self.assert_nothing_left()

    def test_the_failure_summary_is_printed_once(self):
        agents = self.start_three({"FAIL_RANK": "3", "FAIL_ROUNDS": "all"}, max_restarts=0)
        for agent in agents:
            self.assertNotEqual(self.wait_exit(agent), 0, self.dump())
        summaries = [i for i, a in enumerate(agents) for l in self.console(a)
                     if "job failed: first failure: rank 3 (local rank 1)" in l]
        self.assertEqual(summaries, [0], self.dump())
        self.assertEqual(self.console(agents[1]) + self.console(agents[2]), [], self.dump())
        self.assert_nothing_left()


class EndTest(RendezvousTestCase):
    """Issue 19 item 11: with no restart left the console says what happened: not
    "restarting the workers", not "rank -1 (local rank -1) ... exit code 0" for a
    lost node. Shell workers (no torch), one per agent."""

    def start(self, count, nnodes, max_restarts, worker="exec sleep 120"):
        agents = []
        up = 'touch "%s/up.$TORCHELASTIC_RESTART_COUNT.$RANK"; ' % self.dir
        for i in range(count):
            agents.append(self.start_agent(
                nnodes, nproc=1, program="/bin/sh", worker_args=["-c", up + worker],
                extra=["--no-python", "--max-restarts=%d" % max_restarts, "--node-rank=%d" % i]))
            if i == 0:
                self.wait_listening()  # node rank 0 hosts
        return agents

    def wait_up(self, round_, count):
        self.wait_for(lambda: len([f for f in os.listdir(self.dir)
                                   if f.startswith("up.%d." % round_)]) >= count,
                      "%d worker(s) of round %d" % (count, round_))

    def test_a_failure_with_no_restart_left_says_the_job_ends_not_restarting(self):
        # Rank 0 (on the host, node rank 0: the node that tells job events) fails in
        # every round; --max-restarts=1: one restart, then the end.
        agents = self.start(3, 3, 1, worker='[ "$RANK" = 0 ] && exit 1; exec sleep 120')
        for agent in agents:
            self.assertEqual(self.wait_exit(agent), 1, self.dump())
        out = agents[0].output()
        self.assertEqual(out.count("elasticrun: restarting the workers after rank 0 failed "
                                   "(restart 1 of 1, --max-restarts)"), 1, self.dump())
        self.assertIn("elasticrun: rank 0 failed and no restart is left (--max-restarts=1, 1 used): "
                      "the job ends", out)
        self.assertEqual(out.count("restarting the workers"), 1, self.dump())
        self.assertIn("job failed: first failure: rank 0 (local rank 0)", out)
        self.assert_nothing_left()

    def assert_lost_node_summary(self, agent, lost):
        out = agent.output()
        self.assertRegex(out, r"job failed: %s was lost and no restart was left: a lost node counts "
                              r"against --max-restarts, which is 0" % lost, self.dump())
        for bad in ("rank -1", "exit code 0", "1970-01-01", "restarting the workers"):
            self.assertNotIn(bad, out, self.dump())

    def test_a_lost_node_with_no_restart_left_is_named_as_lost(self):
        agents = self.start(3, "2:3", 0)
        self.wait_up(0, 3)
        os.kill(agents[2].agent_pid(), signal.SIGKILL)
        for agent in agents[:2]:
            self.assertNotEqual(self.wait_exit(agent), 0, self.dump())
        self.assert_lost_node_summary(agents[0], r"node \S+")
        self.assert_nothing_left()

    def test_a_lost_host_with_no_restart_left_is_named_as_lost(self):
        agents = self.start(3, "2:3", 0)
        self.wait_up(0, 3)
        os.kill(agents[0].agent_pid(), signal.SIGKILL)
        for agent in agents[1:]:
            self.assertNotEqual(self.wait_exit(agent), 0, self.dump())
        self.assert_lost_node_summary(agents[1], r"the rendezvous host 127\.0\.0\.1")
        self.assert_nothing_left()


class TrainingTest(RendezvousTestCase):
    preload_torch = False  # the plain start of Python workers, across agents (the first test)

    def test_three_agents_two_workers_each_all_reduce_with_contiguous_ranks(self):
        agents = [self.start_agent(3, program=TRAIN) for _ in range(3)]
        for agent in agents:
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
        seen = {}
        for i, agent in enumerate(agents):
            ranks = sorted(int(r) for r in
                           re.findall(r"rank (\d+)/6 restart 0: all_reduce sum of ranks = 15 "
                                                    r"\(expected 15\) OK", agent.output()))
            self.assertEqual(len(ranks), 2, self.dump())
            self.assertEqual(ranks[1], ranks[0] + 1, "ranks of one node are contiguous")
            self.assertEqual(ranks[0] % 2, 0)
            seen[i] = ranks
        self.assertEqual(sorted(r for rs in seen.values() for r in rs), list(range(6)))
        self.assert_nothing_left()

    def test_workers_use_the_agent_store_and_ranks_follow_node_rank(self):
        # --node-rank in reverse start order: group ranks follow it, not join order.
        self.preload_torch = True  # forked from one `import torch` per agent: 3 imports, not 6
        agents = [self.start_agent(3, extra=["--node-rank=%d" % (2 - i)]) for i in range(3)]
        for agent in agents:
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
        for i, agent in enumerate(agents):
            workers = agent.workers()
            self.assertEqual(len(workers), 2, self.dump())
            for rank, world, round_, group_rank, local_rank, agent_store, ok in workers:
                self.assertEqual((world, round_, agent_store, ok), ("6", "0", "True", "OK"))
                self.assertEqual(int(group_rank), 2 - i)
                self.assertEqual(int(rank), 2 * (2 - i) + int(local_rank))
        self.assert_nothing_left()

    def test_worker_failure_on_one_node_restarts_every_node_in_the_same_round(self):
        self.preload_torch = True  # 2 imports of torch, not 8 (2 agents, 2 workers, 2 rounds)
        agents = [self.start_agent(2, extra=["--max-restarts=1"], program=TRAIN,
                                   worker_args=["--fail-once-rank=3"]) for _ in range(2)]
        for agent in agents:
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
        for agent in agents:
            self.assertEqual(len(re.findall(r"/4 restart 1: all_reduce .* OK",
                                                          agent.output())), 2, self.dump())
        self.assert_nothing_left()


class ElasticityTest(RendezvousTestCase):
    def start_host_then(self, count, nnodes, conf, hold_rounds, max_restarts=3):
        env = {"HOLD_ROUNDS": str(hold_rounds)}
        extra = ["--max-restarts=%d" % max_restarts]
        host = self.start_agent(nnodes, conf=conf, env=env, extra=extra)
        self.wait_listening()
        others = [self.start_agent(nnodes, conf=conf, env=env, extra=extra) for _ in range(count - 1)]
        return [host] + others

    def assert_survivors_finished(self, survivors, round_):
        """Each survivor exits 0 after its 2 workers of `round_` trained in a world of 4."""
        for agent in survivors:
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
            workers = [w for w in agent.workers() if w[2] == round_]
            self.assertEqual(len(workers), 2, self.dump())
            self.assertTrue(all(w[1] == "4" and w[6] == "OK" for w in workers), self.dump())

    def test_sigkill_of_one_agent_restarts_survivors_into_world_size_4(self):
        agents = self.start_host_then(3, "2:3", "expected_nodes=3", hold_rounds=1)
        for agent in agents:
            self.wait_workers(agent, 0, 2)
        os.kill(agents[2].agent_pid(), signal.SIGKILL)
        self.assert_survivors_finished(agents[:2], "1")
        self.assertEqual(self.wait_exit(agents[2]), 128 + signal.SIGKILL)  # the guardian reports it
        self.assert_nothing_left()

    def test_worker_failure_restart_then_sigkill_of_an_agent_restarts_survivors(self):
        # The cluster demo's sequence: a worker fails on the middle node (every node
        # restarts into round 1), then the last node is lost while round 1 runs: both
        # survivors, including the node whose worker failed, restart into round 2.
        env = {"HOLD_ROUNDS": "2", "FAIL_ONCE_RANK": "3"}
        extra = ["--max-restarts=3"]
        conf = "expected_nodes=3"
        agents = [self.start_agent("2:3", conf=conf, env=env, extra=extra + ["--node-rank=0"])]
        self.wait_listening()
        agents += [self.start_agent("2:3", conf=conf, env=env, extra=extra + ["--node-rank=%d" % i])
                   for i in (1, 2)]
        for agent in agents:
            self.wait_workers(agent, 1, 2)
        os.kill(agents[2].agent_pid(), signal.SIGKILL)
        self.assert_survivors_finished(agents[:2], "2")
        self.assertIn("worker rank=3 failing on purpose", agents[1].output())
        self.assertEqual(self.wait_exit(agents[2]), 128 + signal.SIGKILL)  # the guardian reports it
        self.assert_nothing_left()

    def test_one_restart_budget_for_the_job_across_failures_on_different_nodes(self):
        # --max-restarts=2 for the job: node 1's worker fails in round 0, node 2's in
        # round 1, node 1's again in round 2. No node failed more than twice, but the
        # job's third failure ends it everywhere; every worker of every round saw the
        # same TORCHELASTIC_RESTART_COUNT on every node.
        # The failing rank waits until every rank of its round printed its worker-env
        # line (under load a slow rank would otherwise be stopped before it prints).
        env = {"HOLD_ROUNDS": "99", "FAIL_PLAN": "0:1,1:2,2:1", "PRINTED_DIR": self.dir}
        agents = [self.start_agent("3", nproc=1, conf="expected_nodes=3", env=env,
                                   extra=["--max-restarts=2", "--node-rank=0"])]
        self.wait_listening()
        agents += [self.start_agent("3", nproc=1, conf="expected_nodes=3", env=env,
                                    extra=["--max-restarts=2", "--node-rank=%d" % i]) for i in (1, 2)]
        for agent in agents:
            self.assertEqual(self.wait_exit(agent), 1, self.dump())  # restarts used up
        for node, agent in enumerate(agents):
            seen = [m.groups() for m in re.finditer(r"worker-env rank=(\d+) round=(\d+) max_restarts=(\d+)",
                                                    agent.output())]
            self.assertEqual(seen, [(str(node), str(r), "2") for r in range(3)], self.dump())
        self.assertIn("restarts used: 2 of 2", agents[0].output())  # the summary, from node rank 0
        self.assertIn("worker rank=1 failing on purpose in round 2", agents[1].output())
        self.assert_nothing_left()

    def test_late_third_agent_grows_the_running_job_to_world_size_6(self):
        agents = self.start_host_then(2, "2:3", "expected_nodes=2", hold_rounds=1)
        for agent in agents:
            self.wait_workers(agent, 0, 2)
        agents.append(self.start_agent("2:3", conf="expected_nodes=2",
                                       env={"HOLD_ROUNDS": "1"}, extra=["--max-restarts=3"]))
        for agent in agents:
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
            round1 = [w for w in agent.workers() if w[2] == "1"]
            self.assertEqual(len(round1), 2, self.dump())
            self.assertTrue(all(w[1] == "6" and w[6] == "OK" for w in round1), self.dump())
        self.assertIn("growing the job", agents[0].output())
        self.assert_nothing_left()

    def test_losing_a_node_below_min_ends_every_agent_non_zero(self):
        # 2 of 3 are left, a majority below MIN 3 (with 2 nodes the survivor could be the
        # cut-off side: it waits for join_timeout instead, test_partition.py).
        agents = self.start_host_then(3, "3:3", "expected_nodes=3", hold_rounds=99)
        for agent in agents:
            self.wait_workers(agent, 0, 2)
        os.kill(agents[2].agent_pid(), signal.SIGKILL)
        for agent in agents[:2]:
            self.assertNotEqual(self.wait_exit(agent), 0)
        self.assertIn("below the minimum of 3", agents[0].output())
        self.assert_nothing_left()

    def test_silent_agent_is_dropped_after_heartbeat_timeout_and_survivors_go_on(self):
        conf = "expected_nodes=3,heartbeat_interval=0.5,heartbeat_timeout=3"
        agents = self.start_host_then(3, "2:3", conf, hold_rounds=1)
        for agent in agents:
            self.wait_workers(agent, 0, 2)
        os.kill(agents[2].agent_pid(), signal.SIGSTOP)  # alive, connected, silent
        for agent in agents[:2]:
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
            self.assertTrue(any(w[2] == "1" and w[1] == "4" for w in agent.workers()), self.dump())
        self.assertIn("no heartbeat for 3 s", agents[0].output())
        os.kill(agents[2].agent_pid(), signal.SIGKILL)
        self.wait_exit(agents[2])
        self.assert_nothing_left()


class SparesTest(RendezvousTestCase):
    """More agents than MAX, or than the largest multiple of --node-multiple: the others
    stand by as spares and take a lost node's place (docs/user.md "Spares and allowed sizes")."""

    def start_ranked(self, nnodes, count, conf, extra=(), hold_rounds=1):
        agents = []
        for i in range(count):
            agents.append(self.start_agent(nnodes, conf=conf, env={"HOLD_ROUNDS": str(hold_rounds)},
                                           extra=["--max-restarts=3", "--node-rank=%d" % i, *extra]))
            if i == 0:
                self.wait_listening()
        return agents

    def assert_stood_by(self, agent):
        self.assertRegex(agent.output(), r"elasticrun: rendezvous: this node stands by as a spare: "
                                         r"round 0 is full \(2 node\(s\)", self.dump())
        self.assertNotIn("error", agent.output().lower(), self.dump())

    def test_a_spare_takes_the_place_of_a_lost_node_at_the_same_world_size(self):
        conf = "expected_nodes=3,heartbeat_interval=0.5,heartbeat_timeout=3"
        agents = self.start_ranked("2:2", 3, conf)
        for agent in agents[:2]:
            self.wait_workers(agent, 0, 2)
        self.wait_for(lambda: "stands by as a spare" in agents[2].output(), "the spare's line")
        self.assert_stood_by(agents[2])
        os.kill(agents[1].agent_pid(), signal.SIGKILL)
        for agent in (agents[0], agents[2]):
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
            round1 = [w for w in agent.workers() if w[2] == "1"]
            self.assertEqual(len(round1), 2, self.dump())
            self.assertTrue(all(w[1] == "4" and w[6] == "OK" for w in round1), self.dump())
        self.assertEqual([w[3] for w in agents[2].workers()], ["1", "1"], "the spare is group rank 1")
        self.assert_nothing_left()

    def test_node_multiple_2_of_3_agents_trains_on_2_and_the_spare_exits_0(self):
        agents = self.start_ranked("1:3", 3, "expected_nodes=3", extra=["--node-multiple=2"],
                                   hold_rounds=0)
        for agent in agents:
            self.assertEqual(self.wait_exit(agent), 0, self.dump())
        for agent in agents[:2]:
            self.assertEqual([(w[1], w[2], w[6]) for w in agent.workers()], [("4", "0", "OK")] * 2,
                             self.dump())
        self.assertEqual(agents[2].workers(), [], self.dump())
        self.assert_stood_by(agents[2])
        self.assert_nothing_left()


class AuthTest(RendezvousTestCase):
    def test_agent_with_a_wrong_token_is_refused_and_the_host_keeps_waiting(self):
        host = self.start_agent(2, conf="token=right-token")
        self.wait_listening()
        intruder = self.start_agent(2, conf="token=wrong-token")
        self.assertNotEqual(self.wait_exit(intruder), 0)
        self.assertIn("authentication (token) failed", intruder.output())
        self.assertIsNone(host.proc.poll())
        friend = self.start_agent(2, env={"ELASTIC_RDZV_TOKEN": "right-token"})
        self.assertEqual(self.wait_exit(friend), 0, self.dump())
        self.assertEqual(self.wait_exit(host), 0, self.dump())
        self.assert_nothing_left()


class MungeRealms:
    """A mixin of rendezvous test cases: private munged instances, each with its own key
    (a realm), stopped after the test; the test is skipped where munge is not installed."""

    def start_munged(self, name):
        d = os.path.join(self.dir, name)
        os.makedirs(d)
        os.chmod(d, 0o711)
        key = os.path.join(d, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o600)
        sock = os.path.join(d, "munge.sock")
        env = dict(os.environ, ELASTIC_RDZV_TEST_MARKER=self.marker)
        proc = subprocess.Popen(["/usr/sbin/munged", "-F", "-f", "--socket=" + sock,
                                 "--key-file=" + key, "--log-file=" + os.path.join(d, "log"),
                                 "--pid-file=" + os.path.join(d, "pid"),
                                 "--seed-file=" + os.path.join(d, "seed")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                start_new_session=True)
        self.munged.append(proc)
        self.wait_for(lambda: os.path.exists(sock), "munged to create its socket")
        return sock

    def setUp(self):
        super().setUp()
        self.munged = []
        if not os.path.exists("/usr/sbin/munged"):
            self.skipTest("munge is not installed")

    def tearDown(self):
        for proc in self.munged:
            proc.kill()
            proc.wait()
        super().tearDown()


class MungeTest(MungeRealms, RendezvousTestCase):
    """Agents prove with a munge credential; each munged here has its own key (realm)."""

    def test_agents_of_one_munge_realm_join_and_others_are_refused(self):
        realm = self.start_munged("realm")
        stranger = self.start_munged("stranger")
        host = self.start_agent(2, conf="munge_socket=" + realm)
        self.wait_listening()
        intruder = self.start_agent(2, conf="munge_socket=" + stranger)
        self.assertNotEqual(self.wait_exit(intruder), 0)
        self.assertIn("authentication (munge) failed", intruder.output())
        friend = self.start_agent(2, conf="munge_socket=" + realm)
        self.assertEqual(self.wait_exit(friend), 0, self.dump())
        self.assertEqual(self.wait_exit(host), 0, self.dump())
        self.assertIn("auth munge", host.output())
        for proc in self.munged:
            proc.kill()
            proc.wait()
        self.assert_nothing_left()


class StandaloneTest(RendezvousTestCase):
    def test_standalone_workers_use_the_agent_store(self):
        agent = self.start_agent(1, extra=["--standalone"])
        self.assertEqual(self.wait_exit(agent), 0, self.dump())
        workers = agent.workers()
        self.assertEqual(len(workers), 2, self.dump())
        self.assertTrue(all(w[5] == "True" and w[6] == "OK" for w in workers), self.dump())
        self.assert_nothing_left()


if __name__ == "__main__":
    unittest.main()
