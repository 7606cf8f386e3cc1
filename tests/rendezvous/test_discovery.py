"""Finding the run's current host after a failover (issue 19 item 17): real elasticrun
agents with real PyTorch workers (DiscoveryTorchTest) or workers that sum their ranks
through the agent's store (DiscoveryTest), each agent a machine of its own (a network namespace,
its own regime-record directory), told the run's nodes as the plugin tells them
(ELASTIC_RDZV_PEERS). The host is killed, the others fail over; an agent started
afterwards with only the endpoint (the killed node brought back without its records, a
new node of a scale-up) used to find nothing at the endpoint, or host a second regime
there: now it finds the node that took over and trains in its regime. Needs root."""
import os
import signal
import subprocess
import unittest

from rdzv_test_util import ELASTICRUN, PYTHON, WORKER
from test_partition import NetnsTestCase

CONF = ("munge=0,heartbeat_interval=0.5,heartbeat_timeout=10,join_timeout=60,"
        "last_call_timeout=30")  # round 0 waits for all 3 (expected_nodes), however slow


class DiscoveryCase(NetnsTestCase):
    """How the discovery tests start nodes and what they check (no tests of its own)."""
    def start_node(self, k, nnodes, expected, peers, fresh_records=False):
        """Node k's agent (10.231.0.k+1), with the endpoint 10.231.0.1 and node rank k."""
        if "%s%d" % (self.tag, k) not in self.nodes:
            self.add_node(k)
        ns, dev = "%s%d" % (self.tag, k), "%s%d" % (self.tag, k)
        state = os.path.join(self.dir, "state%d" % k)
        if fresh_records:
            subprocess.run(["rm", "-rf", state], check=True)
        env = dict(os.environ, ELASTIC_RDZV_TEST_MARKER=self.marker, HOLD_ROUNDS="100",
                   GLOO_SOCKET_IFNAME=dev, ELASTIC_RDZV_PEERS=",".join(
                       "10.231.0.%d" % (p + 1) for p in range(peers)), **self.worker_env())
        env.pop("OMP_NUM_THREADS", None)
        args = ["ip", "netns", "exec", ns, ELASTICRUN, "--nnodes=%s" % nnodes,
                "--nproc-per-node=1", "--rdzv-backend=c10d",
                "--rdzv-endpoint=10.231.0.1:%d" % self.port, "--rdzv-id=" + self.run_id,
                "--python=" + PYTHON, "--max-restarts=10", "--node-rank=%d" % k,
                "--rdzv-conf=%s,expected_nodes=%d,state_dir=%s" % (CONF, expected, state),
                *self.preload_args(WORKER), WORKER]
        return self.spawn(args, env)

    def assert_in_the_regime(self, agent, world):
        """Trained in the running regime (never a round 0 of its own) at `world` nodes."""
        self.assertIsNone(agent.proc.poll(), self.dump())
        self.assertNotIn("hosting:", agent.output(), self.dump())
        self.assertIn("runs on its nodes, not at the endpoint", agent.output(), self.dump())
        workers = agent.workers()
        self.assertTrue(workers and all(int(w[2]) >= 2 and w[6] == "OK" for w in workers),
                        self.dump())
        self.assertEqual(workers[-1][1], str(world), self.dump())

    def fail_over(self, count, nnodes):
        agents = [self.start_node(k, nnodes, count, count) for k in range(count)]
        for agent in agents:
            self.wait_workers(agent, 0, 1)
        os.kill(agents[0].agent_pid(), signal.SIGKILL)
        self.wait_exit(agents[0])
        for agent in agents[1:]:
            self.wait_workers(agent, 1, 1)
        self.assertIn("taking over as the host", agents[1].output(), self.dump())
        return agents


class DiscoveryTorchTest(DiscoveryCase):
    """Real PyTorch workers (label torch): the grown group's gloo forms through the store
    of the node that took over."""
    def test_a_new_node_after_a_failover_finds_the_host_and_grows_the_job(self):
        # A scale-up step's new node knows only the endpoint, where nothing listens after
        # the failover: it retried until join_timeout and exited 1; the job never grew.
        agents = self.fail_over(3, "2:4")
        node3 = self.start_node(3, "2:4", 3, 4)
        self.wait_for(lambda: node3.workers() or node3.proc.poll() is not None,
                      "the new node 3 to train")
        self.assert_in_the_regime(node3, 3)  # the two survivors and node 3
        for agent in agents[1:]:
            self.assertIsNone(agent.proc.poll(), self.dump())
        self.stop_all()


class DiscoveryTest(DiscoveryCase):
    """Workers that sum their ranks through the agent's store instead of importing torch
    (label process; DiscoveryTorchTest: real PyTorch)."""
    light_workers = True

    def test_the_killed_host_brought_back_without_its_records_joins_the_new_host(self):
        # Node 0 (the endpoint) hosted and was killed; node 1 took over. Node 0 started
        # again with its own command line on a machine that lost its records used to
        # host a fresh round 0 at the endpoint (a second regime) and never trained.
        agents = self.fail_over(3, "2:3")
        node0 = self.start_node(0, "2:3", 3, 3, fresh_records=True)
        self.wait_for(lambda: node0.workers() or node0.proc.poll() is not None or
                      "hosting:" in node0.output(), "the restarted node 0 to train")
        self.assert_in_the_regime(node0, 3)
        for agent in agents[1:]:
            self.assertIsNone(agent.proc.poll(), self.dump())
        self.stop_all()


if __name__ == "__main__":
    unittest.main()
