"""elasticrun --preload: workers forked from one preloaded interpreter (the zygote)
behave as normally started ones: environment, argv, signals, output, binding,
restarts (from the same zygote), and normal starts when the zygote is unfit or
dies. Real processes; the stdlib module `json` stands in for torch (test_torch.py
has the torch one)."""
import json
import os
import signal
import socket
import unittest

import test_process
from launcher_test_util import ELASTICRUN, HERE, PYTHON, WORKER, LauncherTestCase, children_of, pid_alive, wait_for

ENDING_WORKER = os.path.join(HERE, "ending_worker.py")
ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(ELASTICRUN)), "python", "zygote.py")


def zygote_argv(modules):
    return [PYTHON, "-u", ZYGOTE, modules]


class Preloaded:
    """Runs a test of test_process.py with its worker forked from a zygote."""
    modules = "json"

    def worker_args(self, *args):
        return ["--preload", self.modules, "--python", PYTHON, WORKER] + [str(a) for a in args]

    def assert_nothing_left(self):
        super().assert_nothing_left()
        self.assert_gone(zygote_argv(self.modules))


class PreloadRestartTest(Preloaded, test_process.RestartTest):
    pass


class PreloadSignalTest(Preloaded, test_process.SignalTest):
    pass


class PreloadContainmentTest(Preloaded, test_process.ContainmentTest):
    pass


class PreloadOutputTest(Preloaded, test_process.OutputTest):
    pass


class PreloadEnvironmentTest(Preloaded, test_process.EnvironmentTest):
    pass


