"""elasticrun against the system's real torchrun (issue 22): a table of torchrun
command lines, written from torchrun's docs and --help (1.13, 2.6, 2.14), with
underscore and dash spellings, run through both with a worker that records its
start (compat_worker.py). Compared: accepted alike (both run, or both refuse),
the same workers, the same contract values where torchrun's contract fixes them
(ranks, sizes, role, restarts, the script's argv), output unbuffered (always, as
torchrun 1.13; torchrun 2.x leaves --no-python programs buffered), and the
variables a worker needs present (MASTER_ADDR/PORT, run id, agent store, error
file). MASTER_ADDR/MASTER_PORT values differ by design: elasticrun's workers use
the agent's store on a port of its own (docs/user.md, "torchrun's flags"). Rows
of newer torchrun's flags and variables (min2.6, min2.14) run through torchrun
where it has them and through elasticrun everywhere; with "lines" the workers'
console lines (their prefix) must be equal too."""
import ctypes
import glob
import json
import os
import socket
import subprocess
import tempfile
import shutil
import time
import unittest

from launcher_test_util import ELASTICRUN, PYTHON

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "compat_worker.py")
CONSOLE_SCRIPT = os.path.join(HERE, "compat-worker")
PYTHON_EXEC = os.path.join(HERE, "compat-python")  # sets COMPAT_VIA, then runs $COMPAT_PYTHON
SHIM = os.path.join(HERE, "../../launcher/python")  # the no-libuv sitecustomize (ELASTIC_TORCH_NO_LIBUV=1)
DEADLINE_S = 120
CLONE_NEWNET = 0x40000000


