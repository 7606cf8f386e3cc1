"""The job's event record (docs/user.md "Event record") and `elasticrun status`
("Job status") through real agents on
loopback with shell workers: a worker failure, a node lost, the host lost (its
successor continues the record) and a departure with notice, then the end. The
record is checked line by line: kinds, rounds, reasons, world sizes, members and
the restarts, written first by the host and then by its successor to one file."""
import json
import os
import signal
import subprocess
import unittest

from rdzv_test_util import ELASTICRUN, RendezvousTestCase

# Rank 1 fails with exit code 7 in round 0; every other worker runs until STOP_FILE exists.
SHELL_WORKER = (
    'echo "worker rank=$RANK world=$WORLD_SIZE round=$TORCHELASTIC_RESTART_COUNT '
    'group_rank=$GROUP_RANK local_rank=$LOCAL_RANK agent_store=- all_reduce=-"; '
    '[ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && [ "$RANK" = 1 ] && exit 7; '
    'while [ ! -e "$STOP_FILE" ]; do sleep 0.2; done')


class EventRecordTest(RendezvousTestCase):
    def test_failure_loss_failover_departure_and_end_line_by_line(self):
        events = os.path.join(self.dir, "events.jsonl")
        stop = os.path.join(self.dir, "stop")
        conf = "expected_nodes=4,heartbeat_interval=0.5,heartbeat_timeout=3"
        agents = []
        for rank in range(4):
            agents.append(self.start_agent(
                "1:4", nproc=1, conf=conf, env={"STOP_FILE": stop},
                extra=["--no-python", "--max-restarts=5", "--node-rank=%d" % rank, "--events", events],
                program="/bin/sh", worker_args=["-c", SHELL_WORKER]))
            if rank == 0:
                self.wait_listening()
        for agent in agents:
            self.wait_workers(agent, 1, 1)  # rank 1 failed in round 0: round 1 on all four
        # `elasticrun status` with the job's rendezvous options, while it runs.
        status = [ELASTICRUN, "status", "--rdzv-endpoint=127.0.0.1:%d" % self.port, "--rdzv-id=" + self.run_id,
                  "--rdzv-conf=munge=0,state_dir=" + os.path.join(self.dir, "state")]
        done = subprocess.run(status + ["--json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        view = json.loads(done.stdout)
        self.assertEqual((view["phase"], view["round"], view["nodes"], view["world_size"], view["restarts_used"],
                          view["restarts_left"], view["recoveries"]), ("running", 1, 4, 4, 1, 4, 1), view)
        self.assertEqual([m["state"] for m in view["members"]], ["running"] * 4, view)
        self.assertEqual([(f["rank"], f["exit_code"]) for f in view["last_failures"]], [(1, 7)], view)
        self.assertEqual(view["others"], [], view)  # the asking observer is not listed
        done = subprocess.run(status, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("running, round 1, 4 node(s) of 1:4, 4 worker(s)", done.stdout)
        self.assertIn("restarts: 1 used, 4 left (--max-restarts=5)", done.stdout)
        self.assertIn("rank 1 (local rank 0) on ", done.stdout)
        self.assertIn("exit code 7", done.stdout)
        os.kill(agents[3].agent_pid(), signal.SIGKILL)  # a node lost
        for agent in agents[:3]:
            self.wait_workers(agent, 2, 1)
        os.kill(agents[0].agent_pid(), signal.SIGKILL)  # the host lost: node 1 takes over
        for agent in agents[1:3]:
            self.wait_workers(agent, 3, 1)
        os.kill(agents[2].proc.pid, signal.SIGTERM)  # a departure with notice
        self.assertEqual(self.wait_exit(agents[2]), 128 + signal.SIGTERM, self.dump())
        self.wait_workers(agents[1], 4, 1)
        open(stop, "w").close()
        self.assertEqual(self.wait_exit(agents[1]), 0, self.dump())
        self.assertEqual(self.wait_exit(agents[0]), 128 + signal.SIGKILL)
        self.assertEqual(self.wait_exit(agents[3]), 128 + signal.SIGKILL)
        # A finished job: a clear message, exit 1.
        done = subprocess.run(status, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 1, done.stdout)
        self.assertIn("no status from run %s at 127.0.0.1:%d" % (self.run_id, self.port), done.stderr)
        self.assertIn("has the job ended", done.stderr)

        with open(events) as f:
            record = [json.loads(line) for line in f]
        shown = "\n".join(json.dumps(e) for e in record) + "\n" + self.dump()
        self.assertEqual(
            [(e["event"], e.get("reason"), e["round"], e.get("nodes"), e.get("world_size"),
              e["restarts_used"], e["restarts_left"]) for e in record],
            [("job_start", None, 0, None, None, 0, 5),
             ("round", "start", 0, 4, 4, 0, 5),
             ("worker_failure", None, 0, None, None, 1, 4),
             ("round", "worker_failure", 1, 4, 4, 1, 4),
             ("node_lost", record[4].get("reason"), 1, None, None, 2, 3),
             ("round", "node_lost", 2, 3, 3, 2, 3),
             ("job_start", None, 3, None, None, 3, 2),   # the successor, the host's loss counted
             ("round", "failover", 3, 2, 2, 3, 2),
             ("node_lost", "its agent got signal 15", 3, None, None, 3, 2),
             ("round", "departure", 4, 1, 1, 3, 2),
             ("end", "done", 4, None, None, 3, 2)], shown)
        start, first, failure, second, lost, third, takeover, failover, departed, fourth, end = record
        self.assertEqual((start["takeover"], start["min_nodes"], start["max_nodes"], start["max_restarts"]),
                         (False, 1, 4, 5), shown)
        # Group-rank order: node ranks 0..3. On one machine the agents share a hostname:
        # the host is named by it, every other by hostname:pid (a successor names itself
        # by its hostname again).
        names = first["members"]
        self.assertEqual((len(set(names)), first["members_total"]), (4, 4), shown)
        self.assertTrue(all(e["host"] == names[0] for e in record[:6]), shown)
        successor = takeover["host"]
        self.assertEqual(successor, names[1].split(":")[0], shown)
        self.assertTrue(all(e["host"] == successor for e in record[6:]), shown)
        self.assertEqual((failure["failure"]["rank"], failure["failure"]["exit_code"],
                          failure["failure"]["cause"], failure["failure"]["node"]),
                         (1, 7, "exit code 7", names[1].split(":")[0]), shown)
        self.assertEqual(second["members"], names, shown)
        self.assertEqual((lost["node"], lost["notice"]), (names[3], False), shown)
        self.assertEqual(third["members"], names[:3], shown)
        self.assertTrue(takeover["takeover"], shown)
        self.assertEqual(failover["members"], [successor, names[2]], shown)
        self.assertEqual((departed["node"], departed["notice"]), (names[2], True), shown)
        self.assertEqual(fourth["members"], [successor], shown)
        # Every recovery is timed (monotonic, from the detection to the new round); the start is none.
        self.assertNotIn("recovery_ms", first, shown)
        self.assertTrue(all(e["recovery_ms"] >= 0 for e in (second, third, failover, fourth)), shown)
        times = [e["unix_ms"] for e in record]
        self.assertEqual(times, sorted(times), shown)
        self.assertTrue(all(e["v"] == 2 and e["time"].endswith("Z") for e in record), shown)
        self.assert_nothing_left()


if __name__ == "__main__":
    unittest.main()
