"""The short randomized fault runs (issue 19, items 14-17 and the end of item 20;
fault_run.py says what they do): 5 agents `2:5`, a fixed seed each, worker kills,
agent SIGKILLs (and restarts with their own command lines) and SIGSTOPs, the host
among the targets. On loopback with shell workers and in network namespaces with cuts of
one or two agents (the host too) and shell workers, one agent impaired at a time
(FAULT_RUN_MAX_IMPAIRED=2: two); in network namespaces with real PyTorch workers (gloo
all_reduce, `--preload torch`), two at once.
Each fails on two groups of the run training at once, a minority training alone, a
requeue while a group trains, and an agent exit that no fault caused. The long runs:
bench/rendezvous/fault_run.py."""
import os
import shutil
import signal
import sys
import time
import unittest

import fault_check
from fault_net import can_make_namespaces
from fault_run import FaultRun
from rdzv_test_util import agent_under_guardian

SEED = int(os.environ.get("FAULT_RUN_SEED", "19"))


class FaultRunCase(unittest.TestCase):
    def run_faults(self, **options):
        run = FaultRun(SEED, agents=5, **options)
        try:
            run.run()
            print(run.report().splitlines()[0], file=sys.stderr)
            self.assertEqual(run.violations, [], run.report())
            # The seed draws every kind of fault (a run that injects nothing proves nothing).
            kinds = {f["kind"] for f in run.faults}
            for kind in ("kill_worker", "kill_agent", "stop_agent") + (("cut",) if run.net else ()):
                self.assertIn(kind, kinds, run.report())
            self.assertTrue([f for f in run.faults if f["host"]], run.report())
            if run.max_impaired >= 2:
                self.assertTrue([f for f in run.faults if f["concurrent"]], run.report())
            return run
        finally:
            run.cleanup()


class FaultRunTest(FaultRunCase):
    def test_randomized_faults_never_give_two_groups_at_once_a_requeue_or_an_unexplained_exit(self):
        # One agent impaired at a time on loopback: there every node shares one address, so
        # only one agent holds the endpoint's port and the others' failover sockets move on
        # every restart; a restarted node's records go stale after two failovers in a row,
        # which two faults at once make likely, and the run's nodes cannot tell it where the
        # host is (one address for all: docs/design.md, "Finding the host from the run's
        # nodes"). The torch run below and the long runs have two at once.
        run = self.run_faults(duration_s=60, max_impaired=1)
        self.assertGreater(run.trained_groups, 5, run.report())


@unittest.skipUnless(can_make_namespaces(), "network namespaces need root and ip")
class PartitionFaultRunTest(FaultRunCase):
    def test_randomized_faults_and_partitions_never_let_a_minority_train_or_act(self):
        # One impaired agent at a time in CI; FAULT_RUN_MAX_IMPAIRED=2 runs two at once (the
        # host too). Before the walk was walked again, two at once failed (Debian 13, seed 19):
        # the host and node 2 killed together, both restarted as latecomers of round 3, then
        # the new host and node 4 cut together: the latecomers walked round 3's successors
        # once, found none answering (two cut, two just restarted) and exited 3 ("no successor
        # of round 3 is left"); now they walk again until join_timeout (test_nodes_cut_off_
        # from_every_successor_walk_again_until_the_cut_heals below). Two at once passes alone
        # on all three systems (Debian 12: 20 groups, 0 violations), but inside the loaded
        # process suite it trained only 4 groups in 60 s (0 violations), under this test's
        # bound of 6: CI keeps one at a time.
        run = self.run_faults(duration_s=60, netns=True,
                              max_impaired=int(os.environ.get("FAULT_RUN_MAX_IMPAIRED", "1")))
        self.assertGreater(run.trained_groups, 5, run.report())


