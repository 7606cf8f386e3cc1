"""elasticrun with real worker processes (no torch): restarts, failures,
signals, output. Every test checks that no process of the run is left."""
import ctypes
import glob
import json
import os
import re
import signal
import socket
import subprocess
import time
import unittest

from launcher_test_util import (PYTHON, WORKER, LauncherTestCase, children_of, pid_alive, pids_running,
                                run_log_dir, wait_for)


class RestartTest(LauncherTestCase):
    def test_worker_failing_once_is_restarted_and_run_succeeds(self):
        rc, out, err = self.run_agent(["--standalone", "--nproc-per-node=3", "--max-restarts=1"]
                                      + self.worker_args("fail-once", 7))
        self.assertEqual(rc, 0, err)
        self.assertIn("[rank1]: rank 1 fails on purpose", out)
        for rank in range(3):
            self.assertIn("[rank%d]: rank %d ok at restart 1" % (rank, rank), out)
        self.assertIn("restarting the workers", err)
        self.assert_nothing_left()

    def test_restarts_exhausted_exit_code_and_summary(self):
        rc, out, err = self.run_agent(["--standalone", "--nproc-per-node=2", "--max-restarts=2",
                                       "--shutdown-timeout=60"] + self.worker_args("fail", 9))
        self.assertEqual(rc, 1, err)  # restarts used up; the summary names the worker's code
        self.assertEqual(err.count("restarting the workers"), 2, err)
        self.assertNotIn("crash loop", err)
        self.assertIn("job failed: first failure: rank 0 (local rank 0)", err)
        self.assertIn("exit code 9", err)
        self.assertIn("restarts used: 2 of 2", err)
        self.assertRegex(err, r"time: +\d{4}-\d\d-\d\dT")
        self.assert_nothing_left()

    def test_worker_killed_by_signal_is_named_in_summary(self):
        rc, _, err = self.run_agent(["--nproc-per-node=1", "--no-python", "sh", "-c", "kill -SEGV $$"])
        self.assertEqual(rc, 1, err)  # restarts (none) used up
        self.assertIn("job failed: first failure: rank 0 (local rank 0) on", err)
        self.assertIn("signal SIGSEGV (11)", err)
        self.assert_nothing_left()

    def test_crash_loop_ends_the_job_early_with_exit_2(self):
        rc, out, err = self.run_agent(["--standalone", "--nproc-per-node=2", "--max-restarts=10"]
                                      + self.worker_args("fail", 9))
        self.assertEqual(rc, 2, err)  # do not requeue
        self.assertEqual(err.count("restarting the workers"), 2, err)  # 3 rounds, not 11
        self.assertIn("crash loop: the workers failed within 60 s of their start in 3 rounds in a row", err)
        self.assertIn("job failed: first failure: rank 0 (local rank 0)", err)
        self.assertIn("exit code 9", err)
        self.assert_nothing_left()

    def test_one_worker_failing_after_the_window_is_no_crash_loop(self):
        # One worker per node: its failure stops the group at once (no worker is left
        # to stop); its uptime still counts from its start to that failure.
        rc, out, err = self.run_agent(["--standalone", "--nproc-per-node=1", "--max-restarts=3",
                                       "--crash-loop-window=0.5"] + self.worker_args("fail-after", 1, 9))
        self.assertEqual(rc, 1, err)
        self.assertIn("restarts used: 3 of 3", err)
        self.assertNotIn("crash loop", err)
        self.assert_nothing_left()

    def test_crash_loop_count_0_restarts_until_the_budget_is_used(self):
        rc, out, err = self.run_agent(["--standalone", "--nproc-per-node=2", "--max-restarts=4",
                                       "--crash-loop-count=0"] + self.worker_args("fail", 9))
        self.assertEqual(rc, 1, err)
        self.assertIn("restarts used: 4 of 4", err)
        self.assertNotIn("crash loop", err)
        self.assert_nothing_left()


class NoProgressTest(LauncherTestCase):
    """--progress-file (issue 19 "Beyond the peers"): a worker that fails at the same step
    every round (its checkpoint never moves) ends the job, exit 5; one that gets further
    each round is restarted until --max-restarts is used."""

    def run_progress(self, crash_at, extra=()):
        progress = self.path("iteration.txt")
        return self.run_agent(["--standalone", "--nproc-per-node=2", "--max-restarts=6", "--crash-loop-count=0",
                               "--progress-file", progress] + list(extra)
                              + self.worker_args("progress", progress, crash_at, 3))

    def test_same_step_every_time_stops_after_n_restarts_with_exit_5(self):
        rc, out, err = self.run_progress(5, ["--no-progress-restarts=2"])
        self.assertEqual(rc, 5, err)  # do not requeue
        # Round 0 writes iteration 3 and fails at step 5; rounds 1 and 2 resume at 3, fail again.
        self.assertEqual(out.count("[rank0]: rank 0 fails at step 5"), 3, out)
        self.assertEqual(err.count("restarting the workers"), 2, err)
        self.assertIn("no progress: 2 failed round(s) in a row without the iteration in %s growing, last 3 "
                      "(--progress-file, --no-progress-restarts=2): ending the job instead of restarting "
                      "(exit 5: do not requeue)" % self.path("iteration.txt"), err)
        self.assertIn("job failed: first failure: rank 0 (local rank 0)", err)
        self.assert_nothing_left()

    def test_progress_every_round_is_not_stopped(self):
        rc, out, err = self.run_progress(0, ["--no-progress-restarts=1"])
        self.assertEqual(rc, 1, err)  # the restarts used up, never "no progress"
        self.assertNotIn("no progress", err)
        self.assertIn("restarts used: 6 of 6", err)
        self.assertIn("[rank0]: rank 0 resumes at step 18 (restart 6)", out)
        self.assert_nothing_left()

    def test_no_progress_restarts_0_never_stops(self):
        rc, _, err = self.run_progress(5, ["--no-progress-restarts=0"])
        self.assertEqual(rc, 1, err)
        self.assertNotIn("no progress", err)