def descendants(pid):
    found, todo = [], [pid]
    while todo:
        for child in children_of(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")[:-1]
    except OSError:
        return []


def load_zygote_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("elastic_zygote", ZYGOTE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ZygoteRequestParserTest(unittest.TestCase):
    """zygote.py's reader of the agent's requests (launcher/zygote_request.h), as a table.
    The first row is the exact payload zygote_request_test.cc expects the agent to encode."""

    def test_table(self):
        z = load_zygote_module()
        good = [
            (b"spawn\0script\0train.py\0arg\0--lr\0arg\0" b"0.1\0env\0RANK=1\0env\0A=\0cwd\0/w\0"
             b"agent\0" b"42\0default_signal\0" b"15\0default_signal\0" b"10\0cpu_mask\0f0,1\0"
             b"mem_mode\0" b"1\0mem_nodes\0" b"2\0maxnode\0" b"64\0",
             {"script": "train.py", "arg": ["--lr", "0.1"], "env": ["RANK=1", "A="], "cwd": "/w", "agent": 42,
              "default_signal": [15, 10], "cpu_mask": [0xf0, 1], "mem_mode": 1, "mem_nodes": [2], "maxnode": 64}),
            (b"spawn\0module\0pkg.main\0cwd\0/\0agent\0" b"7\0",
             {"module": "pkg.main", "arg": [], "cwd": "/", "agent": 7, "cpu_mask": [], "mem_mode": -1}),
        ]
        for payload, want in good:
            got = z._parse_request(payload)
            for key, value in want.items():
                self.assertEqual(got[key], value, key)
        bad = [
            (b"", "not NUL-terminated"),
            (b"spawn\0script\0x", "not NUL-terminated"),
            (b"ready\0", "not a spawn request"),
            (b"spawn\0script\0", "not a spawn request"),  # key without value
            (b"spawn\0cwd\0/\0agent\0" b"5\0", "one of script/module"),
            (b"spawn\0script\0a\0module\0b\0cwd\0/\0agent\0" b"5\0", "one of script/module"),
            (b"spawn\0script\0a\0cwd\0/\0agent\0" b"1\0", "agent"),
            (b"spawn\0script\0a\0cwd\0/\0agent\0" b"5\0colour\0red\0", "unknown key"),
        ]
        for payload, why in bad:
            with self.assertRaises(z.ProtocolError, msg=repr(payload)) as ctx:
                z._parse_request(payload)
            self.assertIn(why, str(ctx.exception))
        with self.assertRaises(ValueError):
            z._parse_request(b"spawn\0script\0a\0cwd\0/\0agent\0x\0")


class PreloadTest(LauncherTestCase):
    def dump(self, kind, rank):
        name = "%s.%d" % (kind, rank) + ("" if kind == "pids" else ".json")
        with open(self.path(name)) as f:
            return json.load(f)

    def run_env(self, preload, sub):
        os.mkdir(self.path(sub))
        args = ["--nproc-per-node=2", "--cpus-allowed=1", "--max-restarts=1", "--python", PYTHON]
        if preload:
            args[:0] = ["--preload", "xml.dom.minidom"]
        rc, out, err = self.run_agent(args + [WORKER, "env", self.path(sub)], {"PET_RDZV_ID": "same"})
        self.assertEqual(rc, 0, err)
        return [(self.dump(sub + "/env", r), self.dump(sub + "/proc", r)) for r in (0, 1)], err

    def test_environment_argv_binding_and_signals_are_those_of_a_normal_start(self):
        normal, _ = self.run_env(False, "normal")
        preloaded, err = self.run_env(True, "preloaded")
        self.assertNotIn("warning", err)
        for rank in (0, 1):
            (env_n, proc_n), (env_p, proc_p) = normal[rank], preloaded[rank]
            self.assertFalse(proc_n["minidom_loaded"])
            for differs in ("MASTER_PORT", "TORCHELASTIC_ERROR_FILE"):  # per run
                self.assertIn(differs, env_p)
                env_n.pop(differs), env_p.pop(differs)
            self.assertEqual(env_p, env_n)
            self.assertNotIn("ELASTIC_ZYGOTE_FD", env_p)
            for key in ("path0", "cwd", "name", "affinity", "signals", "blocked"):
                self.assertEqual(proc_p[key], proc_n[key], key)
            self.assertTrue(proc_p["minidom_loaded"])  # forked from the zygote
            self.assertEqual(proc_p["affinity"], [1])  # --cpus-allowed=1: bound as a normal start
            self.assertEqual(proc_p["pgid"], proc_p["pid"])  # its own process group
            self.assertEqual(proc_p["argv"], [WORKER, "env", self.path("preloaded")])

    def run_ending(self, preload, mode):
        sub = self.path("%s-%s" % (mode, "preloaded" if preload else "normal"))
        os.mkdir(sub)
        args = (["--preload", "json,preloaded_module"] if preload else []) + ["--python", PYTHON, ENDING_WORKER, mode, sub]
        rc, out, err = self.run_agent(["--nproc-per-node=1"] + args, {"PYTHONPATH": HERE})
        with open(os.path.join(sub, "unclosed.0")) as f:
            written = f.read()
        failure = [line for line in err.splitlines() if "failed:" in line]
        worker_err = [line for line in err.splitlines() if line.startswith("[rank0]: ")]
        return rc, sorted(out.splitlines()), written, failure, worker_err

    def test_a_preloaded_workers_end_is_that_of_a_normal_start(self):
        """Threads joined, atexit, __del__ of its modules' objects, unclosed files, C stdio,
        the exit status and text: the same with and without --preload (zygote.py _finish).
        The preloaded modules are not torn down in the worker (preloaded_module.py would say)."""
        for mode, status in (("ok", 0), ("status3", 3), ("text", 1), ("raise", 1)):
            normal = self.run_ending(False, mode)
            preloaded = self.run_ending(True, mode)
            self.assertEqual(preloaded, normal, mode)
            rc, out, written, failure, worker_err = preloaded
            self.assertEqual(rc, 0 if status == 0 else 1, (mode, out, failure))
            self.assertEqual(written, "written, never closed", mode)
            for line in ("main: done", "thread: finished after the main code", "atexit: ran, thread done first: True",
                         "del: __main__'s object finalized", "del: ending_module's object finalized",
                         "c-stdio: before the end"):
                self.assertIn("[rank0]: " + line, out, mode)
            if status:
                self.assertIn("exit code %d" % status, failure[0], mode)
            if mode == "text":
                self.assertEqual(worker_err, ["[rank0]: the worker's exit text"])
            if mode == "raise":
                self.assertEqual(worker_err[-1], "[rank0]: RuntimeError: the worker's uncaught error")

    def wait_round(self, n):
        self.wait_ready(n)
        pids = [self.dump("pids", r)["pids"][0] for r in range(n)]
        for r in range(n):
            os.unlink(self.path("ready.%d" % r))
        return pids

    def zygotes(self, root, workers):
        """The zygote below `root`: its command line (the forked workers have it too)."""
        want = [a.encode() for a in zygote_argv("json")]
        return [p for p in descendants(root) if p not in workers and cmdline(p) == want]

    def test_failed_worker_is_restarted_from_the_same_zygote(self):
        proc = self.start(["--nproc-per-node=2", "--max-restarts=2", "--preload", "json", "--python",
                           PYTHON, WORKER, "wait", self.dir])
        first = self.wait_round(2)
        zygote = self.zygotes(proc.pid, first)
        self.assertEqual(len(zygote), 1, descendants(proc.pid))
        with open("/proc/%d/stat" % zygote[0]) as f:
            agent = int(f.read().rsplit(")", 1)[1].split()[1])
        for pid in first:  # the agent's children, not the zygote's: it reaps them
            self.assertIn(pid, children_of(agent))
        os.kill(first[0], signal.SIGKILL)
        second = self.wait_round(2)
        self.assertEqual(self.zygotes(proc.pid, second), zygote)
        self.assertTrue(set(second).isdisjoint(first))
        for pid in second:
            self.assertIn(pid, children_of(agent))
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertIn("rank 0 (local rank 0) failed: signal SIGKILL", err.decode())
        wait_for(self, lambda: not pid_alive(zygote[0]), "the zygote to exit with the agent")
        self.assert_nothing_left()

    def test_dead_zygote_falls_back_to_normal_starts(self):
        proc = self.start(["--nproc-per-node=2", "--max-restarts=1", "--preload", "json", "--python",
                           PYTHON, WORKER, "wait", self.dir])
        first = self.wait_round(2)
        zygote = self.zygotes(proc.pid, first)
        self.assertEqual(len(zygote), 1)
        os.kill(zygote[0], signal.SIGKILL)
        wait_for(self, lambda: not pid_alive(zygote[0]), "the zygote to die")
        os.kill(first[1], signal.SIGKILL)
        second = self.wait_round(2)  # started normally: the run goes on
        self.assertEqual(self.zygotes(proc.pid, second), [])
        for pid in second:
            self.assertEqual(cmdline(pid)[:2], [PYTHON.encode(), b"-u"])  # exec'd, not forked
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        err = err.decode()
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertIn("the preloaded interpreter (pid %d) exited (signal SIGKILL (9)): workers start "
                      "normally from now on" % zygote[0], err)
        self.assert_nothing_left()

    def test_module_starting_a_thread_at_import_falls_back_with_a_warning(self):
        rc, _, err = self.run_agent(["--nproc-per-node=2", "--preload", "threaded_module", "--python", PYTHON,
                                     WORKER, "env", self.dir], {"PYTHONPATH": HERE})
        self.assertEqual(rc, 0, err)
        self.assertIn("--preload: the preloaded interpreter cannot be used: importing threaded_module "
                      "started 1 thread(s)", err)
        self.assertIn("workers start normally", err)
        self.assertEqual(self.dump("proc", 1)["argv"], [WORKER, "env", self.dir])

    def test_slow_import_on_the_host_does_not_stop_its_heartbeats(self):
        # Issue 19 item 18: the round completes while the host's zygote still imports
        # (6 s, twice heartbeat_timeout=3). The host's loop must go on answering node
        # 1's heartbeats meanwhile; before, it waited for "ready" and node 1 lost it.
        self.assert_slow_zygote_keeps_heartbeats("slow", "slow_module", {"ELASTIC_TEST_SLOW_IMPORT_S": "6"},
                                                 given_up="--preload:")

    def test_slow_spawn_on_the_host_does_not_stop_its_heartbeats(self):
        # Issue 21: the zygote answers each spawn request 5 s late (twice heartbeat_timeout=3
        # less a margin). The host's loop must go on answering node 1's heartbeats while it
        # waits for that answer; before, it waited for the reply and node 1 lost the host.
        self.assert_slow_zygote_keeps_heartbeats("slowfork", "slow_fork_module", {"ELASTIC_TEST_SLOW_FORK_S": "5"},
                                                 given_up="preloaded interpreter")

    def assert_slow_zygote_keeps_heartbeats(self, name, module, env, given_up):
        """Two nodes, the host's zygote preloading `module` (slow on purpose): both end
        with 0, the zygote was used (no `given_up` text), and no node was lost."""
        procs = self.start_two_nodes(name, ["--python", PYTHON, WORKER, "env", self.dir],
                                     {"PYTHONPATH": HERE, **env}, host_args=["--preload", module])
        errs = []
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            errs.append(err.decode())
        self.assertEqual([p.returncode for p in procs], [0, 0], errs)
        self.assertNotIn(given_up, errs[0])  # the zygote was used, not given up
        for err in errs:
            self.assertNotRegex(err, r"lost|silent|taking over", err)
        self.assertEqual(self.dump("env", 0)["WORLD_SIZE"], "2")
        self.assert_nothing_left()
        self.assert_gone(zygote_argv(module))

    def test_missing_module_falls_back_with_a_warning(self):
        rc, _, err = self.run_agent(["--preload", "no_such_module_xyz", "--python", PYTHON, WORKER, "env",
                                     self.dir])
        self.assertEqual(rc, 0, err)
        self.assertIn("import no_such_module_xyz: ModuleNotFoundError", err)

    def test_program_not_run_by_python_ignores_preload_with_a_warning(self):
        rc, out, err = self.run_agent(["--preload", "json", "--no-python", "sh", "-c", "echo hi"])
        self.assertEqual(rc, 0, err)
        self.assertIn("--preload: the program does not run in Python", err)
        self.assertEqual(out, "[rank0]: hi\n")

    def test_interpreter_as_the_program_is_preloaded_too(self):
        # `srun --elastic python3 train.py`: the program is the interpreter itself.
        rc, _, err = self.run_agent(["--nproc-per-node=2", "--preload", "xml.dom.minidom", PYTHON, WORKER,
                                     "env", self.dir])
        self.assertEqual(rc, 0, err)
        self.assertNotIn("warning", err)
        proc = self.dump("proc", 1)
        self.assertEqual(proc["argv"], [WORKER, "env", self.dir])
        self.assertTrue(proc["minidom_loaded"])  # forked from the zygote that imported it

    def test_module_mode_runs_as_main_with_its_path_in_argv0(self):
        pkg = self.path("pkg")
        os.mkdir(pkg)
        with open(os.path.join(pkg, "__init__.py"), "w"):
            pass
        with open(os.path.join(pkg, "tool.py"), "w") as f:
            f.write("import sys, os\nprint(__name__, sys.argv, os.environ['RANK'])\n")
        rc, out, err = self.run_agent(["--preload", "json", "--python", PYTHON, "-m", "pkg.tool", "x"], cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "[rank0]: __main__ ['%s', 'x'] 0\n" % os.path.join(pkg, "tool.py"))
        self.assertNotIn("warning", err)


if __name__ == "__main__":
    unittest.main()