def own_network():
    """Moves this test process (and so both launchers it starts) into a network
    namespace of its own with loopback only: the table runs as four tests side
    by side, and rows without a port bind the launchers' default (29500) in
    each. Needs root (CI); elsewhere the tests share the network: run them one
    at a time (ctest -j1)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        print("note: no network namespace of its own (%s): run these tests one at a time"
              % os.strerror(ctypes.get_errno()))
        return
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
EQUAL = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
         "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT",
         "TORCHELASTIC_MAX_RESTARTS", "argv", "COMPAT_VIA"]
PRESENT = ["MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
           "TORCHELASTIC_ERROR_FILE"]


def torch_version():
    # The installed package's version (its metadata), without an `import torch` (1.5-3 CPU-s).
    out = subprocess.run([PYTHON, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                         capture_output=True, text=True, timeout=DEADLINE_S)
    return tuple(int(part) for part in out.stdout.strip().split("+")[0].split(".")[:2])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --nproc-per-node=auto without a GPU is one worker per CPU for both (torchrun:
# os.cpu_count(); elasticrun: the CPUs it may run on, the same outside a cpuset); a
# machine with more than MAX_AUTO CPUs leaves the row out (that many workers twice).
CPUS = os.cpu_count() or 1
MAX_AUTO = 32

# name, [command line per node] ({port} and {W}/{C} filled in), expected workers
# (0: both refuse), what else: "dash" (torchrun >= 2 only: 1.13 knows underscores
# only), "id" (the run id is given: compare it), "standalone1" (1.13's --standalone
# binds the fixed port 29400: skipped there), "min2.6"/"min2.14" (torchrun's flag
# or variable is that new: older ones are skipped), "lines" (compare the workers'
# console lines), "sig" (compare TORCHELASTIC_SIGNALS_TO_HANDLE: torchrun >= 2.14
# sets it), "filtered" (compare LOG_DIR/*/attempt_0/filtered_stdout.log, {L} the
# log directory); optionally the launchers' extra environment.
LAUNCH_ROWS = [
    ("plain, single node", [["--nproc_per_node=2", "{W}"]], 2, ""),
    ("plain, dash", [["--nproc-per-node=2", "{W}", "a", "b"]], 2, "dash"),
    ("standalone", [["--standalone", "--nproc_per_node=2", "{W}"]], 2, "standalone1"),
    ("c10d endpoint port 0 (free port)",
     [["--nnodes=1", "--nproc_per_node=2", "--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0", "{W}"]], 2, ""),
    ("c10d endpoint and id",
     [["--nnodes=1", "--nproc_per_node=2", "--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:{port}",
       "--rdzv_id=job7", "--max_restarts=1", "{W}"]], 2, "id"),
    ("c10d, torchrun's rdzv_conf keys",
     [["--nnodes=1", "--nproc_per_node=1", "--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:{port}",
       "--rdzv_conf=join_timeout=30,read_timeout=60,timeout=900", "{W}"]], 1, ""),
    ("static, single node", [["--nnodes=1", "--node_rank=0", "--master_addr=127.0.0.1",
                              "--master_port={port}", "--nproc_per_node=2", "{W}"]], 2, ""),
    ("static, dash", [["--nnodes=1", "--node-rank=0", "--master-addr=127.0.0.1", "--master-port={port}",
                       "--nproc-per-node=2", "--rdzv-backend=static", "{W}"]], 2, "dash"),
    ("static, two nodes",
     [["--nnodes=2", "--node_rank=0", "--master_addr=127.0.0.1", "--master_port={port}",
       "--nproc_per_node=2", "{W}"],
      ["--nnodes=2", "--node_rank=1", "--master_addr=127.0.0.1", "--master_port={port}",
       "--nproc_per_node=2", "{W}"]], 4, ""),
]
PROGRAM_ROWS = [
    ("start method, role, monitor interval",
     [["--start_method=fork", "--role=trainer", "--monitor_interval=1", "--nproc_per_node=2", "{W}"]], 2, ""),
    ("start method, dash", [["--start-method", "spawn", "--nproc-per-node=1", "{W}"]], 1, "dash"),
    ("repeated option: the last wins", [["--nproc_per_node=1", "--max_restarts=3", "--nproc_per_node=2",
                                         "--max_restarts=0", "{W}"]], 2, ""),
    ("-- after the program", [["--nproc_per_node=1", "{W}", "--", "--depth=26", "--", "x"]], 1, ""),
    ("module", [["--nproc_per_node=2", "-m", "compat_worker", "--flag"]], 2, ""),
    ("console script, no .py", [["--nproc_per_node=1", "{C}", "x"]], 1, ""),
    ("no_python", [["--nproc_per_node=1", "--no_python", "{C}", "y"]], 1, ""),
]
NPROC_ENV_ROWS = [
    ("bad nproc", [["--nproc_per_node=many", "{W}"]], 0, ""),
    ("nproc auto without a GPU: one worker per CPU", [["--nproc_per_node=auto", "{W}"]], CPUS, "",
     {"CUDA_VISIBLE_DEVICES": ""}),
    ("nproc auto, dash", [["--nproc-per-node", "auto", "{W}"]], CPUS, "dash", {"CUDA_VISIBLE_DEVICES": ""}),
    ("nproc xpu on a machine without one", [["--nproc-per-node=xpu", "{W}"]], 0, "min2.6"),
    ("PYTHON_EXEC", [["--nproc_per_node=2", "{W}"]], 2, "", {"PYTHON_EXEC": PYTHON_EXEC}),
    ("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", [["--nproc_per_node=1", "{W}"]], 1, "",
     {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "5"}),
    ("TORCH_ELASTIC_SHUTDOWN_TIMEOUT not a number", [["--nproc_per_node=1", "{W}"]], 0, "min2.14",
     {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "soon"}),
]
LOGGING_ROWS = [
    ("prefix template from the variable, tee", [["--tee=3", "--nproc_per_node=2", "{W}"]], 2, "min2.6 lines",
     {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[${role_name}:${rank}] "}),
    ("prefix template flag with hostname, tee",
     [["--tee=3", "--log-line-prefix-template=<${{hostname}}|${{role_name}}|${{rank}}|${{local_rank}}> ",
       "--nproc-per-node=2", "{W}"]], 2, "min2.14 lines"),
    ("signals to handle", [["--signals-to-handle=SIGTERM,SIGUSR1", "--nproc-per-node=1", "{W}"]], 1, "min2.14 sig"),
    ("TORCHELASTIC_SIGNALS_TO_HANDLE exported: set by the launcher", [["--nproc_per_node=1", "{W}"]], 1, "sig",
     {"TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGUSR2"}),
    ("shutdown timeout, event log handler, logs specs, virtual local rank",
     [["--shutdown-timeout=5", "--event-log-handler=console", "--logs-specs=default", "--virtual-local-rank",
       "--nproc-per-node=2", "{W}"]], 2, "min2.14"),
    ("duplicate stdout filters, tee", [["--tee=3", "--log-dir={L}", "--log-line-prefix-template=[${{rank}}] ",
                                        "--duplicate-stdout-filters=local_rank=1,no,,such", "--nproc-per-node=2",
                                        "{W}"]], 2, "min2.14 filtered"),
    ("unknown option", [["--nproc_per_node=1", "--no-such-option", "{W}"]], 0, ""),
]
ROWS = LAUNCH_ROWS + PROGRAM_ROWS + NPROC_ENV_ROWS + LOGGING_ROWS


class TorchrunCompatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        own_network()
        cls.version = torch_version()
        cls.torchrun = [PYTHON, "-m", "torch.distributed.run"]
        cls.env = dict(os.environ, COMPAT_PYTHON=PYTHON)
        cls.env.pop("OMP_NUM_THREADS", None)
        if os.environ.get("ELASTIC_TORCH_NO_LIBUV") == "1":
            # torchrun's own agent on a torch without libuv needs the same shim as the workers.
            cls.env["PYTHONPATH"] = os.path.abspath(SHIM) + (":" + cls.env["PYTHONPATH"]
                                                             if cls.env.get("PYTHONPATH") else "")

    def launch(self, launcher, lines, out_dir, extra_env):
        """Starts one launcher per node line at once; returns their exit codes, stderr and
        the workers' console lines (compat-line)."""
        env = dict(self.env, COMPAT_OUT=out_dir, **extra_env)
        if launcher is ELASTICRUN:
            env["PATH"] = os.path.dirname(PYTHON) + ":" + env.get("PATH", "")
        procs = []
        for line in lines:
            argv = [ELASTICRUN] + line if launcher is ELASTICRUN else self.torchrun + line
            if launcher is not ELASTICRUN and self.version < (2, 0):
                # 1.13 on Python 3.11 crashes with the default --redirects (docs: REFERENCE);
                # a local rank that does not exist keeps every stream on the console.
                argv = argv[:3] + ["--redirects=9:1", "--tee=9:1"] + argv[3:]
            procs.append(subprocess.Popen(argv, env=env, cwd=HERE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, start_new_session=True))
        results, lines_out = [], []
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=DEADLINE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                out, err = proc.communicate()
            results.append((proc.returncode, err.decode(errors="replace")[-3000:]))
            lines_out += [line for line in out.decode(errors="replace").splitlines() if "compat-line" in line]
        return results, sorted(lines_out)

    def records(self, out_dir):
        found = {}
        for name in os.listdir(out_dir):
            if name.endswith(".json"):
                with open(os.path.join(out_dir, name)) as f:
                    record = json.load(f)
                found[int(record["RANK"])] = record
        return found

    @staticmethod
    def filtered(log_dir):
        """The lines of LOG_DIR/<run>/attempt_0/filtered_stdout.log (torchrun's and ours)."""
        found = []
        for path in glob.glob(os.path.join(log_dir, "*", "attempt_0", "filtered_stdout.log")):
            with open(path) as f:
                found += f.read().splitlines()
        return sorted(found)

    def torchrun_has(self, flags):
        if self.version < (2, 0) and ("dash" in flags or "standalone1" in flags):
            return False  # 1.13 knows underscores only; its --standalone binds the fixed port 29400
        for flag in flags.split():
            if flag.startswith("min") and self.version < tuple(int(p) for p in flag[3:].split(".")):
                return False
        return True

    def run_row(self, name, lines, workers, flags, extra_env=None):
        port = free_port()
        got = {}
        for launcher, tag in ((ELASTICRUN, "elasticrun"), ("torchrun", "torchrun")):
            if tag == "torchrun" and not self.torchrun_has(flags):
                continue
            out_dir = tempfile.mkdtemp(prefix="elastic-compat-")
            log_dir = os.path.join(out_dir, "logs")
            fill = {"port": port, "W": WORKER, "C": CONSOLE_SCRIPT, "L": log_dir}
            filled = [[arg.format(**fill) for arg in line] for line in lines]
            try:
                results, console = self.launch(launcher, filled, out_dir, extra_env or {})
                if "filtered" in flags:
                    console = self.filtered(log_dir)
                got[tag] = (results, self.records(out_dir), console)
            finally:
                shutil.rmtree(out_dir, ignore_errors=True)
        for tag, (results, records, _) in got.items():
            if workers == 0:
                self.assertTrue(all(rc != 0 for rc, _ in results), "%s: %s ran %s" % (name, tag, results))
                self.assertEqual(records, {}, "%s: %s started workers" % (name, tag))
            else:
                self.assertTrue(all(rc == 0 for rc, _ in results), "%s: %s failed: %s" % (name, tag, results))
                self.assertEqual(sorted(records), list(range(workers)), "%s: %s" % (name, tag))
        if "torchrun" not in got or workers == 0:
            return
        ours, theirs = got["elasticrun"][1], got["torchrun"][1]
        if "lines" in flags or "filtered" in flags:
            self.assertEqual(got["elasticrun"][2], got["torchrun"][2], name)
            self.assertEqual(len(got["elasticrun"][2]), workers if "lines" in flags else 1, name)
        for rank in range(workers):
            if "sig" in flags and self.version >= (2, 14):
                key = "TORCHELASTIC_SIGNALS_TO_HANDLE"
                self.assertEqual(ours[rank][key], theirs[rank][key], "%s: rank %d: %s" % (name, rank, key))
            for key in EQUAL:
                self.assertEqual(ours[rank][key], theirs[rank][key], "%s: rank %d: %s" % (name, rank, key))
            # Output is unbuffered wherever torchrun's is, and also for a program
            # run without python (--no-python, a console script): torchrun 1.13
            # sets PYTHONUNBUFFERED there, 2.x does not (its output then waits
            # until exit); elasticrun always shows it at once (docs/user.md).
            self.assertTrue(ours[rank]["unbuffered"], "%s: rank %d: buffered output" % (name, rank))
            for key in PRESENT:
                self.assertTrue(ours[rank][key], "%s: rank %d: %s missing" % (name, rank, key))
            if "id" in flags:
                self.assertEqual(ours[rank]["TORCHELASTIC_RUN_ID"], theirs[rank]["TORCHELASTIC_RUN_ID"], name)

    def run_rows(self, rows):
        start = time.monotonic()
        for name, lines, workers, flags, *extra_env in rows:
            if workers > MAX_AUTO:
                print("left out: %s (%d CPUs)" % (name, CPUS))
                continue
            with self.subTest(name):
                self.run_row(name, lines, workers, flags, *extra_env)
        print("%d command lines against torch %s in %.1f s" % (len(rows), ".".join(map(str, self.version)),
                                                               time.monotonic() - start))

    # The table in four tests, so that CI runs them side by side (the whole table
    # was the torch suite's longest test: 187-317 s).
    def test_launch_and_rendezvous_lines_run_alike(self):
        self.run_rows(LAUNCH_ROWS)

    def test_program_lines_run_alike(self):
        self.run_rows(PROGRAM_ROWS)

    def test_nproc_and_environment_lines_run_alike(self):
        self.run_rows(NPROC_ENV_ROWS)

    def test_logging_and_signal_lines_run_alike(self):
        self.run_rows(LOGGING_ROWS)


if __name__ == "__main__":
    unittest.main()