class HealthCheckTest(LauncherTestCase):
    def check(self, passes_from, fail_with="exit 3"):
        """A --health-check that fails its first `passes_from` runs (with `fail_with`), then passes."""
        count = self.path("checks")
        return ('n=$(cat %s 2>/dev/null || echo 0); echo $((n+1)) > %s; echo "check $n on $(hostname)"; '
                '[ "$n" -ge %d ] || %s' % (count, count, passes_from, fail_with))

    def test_failing_check_keeps_the_node_out_until_it_passes_and_runs_before_each_round(self):
        logs = self.path("logs")
        rc, out, err = self.run_agent(["--standalone", "--nproc-per-node=3", "--max-restarts=1", "--log-dir", logs,
                                       "--health-check", self.check(1)] + self.worker_args("fail-once", 7))
        self.assertEqual(rc, 0, err)
        logs = run_log_dir(logs)
        self.assertRegex(err, r"health check failed on node \S+: exit code 3 \(output in %s\): this node stays "
                              r"out of the round; checking again in 10 s" % re.escape(logs + "/health_check.log"))
        self.assertEqual(err.count("health check failed"), 1, err)
        self.assertIn("health check passes on node", err)
        for rank in range(3):
            self.assertIn("[rank%d]: rank %d ok at restart 1" % (rank, rank), out)
        with open(os.path.join(logs, "health_check.log")) as f:
            log = f.read()
        # The failed one, the one that let the node in, the one before the restart's round.
        self.assertEqual(log.count("=== health check: "), 3, log)
        for n in range(3):
            self.assertIn("check %d on " % n, log)
        # The verdicts in the event record (issue 25), this node's own, before its first round.
        with open(os.path.join(logs, "events.jsonl")) as f:
            record = [json.loads(line) for line in f if line.strip()]
        said = [(e["event"], e.get("reason"), e.get("message")) for e in record
                if e["event"] in ("health_check", "round")]
        self.assertEqual(said, [("health_check", "kept_out", "exit code 3"), ("health_check", "passes", ""),
                                ("round", "start", None), ("round", "worker_failure", None)], record)
        kept_out = next(e for e in record if e["event"] == "health_check")
        self.assertEqual(kept_out["node"], kept_out["host"])  # written by the node itself
        self.assert_nothing_left()

    def test_check_past_its_timeout_is_killed_and_counts_as_failed(self):
        sleeper = self.marker("health")
        rc, out, err = self.run_agent(["--standalone", "--nproc-per-node=1", "--health-check-timeout=0.5",
                                       "--health-check", self.check(1, " ".join(sleeper))]
                                      + self.worker_args("fail-once", 7))
        self.assertEqual(rc, 0, err)
        self.assertIn("killed after the 0.5 s timeout (--health-check-timeout)", err)
        self.assert_gone(sleeper, within=5)
        self.assert_nothing_left()


class HealthCheckObserverTest(LauncherTestCase):
    """Three agents on loopback (a c10d rendezvous, like srun -N3 --elastic=2:3); one's
    health check always fails: it stays connected as an observer, is never counted, and
    ends with the job instead of re-checking for 10 minutes."""

    def run_three(self, failing_hosts):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        out_dir = self.path("env")
        os.mkdir(out_dir)
        procs = []
        for node in range(3):
            failing = node == (0 if failing_hosts else 2)
            conf = "munge=0,expected_nodes=3,last_call_timeout=1,is_host=%d" % (node == 0)
            args = ["--nnodes=2:3", "--nproc-per-node=1", "--rdzv-backend=c10d",
                    "--rdzv-endpoint=127.0.0.1:%d" % port, "--rdzv-id=observer-%d" % os.getpid(),
                    "--rdzv-conf=" + conf, "--log-dir", self.path("logs%d" % node)]
            if failing:
                args += ["--health-check", "echo unhealthy; exit 3"]
            procs.append((failing, self.start(args + self.worker_args("env", out_dir))))
        results = []
        for failing, proc in procs:
            out, err = proc.communicate(timeout=60)  # well under the 10 minutes of re-checks
            results.append((failing, proc.returncode, err.decode(errors="replace")))
        for rank in range(2):
            with open(os.path.join(out_dir, "env.%d.json" % rank)) as f:
                env = json.load(f)
            self.assertEqual((env["WORLD_SIZE"], env["GROUP_WORLD_SIZE"]), ("2", "2"))
        self.assertFalse(os.path.exists(os.path.join(out_dir, "env.2.json")))
        for failing, rc, err in results:
            self.assertEqual(rc, 0, err)
            if failing:
                self.assertRegex(err, r"health check failed on node \S+: exit code 3")
                self.assertIn("the job finished while this node was kept out by its health check", err)
                self.assertEqual(err.count("health check failed"), 1, err)
        self.assert_nothing_left()

    def test_node_kept_out_by_its_check_exits_0_when_the_others_finish(self):
        self.run_three(failing_hosts=False)

    def test_host_kept_out_by_its_check_hosts_and_exits_0_when_the_others_finish(self):
        self.run_three(failing_hosts=True)