@unittest.skipUnless(can_make_namespaces(), "network namespaces need root and ip")
class TorchFaultRunTest(FaultRunCase):
    def test_randomized_faults_and_partitions_with_pytorch_workers(self):
        run = self.run_faults(duration_s=80, netns=True, torch=True, preload=True,
                              fault_every=(4.0, 8.0))
        self.assertGreater(run.reduced_groups, 3, run.report())


@unittest.skipUnless(can_make_namespaces(), "network namespaces need root and ip")
class FoundByTheFaultRunTest(unittest.TestCase):
    """What the randomized runs found, as deterministic reproductions (agents in network
    namespaces, each node with its own regime records, shell workers)."""

    def start_run(self, agents, **options):
        self.run_ = FaultRun(0, agents=agents, duration_s=0, netns=True, **options)
        self.run_.net.create()
        self.addCleanup(self.run_.cleanup)
        self.addCleanup(self.run_.net.remove)
        self.run_.t0 = time.monotonic()
        self.run_.t0_epoch = time.time()
        self.addCleanup(self.run_.stop_all)
        run = self.run_
        run.start(run.nodes[0])
        run.wait_hosting(run.nodes[0])
        for node in run.nodes[1:]:
            run.start(node)
        self.wait_group(list(range(agents)))
        return run

    def wait_group(self, nodes, since=0):
        """Until a group of exactly `nodes` (node indexes) has all its workers started
        (after epoch time `since`)."""
        run = self.run_
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            run.poll_workers()
            by_key = {}
            for w in [w for w in run.workers.values() if w["start"] > since]:
                by_key.setdefault((w["round"], w["store"]), []).append(w)
            for members in by_key.values():
                if sorted(m["node"] for m in members) == sorted(nodes) and members[0]["world"] == len(nodes):
                    return
            for k in nodes:
                self.assertIsNone(run.nodes[k].proc.poll(), "node %d exited\n%s" % (k, self.logs()))
            time.sleep(0.05)
        self.fail("no group of nodes %s within 90 s\n%s" % (nodes, self.logs()))

    def kill(self, k):
        node = self.run_.nodes[k]
        os.kill(agent_under_guardian(node.proc.pid), signal.SIGKILL)
        node.proc.wait()

    def wait_line(self, k, text):
        node = self.run_.nodes[k]
        deadline = time.monotonic() + 60
        while text not in self.run_.tail(node, 1000):
            self.assertLess(time.monotonic(), deadline, "no '%s' from node %d\n%s" % (text, k, self.logs()))
            time.sleep(0.02)

    def test_two_hosts_each_holding_part_of_a_majority_merge(self):
        # Found by the loopback run (seed 19, 60 s): the host (node 0) frozen past
        # heartbeat_timeout while node 2 is killed; node 1 takes over and is killed before
        # its round completes; node 3 takes over next; node 0 comes back, still hosting.
        # Nodes 0, 3 and 4 are a majority of round 0 (3 of 5), but node 0 held one vote
        # and node 3 two, and neither gave way (neither had completed a round past 0):
        # both waited for a majority until join_timeout and the job ended.
        run = self.start_run(5, last_call_timeout=10)  # node 1's round cannot complete
        stopped = agent_under_guardian(run.nodes[0].proc.pid)
        os.kill(stopped, signal.SIGSTOP)
        self.kill(2)
        self.wait_line(1, "taking over as the host")
        for k in (3, 4):
            self.wait_line(k, "lost the rendezvous host")  # they left node 0 too
        os.kill(stopped, signal.SIGCONT)
        self.kill(1)
        self.wait_line(3, "taking over as the host")
        self.wait_group([0, 3, 4])  # the defect: no group, then every agent exits 3

    def logs(self):
        return "\n".join("--- node %d ---\n%s" % (n.index, self.run_.tail(n, 40)) for n in self.run_.nodes)

    def test_a_node_down_through_two_failovers_finds_the_host_when_it_comes_back(self):
        # Found by the partition run (seed 11, 180 s): a node's records name the last round
        # it ran; after two failovers no successor of that round answers as the host (the
        # one host left took over on a listener it bound after a restart), so the node
        # walked them all, found none ("no successor of round 0 is left") and exited 3
        # each time it was started again: the job never grew back.
        run = self.start_run(4)
        self.kill(0)                 # node 1 takes over: round 1 of [1, 2, 3]
        self.wait_group([1, 2, 3])
        self.kill(2)                 # node 2 again, with its own command line: a new listener
        restarted = time.time()
        run.start(run.nodes[2])
        self.wait_group([1, 2, 3], since=restarted)
        self.kill(1)                 # node 2 takes over on its new listener
        self.wait_group([2, 3])
        run.start(run.nodes[0])      # node 0 back: its records name round 0 only
        self.wait_group([0, 2, 3])   # it trains with them (the defect: it exits 3)

    def test_nodes_cut_off_from_every_successor_walk_again_until_the_cut_heals(self):
        # Found by the partition run with two agents impaired at once (seed 19, Debian 13):
        # nodes that do not take over themselves (latecomers there; here the nodes ranked
        # past the round's successors) walked the successors once while the two that could
        # host were cut off, found none and exited 3 ("no successor of round 3 is left").
        # Here the successors (nodes 0 and 1: failover_successors=2) are cut off together
        # for 20 s: nodes 2-4 walk them (each silent for heartbeat_timeout +
        # heartbeat_interval, 4 s), find none, and walk again until join_timeout (60 s);
        # after the heal all five train together. The minority [0, 1] never trains alone.
        run = self.start_run(5, failover_successors=2)
        cut_at = time.time()
        for k in (0, 1):
            run.net.move(k, 1)
        for k in (2, 3, 4):
            self.wait_line(k, "walking them again")  # the defect: "no successor ... is left", exit 3
        time.sleep(max(0.0, cut_at + 20 - time.time()))
        for k in (0, 1):
            self.assertIsNone(run.nodes[k].proc.poll(), self.logs())  # the minority waits
            run.net.move(k, 0)
        healed = time.time()
        self.wait_group([0, 1, 2, 3, 4], since=healed)
        run.poll_workers()
        alone = [w for w in run.workers.values() if cut_at < w["start"] < healed and w["world"] < 3]
        self.assertEqual(alone, [], self.logs())


    def test_scancel_reaching_the_nodes_one_by_one_never_requeues(self):
        # Found by the partition run in CI (seed 19, Debian 12 and 13, loaded machine):
        # "scontrol requeue at 60.0 s", at the run's end. The end SIGTERMs the agents one by
        # one, as scancel, a time limit or preemption reach a job's nodes; the host read the
        # others' leaves as nodes lost below MIN (too_few_nodes) before its own signal came,
        # and requeued a job that was being stopped. The leaves now name their signal: below
        # MIN only through signals ends as "stopped" (exit 1), never requeued.
        run = self.start_run(5)
        host = run.nodes[0]
        for node in run.nodes[1:]:
            node.proc.send_signal(signal.SIGTERM)
            node.proc.wait(30)
            self.assertEqual(node.proc.returncode, 128 + signal.SIGTERM, self.logs())
        self.wait_line(0, "stopped by a signal")
        host.proc.wait(30)
        self.assertEqual(host.proc.returncode, 1, self.logs())
        requeues = []
        if os.path.exists(run.scontrol_log):
            with open(run.scontrol_log) as f:
                requeues = [line for line in f if "requeue" in line]
        self.assertEqual(requeues, [], self.logs())  # the defect: "requeue JOBID" from node 0
        self.assertIn("so the job is ending (no requeue)", run.tail(host, 1000))