class SignalTest(LauncherTestCase):
    def test_sigterm_reaches_workers_and_leaves_nothing(self):
        proc = self.start(["--nproc-per-node=3"] + self.worker_args("wait", self.dir, "child"))
        self.wait_ready(3)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        for rank in range(3):
            self.assertTrue(os.path.exists(self.path("term.%d" % rank)), "rank %d saw no SIGTERM" % rank)
        self.assert_nothing_left()  # the `sleep` children included

    def test_slurms_sigterm_at_the_jobs_end_time_is_told_as_the_time_limit(self):
        # Under srun (ELASTIC_SPANK_ARGV0): Slurm's SIGTERM at or after the job's end
        # time is the time limit, before it a cancel (issue 20 item 6).
        for end, line in ((int(time.time()) - 30, "elasticrun: time limit: the job reached its time limit"),
                          (int(time.time()) + 3600, "elasticrun: cancelled by Slurm (SIGTERM)")):
            for f in glob.glob(self.path("*.0")):
                os.unlink(f)
            env = {"ELASTIC_SPANK_ARGV0": PYTHON, "PET_NPROC_PER_NODE": "1", "ELASTIC_JOB_END_TIME": str(end)}
            proc = self.start([WORKER, "wait", self.dir], env)
            self.wait_ready(1)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=120)
            err = err.decode(errors="replace")
            self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
            self.assertEqual(err.count(line), 1, err)
            self.assertEqual(err.count("SIGTERM"), 1, err)

    def test_sigint_exits_130(self):
        proc = self.start(["--nproc-per-node=2"] + self.worker_args("wait", self.dir))
        self.wait_ready(2)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT)
        self.assert_nothing_left()

    def test_sigint_to_the_process_group_reaches_the_agent_once(self):
        # A terminal's Ctrl-C: SIGINT to the foreground group. The guardian forwards it;
        # the agent, in its own group, must not get a second one.
        proc = self.start(["--nproc-per-node=2"] + self.worker_args("wait", self.dir))
        self.wait_ready(2)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT, err)
        self.assertEqual(err.decode().count("got SIGINT"), 1, err)
        self.assert_nothing_left()

    def test_no_guardian_env_runs_the_agent_alone(self):
        proc = self.start(["--nproc-per-node=1"] + self.worker_args("wait", self.dir), env={"ELASTIC_NO_GUARDIAN": "1"})
        self.wait_ready(1)
        with open(self.path("pids.0")) as f:
            worker = json.load(f)["pids"][0]
        self.assertIn(worker, children_of(proc.pid))  # the workers are elasticrun's own children
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assert_nothing_left()

    def test_worker_ignoring_sigterm_is_killed_after_shutdown_timeout(self):
        proc = self.start(["--nproc-per-node=1", "--shutdown-timeout=0.5", "--no-python", "sh", "-c",
                           "trap '' TERM; touch %s; while :; do sleep 1; done" % self.path("ready.0")])
        wait_for(self, lambda: os.path.exists(self.path("ready.0")), "worker ready")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 143)
        self.assertIn("SIGKILL", err.decode())
        self.assert_nothing_left()

    def test_sigkill_of_agent_kills_workers(self):
        proc = self.start(["--nproc-per-node=3"] + self.worker_args("wait", self.dir))
        self.wait_ready(3)
        proc.kill()
        proc.communicate(timeout=120)
        self.assert_nothing_left()

    def test_sigusr1_reaches_every_worker_and_run_goes_on(self):
        proc = self.start(["--nproc-per-node=3"] + self.worker_args("wait", self.dir))
        self.wait_ready(3)
        proc.send_signal(signal.SIGUSR1)
        for rank in range(3):
            wait_for(self, lambda: os.path.exists(self.path("usr1.%d" % rank)), "SIGUSR1 at rank %d" % rank)
        self.assertIsNone(proc.poll())  # still running
        proc.send_signal(signal.SIGUSR2)  # forwarded too: the workers exit 0
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        self.assert_nothing_left()


CLONE_NEWNET = 0x40000000


def process_state(pid):
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    return stat[stat.rindex(")") + 2]


class JobControlTest(LauncherTestCase):
    """Ctrl-Z (SIGTSTP to the foreground group: elasticrun's, the guardian's), as
    Slurm's suspend begins (SIGTSTP, then SIGSTOP); fg (SIGCONT to the group), as
    Slurm's resume. The workers, in groups of their own, used to run on."""

    def family(self, proc, n):
        self.wait_ready(n)
        workers = []
        for rank in range(n):
            with open(self.path("pids.%d" % rank)) as f:
                workers += json.load(f)["pids"]
        agents = children_of(proc.pid)
        self.assertEqual(len(agents), 1, agents)
        self.groups.append(agents[0])
        return [proc.pid] + agents + workers

    def test_ctrl_z_stops_every_worker_and_fg_continues_them(self):
        proc = self.start(["--nproc-per-node=2"] + self.worker_args("wait", self.dir, "child"))
        everyone = self.family(proc, 2)  # guardian, agent, 2 workers and their `sleep` children
        os.killpg(proc.pid, signal.SIGTSTP)
        wait_for(self, lambda: all(process_state(p) == "T" for p in everyone),
                 "guardian, agent, workers and their children stopped", 30)
        os.killpg(proc.pid, signal.SIGCONT)
        wait_for(self, lambda: not any(process_state(p) == "T" for p in everyone),
                 "every process continued", 30)
        proc.send_signal(signal.SIGUSR2)  # the workers still answer: they exit 0
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(err.decode().count("got SIGTSTP"), 1, err)
        self.assert_nothing_left()