class CheckerTest(unittest.TestCase):
    """The checker itself fails on what it must (synthetic records, no agents)."""

    def checked(self, workers, requeue_at=(), cuts=None, marks=None):
        """`workers`: (node, round, group_rank, world, store, start, end) each, from pid 100
        on; `cuts`: node -> [[start, end], ...]; `marks`: pid -> {"wrong": line}."""
        run = FaultRun(1, agents=5, duration_s=0)
        run.t0, run.t0_epoch = 0.0, 1000.0
        run.workers = {pid: dict(zip(("node", "round", "group_rank", "world", "store", "start", "end"), w))
                       for pid, w in enumerate(workers, 100)}
        for pid, mark in (marks or {}).items():
            run.workers[pid].update(mark)
        for node, spans in (cuts or {}).items():
            run.nodes[node].cuts = spans
        if requeue_at:
            with open(run.scontrol_log, "w") as f:
                f.writelines("%f requeue 77\n" % t for t in requeue_at)
        fault_check.check(run)
        shutil.rmtree(run.dir, ignore_errors=True)  # cleanup() keeps a failed run's
        return run

    def test_successive_groups_pass(self):
        run = self.checked([(0, 0, 0, 2, "a:1", 1000, 1010), (1, 0, 1, 2, "a:1", 1000.2, 1010.1),
                            (0, 1, 0, 2, "a:2", 1010.3, 1020), (1, 1, 1, 2, "a:2", 1010.4, 1020)])
        self.assertEqual((run.violations, run.trained_groups), ([], 2))

    def test_two_disjoint_groups_training_at_once_fail(self):
        # Issue 19 item 14's split brain: [0, 4] in a fresh round 0 while [1, 2, 3] train on.
        run = self.checked([(1, 3, 0, 3, "a:5", 1000, 1030), (2, 3, 1, 3, "a:5", 1000, 1030),
                            (3, 3, 2, 3, "a:5", 1000, 1030),
                            (0, 0, 0, 2, "b:9", 1010, 1025), (4, 0, 1, 2, "b:9", 1011, 1025)])
        self.assertEqual(run.overlaps, 1, run.violations)
        self.assertIn("two groups trained at once for 14.0 s: round 3", run.violations[0])

    def test_a_group_of_cut_off_nodes_only_fails(self):
        # Issue 19 item 15: nodes 3 and 4 cut off together form a round of their own.
        run = self.checked([(3, 4, 0, 2, "c:3", 1012, 1018), (4, 4, 1, 2, "c:3", 1012.5, 1018)],
                           cuts={3: [[1010, 1020]], 4: [[1010, None]]})
        self.assertEqual(run.minority_groups, 1, run.violations)
        self.assertIn("a minority trained alone: round 4 (store c:3), nodes [3, 4]", run.violations[0])

    def test_a_group_that_began_before_the_cut_passes(self):
        run = self.checked([(3, 4, 0, 2, "c:3", 1009, 1018), (4, 4, 1, 2, "c:3", 1009.5, 1018)],
                           cuts={3: [[1010, 1020]], 4: [[1010, 1020]]})
        self.assertEqual((run.violations, run.trained_groups), ([], 1))

    def test_a_wrong_all_reduce_fails(self):
        run = self.checked([(0, 2, 0, 1, "a:1", 1000, 1001)], marks={100: {"wrong": "wrong 100 1000.5 3.0"}})
        self.assertEqual(run.violations, ["a wrong all_reduce on node 0 in round 2: wrong 100 1000.5 3.0"])

    def test_a_group_missing_a_member_never_trained(self):
        run = self.checked([(0, 0, 0, 2, "a:1", 1000, 1010), (0, 1, 0, 2, "a:2", 1005, 1020)])
        self.assertEqual((run.violations, run.trained_groups), ([], 0))

    def test_a_requeue_while_a_group_trains_fails(self):
        run = self.checked([(0, 0, 0, 1, "a:1", 1000, 1010)], requeue_at=[1005])
        self.assertEqual(run.violations, ["scontrol requeue at 5.0 s while round 0 trained"])


if __name__ == "__main__":
    unittest.main()