class ContainmentTest(LauncherTestCase):
    """What the workers start goes with them: setsid() and double forks included."""

    def escaping_worker(self, escaped, then):
        # A double fork: the subshell exits, so `escaped` is an orphan in its own session.
        return ["--no-python", "sh", "-c",
                "(setsid %s >/dev/null 2>&1 &); touch %s/ready.$RANK.$TORCHELASTIC_RESTART_COUNT; %s"
                % (" ".join(escaped), self.dir, then)]

    def wait_started(self, argv, n, attempt=0):
        for rank in range(n):
            wait_for(self, lambda: os.path.exists(self.path("ready.%d.%d" % (rank, attempt))), "rank %d" % rank)
        wait_for(self, lambda: len(pids_running(argv)) == n, "%d '%s'" % (n, " ".join(argv)))

    def test_setsid_grandchild_does_not_outlive_sigterm_of_agent(self):
        escaped = self.marker("escaped")
        proc = self.start(["--nproc-per-node=2"] + self.escaping_worker(escaped, "exec sleep 1000"))
        self.wait_started(escaped, 2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assert_gone(escaped)
        self.assert_nothing_left()

    def test_setsid_grandchild_does_not_outlive_clean_exit_of_agent(self):
        escaped = self.marker("escaped")
        rc, _, err = self.run_agent(["--nproc-per-node=2"] + self.escaping_worker(escaped, ":"))
        self.assertEqual(rc, 0, err)
        self.assert_gone(escaped)

    def test_restart_leaves_no_descendant_of_the_first_group(self):
        escaped = self.marker("escaped")  # + the restart count: one command line per attempt
        first, second = [escaped[0], escaped[1] + "0"], [escaped[0], escaped[1] + "1"]
        self.markers += [first, second]
        then = "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then exit 3; fi; exec sleep 1000"
        proc = self.start(["--standalone", "--nproc-per-node=2", "--max-restarts=1"]
                          + self.escaping_worker([escaped[0], escaped[1] + "$TORCHELASTIC_RESTART_COUNT"], then))
        self.wait_started(second, 2, attempt=1)
        self.assertEqual(pids_running(first), [])  # killed before the second group started
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assert_gone(second)

    def the_agent(self, proc):
        """elasticrun's only child: the agent (the original process is its guardian)."""
        agents = children_of(proc.pid)
        self.assertEqual(len(agents), 1, "elasticrun %d has children %s, not one agent" % (proc.pid, agents))
        self.groups.append(agents[0])  # its own process group
        return agents[0]

    def test_grandchildren_do_not_outlive_sigkill_of_elasticrun(self):
        child = self.marker("child")  # the worker's child: PDEATHSIG does not reach it
        proc = self.start(["--standalone", "--nproc-per-node=4", "--shutdown-timeout=2", "--no-python", "sh", "-c",
                           "touch %s/ready.$RANK.0; %s; :" % (self.dir, " ".join(child))])
        self.wait_started(child, 4)
        family = children_of(proc.pid)  # the agent (then the workers below it), or the workers
        family += [p for pid in family for p in children_of(pid)]
        self.groups += family  # the agent's group, the workers' groups: checked empty below
        proc.kill()
        proc.communicate(timeout=60)
        self.assert_gone(child, within=30)
        wait_for(self, lambda: not any(pid_alive(p) for p in family), "agent and workers gone", 30)
        self.assert_nothing_left()

    def test_setsid_grandchild_does_not_outlive_sigkill_of_the_agent(self):
        escaped = self.marker("escaped")
        proc = self.start(["--nproc-per-node=2"] + self.escaping_worker(escaped, "exec sleep 1000"))
        self.wait_started(escaped, 2)
        os.kill(self.the_agent(proc), signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 128 + signal.SIGKILL, err)  # the guardian reports it
        self.assert_gone(escaped, within=30)
        self.assert_nothing_left()


class OutputTest(LauncherTestCase):
    def test_four_workers_100000_lines_each_arrive_whole_and_prefixed(self):
        n = 100000
        rc, out, err = self.run_agent(["--nproc-per-node=4"] + self.worker_args("lines", n))
        self.assertEqual(rc, 0, err)
        seen = [0] * 4
        pattern = re.compile(r"^\[rank(\d)\]: rank (\d) line (\d+) with some padding to make it longer$")
        for line in out.split("\n")[:-1]:
            m = pattern.match(line)
            self.assertIsNotNone(m, "mangled line: %r" % line[:200])
            rank, rank2, index = int(m.group(1)), int(m.group(2)), int(m.group(3))
            self.assertEqual(rank, rank2)
            self.assertEqual(index, seen[rank], "rank %d: line %d out of order or lost" % (rank, index))
            seen[rank] += 1
        self.assertEqual(seen, [n] * 4)
        self.assertTrue(out.endswith("\n"))
        self.assert_nothing_left()

    def test_stderr_is_prefixed_on_stderr(self):
        rc, out, err = self.run_agent(["--nproc-per-node=2", "--no-python", "sh", "-c",
                                       "echo to-err >&2; printf no-newline"])
        self.assertEqual(rc, 0, err)
        self.assertIn("[rank1]: to-err\n", err)
        self.assertIn("[rank0]: no-newline\n", out)
        self.assertNotIn("to-err", out)

    def test_local_ranks_filter_limits_console(self):
        rc, out, err = self.run_agent(["--nproc-per-node=3", "--local-ranks-filter=1", "--no-python",
                                       "sh", "-c", "echo hi $RANK"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "[rank1]: hi 1\n")

    def test_log_line_prefix_template_from_the_flag_or_torchrun_variable(self):
        # torchrun's --log-line-prefix-template and TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE (issue 22):
        # "which host printed this?" answered by ${hostname}.
        host = socket.gethostname()
        rc, out, err = self.run_agent(["--nproc-per-node=2", "--role=trainer",
                                       "--log-line-prefix-template=${hostname}|${role_name}${rank}|${local_rank}> ",
                                       "--no-python", "sh", "-c", "echo hi $RANK; echo oops >&2"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(out.splitlines()), ["%s|trainer%d|%d> hi %d" % (host, r, r, r) for r in range(2)])
        self.assertIn("%s|trainer1|1> oops\n" % host, err)
        rc, out, err = self.run_agent(["--nproc-per-node=1", "--no-python", "sh", "-c", "echo hi"],
                                      env={"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[$hostname:$$${rank}] "})
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "[%s:$0] hi\n" % host)

    def test_tee_redirects_and_log_dir_files_per_attempt_and_rank(self):
        log_dir = self.path("logs")
        flag = self.path("rank1-done")
        rc, out, err = self.run_agent(
            ["--nproc-per-node=2", "--max-restarts=1", "--log-dir", log_dir, "--tee=1", "--redirects=1:2",
             "--no-python", "sh", "-c",
             'C=$TORCHELASTIC_RESTART_COUNT; echo out $RANK $C; echo err $RANK >&2; '
             'if [ $C = 0 ]; then if [ $RANK = 1 ]; then touch %s; '
             'else while [ ! -e %s ]; do sleep 0.05; done; exit 1; fi; fi' % (flag, flag)])
        self.assertEqual(rc, 0, err)
        run_dir = run_log_dir(log_dir)
        self.assertRegex(os.path.basename(run_dir), r"^none_\w{6}$")  # torchrun's RUNID_XXXXXX
        for attempt in (0, 1):
            for rank in (0, 1):
                d = os.path.join(run_dir, "attempt_%d" % attempt, str(rank))
                with open(os.path.join(d, "stdout.log")) as f:
                    self.assertEqual(f.read(), "out %d %d\n" % (rank, attempt))
                self.assertEqual(os.path.exists(os.path.join(d, "stderr.log")), rank == 1)
        self.assertIn("[rank0]: out 0 1", out)  # tee: console too
        self.assertIn("[rank0]: err 0", err)
        self.assertNotIn("[rank1]: err", err)  # redirected: file only

    def test_two_runs_sharing_a_log_dir_keep_their_own_files(self):
        # Issue 22: the second run overwrote the first's attempt_0/ (torchrun writes a directory per run).
        log_dir = self.path("logs")
        for run in ("first", "second"):
            rc, _, err = self.run_agent(["--nproc-per-node=1", "--log-dir", log_dir, "--redirects=1",
                                         "--no-python", "sh", "-c", "echo %s run" % run])
            self.assertEqual(rc, 0, err)
            self.assertIn("logs of this run in %s/none_" % log_dir, err)
        runs = sorted(os.listdir(log_dir))
        self.assertEqual(len(runs), 2, runs)
        texts = []
        for run in runs:
            with open(os.path.join(log_dir, run, "attempt_0", "0", "stdout.log")) as f:
                texts.append(f.read())
        self.assertEqual(sorted(texts), ["first run\n", "second run\n"])

    def test_duplicate_filters_copy_matching_lines_per_attempt(self):
        # torchrun 2.14's --duplicate-stdout-filters/--duplicate-stderr-filters (issue 22):
        # the lines of every local rank that contain a filter (",," a comma in one) are
        # also in LOG_DIR/attempt_N/filtered_std*.log, prefixed; a restart starts new files.
        # Rank 1 fails attempt 0 only once rank 0 has printed: else the agent may stop
        # rank 0 before its first line (a race the CI matrix hit on Debian 12).
        log_dir = self.path("logs")
        flag = self.path("rank0-printed")
        script = ('echo "loss, $RANK"; echo "other $RANK"; echo "warn $RANK" >&2; echo "quiet" >&2; '
                  'if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then if [ $RANK = 0 ]; then touch %s; '
                  'else while [ ! -e %s ]; do sleep 0.05; done; exit 3; fi; fi' % (flag, flag))
        rc, out, err = self.run_agent(["--nproc-per-node=2", "--max-restarts=1", "--log-dir", log_dir,
                                       "--duplicate-stdout-filters=loss,,", "--duplicate_stderr_filters=warn,nope",
                                       "--no-python", "sh", "-c", script])
        self.assertEqual(rc, 0, err)
        self.assertIn("[rank1]: other 1", out)  # the console is unchanged
        run = run_log_dir(log_dir)
        for attempt in (0, 1):
            with open(os.path.join(run, "attempt_%d" % attempt, "filtered_stdout.log")) as f:
                self.assertEqual(sorted(f.read().splitlines()), ["[rank0]: loss, 0", "[rank1]: loss, 1"])
            with open(os.path.join(run, "attempt_%d" % attempt, "filtered_stderr.log")) as f:
                self.assertEqual(sorted(f.read().splitlines()), ["[rank0]: warn 0", "[rank1]: warn 1"])
        self.assertNotIn("ignored", err)


class FinishingEarlyTest(LauncherTestCase):
    """One node's workers all exit 0 while another's still train (torchrun's exit
    barrier; docs/user.md, "Nodes that finish early"). Two agents on loopback, node 0
    hosting; each node's worker is a shell line of its own, the other waits for a
    file the test creates."""

    def start_pair(self, programs):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        procs = []
        for node, program in enumerate(programs):
            conf = "munge=0,expected_nodes=2,is_host=%d" % (node == 0)
            procs.append(self.start(["--nnodes=2", "--nproc-per-node=1", "--max-restarts=2",
                                     "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:%d" % port,
                                     "--rdzv-id=early-%d" % os.getpid(), "--rdzv-conf=" + conf,
                                     "--no-python", "sh", "-c", program]))
        return procs

    def until_released(self, then, name=""):
        return "touch %s; while [ ! -e %s ]; do sleep 0.05; done; %s" % (
            self.path("waiting" + name), self.path("release" + name), then)

    def worker_of(self, proc):
        """The pid of the one worker of `proc`'s agent (the guardian's child)."""
        wait_for(self, lambda: children_of(proc.pid), "the agent")
        agent = children_of(proc.pid)[0]
        wait_for(self, lambda: children_of(agent), "the agent's worker")
        return agent, children_of(agent)[0]

    def state_of(self, pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                stat = f.read()
        except OSError:
            return None  # reaped
        return stat[stat.rindex(")") + 2]

    def release_and_finish(self, procs):
        """Lets the waiting worker go on; each agent's (exit code, stdout, stderr)."""
        with open(self.path("release"), "w"):
            pass
        out = []
        for proc in procs:
            o, e = proc.communicate(timeout=60)
            out.append((proc.returncode, o.decode(errors="replace"), e.decode(errors="replace")))
        return out

    def test_the_host_finishing_first_waits_for_the_others_and_every_node_exits_0(self):
        procs = self.start_pair(["echo host-done", self.until_released("echo late-done")])
        wait_for(self, lambda: os.path.exists(self.path("waiting")), "node 1's worker to wait")
        # The host's worker is done and reaped (its agent, the guardian's child, has no
        # child left); the host stays (it holds the rendezvous and the workers' store)
        # until node 1's worker ends: it is still running when released.
        wait_for(self, lambda: children_of(procs[0].pid), "node 0's agent")
        agent = children_of(procs[0].pid)[0]
        wait_for(self, lambda: not children_of(agent), "node 0's worker to be reaped")
        self.assertIsNone(procs[0].poll())
        (rc0, out0, err0), (rc1, out1, err1) = self.release_and_finish(procs)
        self.assertEqual((rc0, rc1), (0, 0), err0 + err1)
        self.assertIn("[rank0]: host-done", out0)
        self.assertIn("[rank1]: late-done", out1)
        self.assert_nothing_left()

    def test_a_node_finishing_first_exits_0_while_the_others_train_on(self):
        procs = self.start_pair([self.until_released("echo late-done"), "echo early-done"])
        # Node 1 exits 0 as soon as its workers are done (torchrun's agent waits at its
        # exit barrier, up to 300 s), while node 0's worker still runs.
        wait_for(self, lambda: procs[1].poll() is not None, "node 1 to exit")
        self.assertEqual(procs[1].returncode, 0)
        self.assertIsNone(procs[0].poll())
        (rc0, out0, err0), (rc1, out1, _) = self.release_and_finish(procs)
        self.assertEqual(rc0, 0, err0)
        self.assertIn("[rank1]: early-done", out1)
        self.assertIn("[rank0]: late-done", out0)
        self.assert_nothing_left()

    def test_a_failure_after_a_node_finished_ends_the_job_without_a_restart(self):
        # A restart would need every node again and the finished one's workers are
        # gone: the job fails at once (torchrun: the restart's rendezvous waits for
        # the finished node until its join timeout, 600 s).
        procs = self.start_pair(["echo host-done; touch %s" % self.path("host-done"),
                                 self.until_released("exit 3")])
        # Node 1 fails once released, after the host's worker has finished and been
        # reaped (under load the host's worker may not even have started when node 1's
        # worker waits: a failure then is an ordinary restart). The crossing of the
        # host's success with node 1's failure is made deterministic in the next test.
        wait_for(self, lambda: os.path.exists(self.path("waiting")), "node 1's worker to wait")
        wait_for(self, lambda: os.path.exists(self.path("host-done")), "the host's worker to end")
        agent = children_of(procs[0].pid)[0]
        wait_for(self, lambda: not children_of(agent), "the host's worker to be reaped")
        (rc0, _, err0), (rc1, _, err1) = self.release_and_finish(procs)
        self.assertEqual((rc0, rc1), (1, 1), err0 + err1)
        self.assertIn("job failed: first failure: rank 1 (local rank 0)", err0)
        self.assertIn("restarts used: 0 of 2", err0)
        self.assertRegex(err0, r"no restart: +a node had finished \(its workers all exited 0\): a "
                               r"restart would need its workers again")
        self.assertRegex(err0, r"message: +worker 1 \(local rank 0\) on \S+ failed (after|as) node "
                               r"\S+ had finished \(its workers all exited 0\); a restart would need "
                               r"its workers again")
        self.assertNotIn("restarting", err0 + err1)
        self.assert_nothing_left()


    def test_a_failure_crossing_the_hosts_own_success_ends_the_job_at_once(self):
        # The crossing, made deterministic: node 1's failure reaches the host just before
        # the host's own worker's success. The host's agent is stopped (SIGSTOP) while node
        # 1's worker fails and is reaped (its report is then in the host's socket) and the
        # host's worker exits 0 (a zombie its stopped agent has not reaped); resumed, the
        # host reads the failure first (epoll hands events over in the order they came),
        # asks for a restart, then learns of its own success. The restart cannot take
        # place (the host's workers are done): the job fails at once as if the success
        # had come first. Before, both agents waited for each other until join_timeout.
        procs = self.start_pair([self.until_released("echo host-done", "0"),
                                 self.until_released("exit 3", "1")])
        for node in (0, 1):
            wait_for(self, lambda: os.path.exists(self.path("waiting%d" % node)),
                     "node %d's worker to wait" % node)
        agent0, worker0 = self.worker_of(procs[0])
        _, worker1 = self.worker_of(procs[1])
        os.kill(agent0, signal.SIGSTOP)
        try:
            with open(self.path("release1"), "w"):
                pass
            wait_for(self, lambda: self.state_of(worker1) is None, "node 1's worker to be reaped")
            with open(self.path("release0"), "w"):
                pass
            wait_for(self, lambda: self.state_of(worker0) == "Z", "node 0's worker to exit")
        finally:
            os.kill(agent0, signal.SIGCONT)
        out = []
        for proc in procs:
            o, e = proc.communicate(timeout=60)
            out.append((proc.returncode, o.decode(errors="replace"), e.decode(errors="replace")))
        (rc0, out0, err0), (rc1, _, err1) = out
        self.assertEqual((rc0, rc1), (1, 1), err0 + err1)
        self.assertIn("[rank0]: host-done", out0)
        self.assertIn("job failed: first failure: rank 1 (local rank 0)", err0)
        self.assertIn("restarts used: 0 of 2", err0)
        self.assertRegex(err0, r"no restart: +a node had finished")
        self.assertRegex(err0, r"message: +worker 1 \(local rank 0\) on \S+ failed as node \S+ had "
                               r"finished \(its workers all exited 0\)")
        self.assertNotIn("asks for a restart", err0)  # its workers were done: not for it
        self.assert_nothing_left()


class EnvironmentTest(LauncherTestCase):
    def test_worker_environment_contract(self):
        # HWLOC_XMLFILE must be a real topology (a missing one is an error before start);
        # the agent plans from it but must not pass it on to the workers.
        topology = os.path.join(os.path.dirname(__file__), "..", "topologies",
                                "g4dnmetal.xml")
        env = {"PET_RDZV_ID": "job42", "ELASTIC_SPANK_DEBUG": "x", "HWLOC_XMLFILE": topology,
               "ELASTIC_RDZV_TOKEN": "agents-only"}
        rc, _, err = self.run_agent(["--nproc-per-node=2", "--max-restarts=3"]
                                    + self.worker_args("env", self.dir), env)
        self.assertEqual(rc, 0, err)
        envs = []
        for r in (0, 1):
            with open(self.path("env.%d.json" % r)) as f:
                envs.append(json.load(f))
        for rank, e in enumerate(envs):
            self.assertEqual(e["RANK"], str(rank))
            self.assertEqual(e["LOCAL_RANK"], str(rank))
            self.assertEqual(e["WORLD_SIZE"], "2")
            self.assertEqual(e["LOCAL_WORLD_SIZE"], "2")
            self.assertEqual(e["GROUP_RANK"], "0")
            self.assertEqual(e["GROUP_WORLD_SIZE"], "1")
            self.assertEqual(e["ROLE_NAME"], "default")
            self.assertEqual(e["ROLE_RANK"], str(rank))
            self.assertEqual(e["ROLE_WORLD_SIZE"], "2")
            self.assertTrue(e["MASTER_ADDR"])
            self.assertGreater(int(e["MASTER_PORT"]), 0)
            self.assertEqual(e["TORCHELASTIC_RESTART_COUNT"], "0")
            self.assertEqual(e["TORCHELASTIC_MAX_RESTARTS"], "3")
            self.assertEqual(e["TORCHELASTIC_RUN_ID"], "job42")
            self.assertIn(e["TORCHELASTIC_USE_AGENT_STORE"], ("True", "False"))
            self.assertTrue(e["TORCHELASTIC_ERROR_FILE"].endswith("/attempt_0/%d/error.json" % rank))
            self.assertEqual(e["NCCL_ASYNC_ERROR_HANDLING"], "1")
            self.assertEqual(e["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1")
            self.assertEqual(e["CUDA_DEVICE_ORDER"], "PCI_BUS_ID")
            self.assertIn("OMP_NUM_THREADS", e)
            for gone in ("PET_RDZV_ID", "ELASTIC_SPANK_DEBUG", "HWLOC_XMLFILE", "ELASTIC_RDZV_TOKEN"):
                self.assertNotIn(gone, e)
        self.assertEqual(envs[0]["MASTER_PORT"], envs[1]["MASTER_PORT"])
        # The default log directory is removed at exit.
        self.assertFalse(os.path.exists(os.path.dirname(os.path.dirname(os.path.dirname(envs[0]["TORCHELASTIC_ERROR_FILE"])))))

    def test_spank_wrapped_program_and_pet_options(self):
        env = {"ELASTIC_SPANK_ARGV0": "sh", "PET_NPROC_PER_NODE": "2"}
        rc, out, err = self.run_agent(["-c", "echo wrapped $RANK $ELASTIC_SPANK_ARGV0."], env)
        self.assertEqual(rc, 0, err)
        self.assertIn("[rank0]: wrapped 0 .", out)
        self.assertIn("[rank1]: wrapped 1 .", out)


class UsageTest(LauncherTestCase):
    def test_python_without_torch_is_refused_before_the_rendezvous(self):
        # A python that cannot find torch (this one says so for any find_spec) and a
        # script that imports it: exit 2 at once, naming the interpreter, instead
        # of every worker failing with ModuleNotFoundError and restarts burnt.
        python = self.path("python-without-torch")
        with open(python, "w") as f:
            f.write("#!/bin/sh\ncase \"$1\" in -c) exit 3;; esac\ntouch %s\n" % self.path("ran"))
        os.chmod(python, 0o755)
        script = self.path("train.py")
        with open(script, "w") as f:
            f.write("import os\nimport torch.distributed as dist\n")
        rc, out, err = self.run_agent(["--max-restarts=3", "--python", python, script])
        self.assertEqual(rc, 2, err)
        self.assertIn("the interpreter '%s' cannot import torch, which %s imports" % (python, script), err)
        self.assertFalse(os.path.exists(self.path("ran")), "a worker was started")
        # The program is itself that python (`srun --elastic python3 train.py`, as on a
        # node or in a container image without torch): the same check, and the message
        # does not send the user to an option the command did not use.
        for args in ([python, script], ["--no-python", python, script]):
            rc, out, err = self.run_agent(["--max-restarts=3"] + args)
            self.assertEqual(rc, 2, err)
            self.assertIn("the interpreter '%s' cannot import torch, which %s imports" % (python, script), err)
            self.assertIn("run the script with a python that has it", err)
            self.assertNotIn("--python", err)
            self.assertFalse(os.path.exists(self.path("ran")), "a worker was started")
        # Under srun the message names --elastic-python.
        env = {"ELASTIC_SPANK_ARGV0": script, "PET_PYTHON": python}
        rc, out, err = self.run_agent([], env)
        self.assertEqual(rc, 2, err)
        self.assertIn("--elastic-python=PATH", err)
        # A script without a top-level torch import is not checked.
        with open(script, "w") as f:
            f.write("import os\n")
        rc, out, err = self.run_agent(["--python", python, script])
        self.assertEqual(rc, 0, err)
        self.assertTrue(os.path.exists(self.path("ran")))

    @unittest.skipUnless(os.geteuid() == 0, "a network namespace of its own needs root")
    def test_a_node_with_loopback_only_names_the_cause_at_once(self):
        # As in a container with a network namespace of its own (an OCI bundle whose
        # config.json has one): the agent of a run of up to 2 nodes whose rendezvous host
        # is outside cannot reach it, nor be reached. Exit 2 at once naming the cause, no
        # worker started, instead of waiting join_timeout for the host. (Agents on
        # loopback in such a namespace, as every multi-node test of these suites runs in
        # CI, are not refused: launcher/network_reach_test.cc has the whole table.)
        libc = ctypes.CDLL(None, use_errno=True)
        marker = self.path("ran")
        # join_timeout (600 s) is past run_agent's deadline: a wait for it fails the test.
        rc, out, err = self.run_agent(["--nnodes=1:2", "--nproc-per-node=1", "--rdzv-backend=c10d",
                                       "--rdzv-endpoint=10.200.99.1:29500", "--rdzv-conf=join_timeout=600",
                                       "/bin/touch", marker],
                                      preexec_fn=lambda: libc.unshare(CLONE_NEWNET))
        self.assertEqual(rc, 2, err)
        self.assertIn("this node has no network but loopback (a container with a network namespace of its "
                      "own?): the rendezvous host 10.200.99.1 cannot be reached from here, nor this node from "
                      "the others of a run of up to 2 nodes; run the container with the host's network", err)
        self.assertFalse(os.path.exists(marker), "a worker was started")

    def test_under_srun_messages_name_the_srun_options(self):
        # The plugin hands --elastic-python over as PET_PYTHON: the srun user never
        # typed --python, so the message names --elastic-python.
        env = {"ELASTIC_SPANK_ARGV0": "train.py", "PET_PYTHON": self.path("nosuch-python")}
        rc, out, err = self.run_agent([], env)
        self.assertEqual(rc, 2, err)
        self.assertIn("--elastic-python: '%s' is not an executable file" % self.path("nosuch-python"), err)
        self.assertNotIn(" --python", err)
        # Without srun, elasticrun's own flag.
        rc, out, err = self.run_agent(["--python", self.path("nosuch-python"), "train.py"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--python: '%s'" % self.path("nosuch-python"), err)
        self.assertNotIn("--elastic-python", err)

    def test_bad_value_exits_2_before_starting(self):
        rc, out, err = self.run_agent(["--nproc-per-node=many", "--no-python", "touch", self.path("x")])
        self.assertEqual(rc, 2)
        self.assertIn("--nproc-per-node: 'many'", err)
        self.assertFalse(os.path.exists(self.path("x")))

    def test_missing_program_exits_2(self):
        rc, _, err = self.run_agent(["no-such-program-xyz"])
        self.assertEqual(rc, 2)
        self.assertIn("no-such-program-xyz", err)

    def test_help_and_version(self):
        rc, out, _ = self.run_agent(["--help"])
        self.assertEqual(rc, 0)
        self.assertIn("--nproc-per-node", out)
        rc, out, _ = self.run_agent(["--version"])
        self.assertEqual(rc, 0)
        self.assertIn("elasticrun", out)

    def test_print_completion_for_bash_completes_options_in_bash(self):
        # torchrun 2.14's --print-completion (issue 22): the script, sourced by bash,
        # completes a partial option; an unknown shell is a usage error (exit 2).
        rc, script, err = self.run_agent(["--print-completion", "bash"])
        self.assertEqual(rc, 0, err)
        with open(self.path("elasticrun.bash"), "w") as f:
            f.write(script)
        probe = ("source %s; COMP_WORDS=(elasticrun --nproc-per --max_rest); COMP_CWORD=%%d; _elasticrun; "
                 "echo \"${COMPREPLY[*]}\"" % self.path("elasticrun.bash"))
        for cword, expected in ((1, "--nproc-per-node"), (2, "--max_restarts")):
            out = subprocess.run(["bash", "-c", probe % cword], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.stdout.split(), [expected], out.stderr)
        rc, _, err = self.run_agent(["--print_completion=fish"])
        self.assertEqual(rc, 2)
        self.assertIn("fish", err)


if __name__ == "__main__":
    unittest.main()
