#!/usr/bin/python3
"""spank.docs_commands: every shell command README.md, docs/user.md and
docs/admin.md show runs through real Slurm (srun, sbatch, salloc) on the test
cluster, so the documentation cannot drift from what works.

The commands are read from the documents at test time (their ```sh blocks);
only node and GPU counts are adapted (at most 2 nodes, 1 GPU per node: a cheap
run) and the user's `train.py` is a tiny DDP program that accepts any argument.
A block that is not run (building, installing: other suites cover them) is
listed in NOT_RUN with why; a block that is neither run nor listed fails
test_every_block_is_run_or_listed. Blocks of one kind share one allocation.
Three blocks have a test of their own (OWN_TEST): the scale-up job (4 nodes,
its `sleep` replaced by a wait until the first step trains), the
standalone multi-machine command (run on two nodes of the cluster outside
Slurm, as two machines) and the stop on no progress (a train.py stuck at
one checkpoint: the job ends with exit 5).

Environment: SPANK_SO, ELASTICRUN (the built binaries).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "cluster"))
from cluster import CLUSTER_SH, ClusterTestCase, main as cluster_main  # noqa: E402

SPANK_SO = os.environ.get("SPANK_SO", str(ROOT / "build/spank_plugin/spank_elastic.so"))
ELASTICRUN = os.environ.get("ELASTICRUN", str(ROOT / "build/launcher/elasticrun"))
DOCS = ("README.md", "docs/user.md", "docs/admin.md")
MAX_NODES = 2  # each run starts torch on every node: 2 keeps the whole file to minutes
SCALE_UP_NODES = 4  # the scale-up job as written (-N4, --elastic=2:4, --relative=2): the cluster's size
TIMEOUT = float(os.environ.get("SPANK_E2E_TIMEOUT", "300"))

# Blocks not run here: (a regex their text matches, why). Each must match a block.
NOT_RUN = [
    (r"^scripts/demo\.sh", "the repository's own scripts (they build and start their own cluster)"),
    (r"^cmake -S \. -B build +# RelWithDebInfo", "building one component (the build itself is every suite's)"),
    (r"cpack -G DEB", "packaging: ship.package_contents and ship.deb_on_cluster"),
    (r"^scripts/install-deps\.sh", "installing from source: ship.packager_build_without_tests"),
    (r"^cp /etc/slurm/plugstack\.conf\.d", "enabling the plugin as root: ship.deb_on_cluster"),
    (r"^# slurm\.conf", "the cli_filter as root: ship.cli_filter_lua"),
    (r"^fuzz/run\.sh", "fuzzing for minutes: the fuzz_* tests run each target briefly"),
    (r"^rm -f /etc/slurm", "uninstalling as root"),
    (r"^elasticrun status --rdzv-endpoint", "needs a running job's host: rendezvous.events "
     "(test_event_record.py) runs the command against one, text and --json"),
    (r"^squeue -O JobID:10,Comment:120", "needs a running elastic job: spank.e2e "
     "test_squeue_shows_the_live_comment reads squeue's comment while one runs"),
    (r"srun torchrun", "the torchrun recipe the migration replaces (srun refuses torchrun under --elastic)"),
    (r"--elastic-join=1234", "joins a running job by its id: spank.e2e "
     "test_a_job_joins_a_running_job_with_elastic_join_and_leaves_with_notice runs it (and "
     "test_elastic_join_refuses_a_job_that_does_not_exist_or_is_another_users the refusals)"),
    (r"--container-image=nvcr\.io", "needs pyxis/enroot and a registry: containers.pyxis runs the same "
     "srun line (its pyxis stand-in, another Debian release's rootfs as the image, the agent bundle)"),
    (r"--health-check='nvidia-smi", "needs nvidia-smi and /scratch on every machine; the option: "
     "spank.e2e test_health_check_failing_on_one_node_keeps_it_out"),
]

# Blocks run by a test of their own: (a regex their text matches, the test).
OWN_TEST = [
    (r"--relative=2", "test_scale_up_block"),
    (r"--rdzv-endpoint=host1:29400", "test_multi_machine_block"),
    (r"PET_PROGRESS_FILE=", "test_no_progress_block"),
]

# Lines of a run block left out: (regex, why).
LINES_NOT_RUN = [
    (r"\s\.\.\.\s*(#|$)", "a fragment ('...' stands for the rest)"),
    (r"\bJOBID\b", "a placeholder for the reader's job id"),
]

# The user's program: what docs call train.py (and mypkg.train): DDP over gloo,
# one all_reduce, any arguments accepted. With DOCS_TRAIN_UNTIL_WORLD=N a world
# smaller than N goes on training (rank 0 creates DOCS_TRAINING_MARK once it
# trains) until its agent stops it for a bigger round. With DOCS_STUCK_AT=N rank
# 0 fails at the same step every round (before importing torch: cheap), its last
# checkpoint N in $CKPT/latest_checkpointed_iteration.txt; the others wait.
TRAIN = '''\
import os, signal, sys
if os.environ.get("DOCS_STUCK_AT"):
    if os.environ["RANK"] != "0":
        signal.pause()  # until the agent stops it for the next round
    with open(os.path.join(os.environ["CKPT"], "latest_checkpointed_iteration.txt"), "w") as f:
        f.write(os.environ["DOCS_STUCK_AT"] + "\\n")
    print(f"DOCS-STUCK restart={os.environ['TORCHELASTIC_RESTART_COUNT']}", flush=True)
    sys.exit(1)
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([1.0])
dist.all_reduce(t)
world = int(os.environ['WORLD_SIZE'])
print(f"DOCS-OK rank={os.environ['RANK']} world={world} sum={t.item():g} host={os.uname().nodename}", flush=True)
if world < int(os.environ.get("DOCS_TRAIN_UNTIL_WORLD", "0")):
    if os.environ["RANK"] == "0":
        open(os.environ["DOCS_TRAINING_MARK"], "w").close()
    signal.pause()  # "training" until the agent's SIGTERM (the test's timeout bounds it)
'''


def shell_blocks():
    """[(doc, line, text)] of every ```sh / ```bash block."""
    out = []
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for m in re.finditer(r"^```(sh|bash|shell)\n(.*?)^```", text, re.S | re.M):
            out.append((doc, text[:m.start()].count("\n") + 1, m.group(2)))
    return out


def not_run_reason(block):
    for pattern, why in NOT_RUN + OWN_TEST:
        if re.search(pattern, block, re.M):
            return why
    return None


def own_test_blocks(test):
    """[(doc, line, text)] of the blocks OWN_TEST gives to `test`."""
    patterns = [pattern for pattern, name in OWN_TEST if name == test]
    return [(doc, line, block) for doc, line, block in shell_blocks()
            if any(re.search(pattern, block, re.M) for pattern in patterns)]


def is_batch(block):
    first = block.lstrip().splitlines()[0]
    return first.startswith(("#!", "#SBATCH"))


def adapt(block, max_nodes=MAX_NODES):
    """Node counts at most max_nodes, one GPU per node, a short --signal lead; a
    fragment or placeholder line becomes a comment; the rest as written."""
    def cap(n):
        return str(min(int(n), max_nodes))
    block = re.sub(r"(?<=-N)(\d+)(?:-(\d+))?",
                   lambda m: cap(m.group(1)) + (f"-{cap(m.group(2))}" if m.group(2) else ""), block)
    block = re.sub(r"(--elastic=|--nnodes=)(\d+):(\d+)",
                   lambda m: f"{m.group(1)}{cap(m.group(2))}:{cap(m.group(3))}", block)
    block = re.sub(r"--gpus-per-node=\d+", "--gpus-per-node=1", block)
    block = re.sub(r"--signal=USR1@\d+", "--signal=USR1@5", block)
    lines = []
    for line in block.splitlines():
        # The test cluster's nodes reach each other over eth0 (GLOO_SOCKET_IFNAME),
        # the hub where srun and a standalone elasticrun run has loopback only.
        if line.startswith("elasticrun --standalone"):
            line = "GLOO_SOCKET_IFNAME=lo " + line
        for pattern, why in LINES_NOT_RUN:
            if re.search(pattern, line):
                line = f"# not run: {why}"
        lines.append(line)
    block = "\n".join(lines) + "\n"
    if block.startswith("#SBATCH"):
        block = "#!/bin/sh\n" + block  # sbatch wants an interpreter line
    return block


class TestDocsBlocks(unittest.TestCase):
    """Without a cluster: what is read from the documents."""

    def test_every_block_is_run_or_listed(self):
        blocks = shell_blocks()
        self.assertGreater(len(blocks), 10)
        for pattern, why in NOT_RUN:
            self.assertTrue(any(re.search(pattern, b, re.M) for _, _, b in blocks),
                            f"NOT_RUN entry matches no block any more: {pattern} ({why})")
        for pattern, test in OWN_TEST:
            self.assertTrue(any(re.search(pattern, b, re.M) for _, _, b in blocks),
                            f"OWN_TEST entry matches no block any more: {pattern} ({test})")
            self.assertTrue(hasattr(TestDocsCommands, test), test)
        runnable = [b for _, _, b in blocks if not_run_reason(b) is None]
        for block in runnable:
            self.assertRegex(block, r"(?m)^\s*(srun|elasticrun|#SBATCH|export)\b", block)

    def test_adapt_caps_nodes_and_gpus_only(self):
        self.assertEqual(adapt("srun -N2-8 --no-kill --elastic=2:8 --gpus-per-node=8 train.py"),
                         "srun -N2-2 --no-kill --elastic=2:2 --gpus-per-node=1 train.py\n")
        self.assertEqual(adapt("scancel --signal=USR1 JOBID  # by hand"),
                         "# not run: a placeholder for the reader's job id\n")
        self.assertEqual(adapt("srun --elastic --elastic-max-restarts=3 train.py --lr 0.1"),
                         "srun --elastic --elastic-max-restarts=3 train.py --lr 0.1\n")
        self.assertEqual(adapt("#SBATCH -N8 --gpus-per-node=8 --no-kill\n#SBATCH --elastic=4:8"),
                         "#!/bin/sh\n#SBATCH -N2 --gpus-per-node=1 --no-kill\n#SBATCH --elastic=2:2\n")
        self.assertEqual(adapt("elasticrun --nnodes=2:4 --nproc-per-node=gpu train.py"),
                         "elasticrun --nnodes=2:2 --nproc-per-node=gpu train.py\n")
        self.assertEqual(adapt("#SBATCH -N4 --no-kill\nsrun -N2 --relative=2 --elastic=2:4 train.py", max_nodes=4),
                         "#!/bin/sh\n#SBATCH -N4 --no-kill\nsrun -N2 --relative=2 --elastic=2:4 train.py\n")


def trained(out):
    """{world: [(rank, host)]} of the DOCS-OK lines whose all_reduce summed to the world."""
    worlds = {}
    for m in re.finditer(r"DOCS-OK rank=(\d+) world=(\d+) sum=(\S+) host=(\S+)", out):
        if float(m.group(3)) == float(m.group(2)):
            worlds.setdefault(int(m.group(2)), []).append((int(m.group(1)), m.group(4)))
    return {world: sorted(ranks) for world, ranks in worlds.items()}


class TestDocsCommands(ClusterTestCase):
    nodes = SCALE_UP_NODES  # the other blocks use MAX_NODES of them
    plugin = SPANK_SO
    plugin_args = [f"launcher={ELASTICRUN}"]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The reader's working directory: train.py, a package, the examples; HOME too.
        cls.work = Path(tempfile.mkdtemp(prefix="docs-", dir=cls.cluster.dir))
        (cls.work / "train.py").write_text(TRAIN)
        (cls.work / "mypkg").mkdir()
        (cls.work / "mypkg" / "__init__.py").write_text("")
        (cls.work / "mypkg" / "train.py").write_text(TRAIN)
        os.symlink(ROOT / "examples", cls.work / "examples")
        os.chmod(cls.work, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)
        super().tearDownClass()

    def env(self):
        # elasticrun as if installed; the system's python3 (the one with torch), not
        # whatever the caller's PATH puts first.
        path = f"{Path(ELASTICRUN).resolve().parent}:/usr/local/bin:/usr/bin:/bin"
        return {"HOME": str(self.work), "GLOO_SOCKET_IFNAME": "eth0", "PATH": path}

    def run_blocks(self, batch):
        ran = 0
        for doc, line, block in shell_blocks():
            if not_run_reason(block) is not None or is_batch(block) != batch:
                continue
            script = adapt(block)
            with self.subTest(doc=f"{doc}:{line}"):
                if batch:
                    rc, job, out = self.cluster.sbatch(script, args=[f"--chdir={self.work}"],
                                                       timeout=TIMEOUT, env=self.env())
                    self.assertEqual(rc, 0, f"{doc}:{line}\n{script}\n{out}")
                else:
                    # A plain block runs as the reader would inside a job (its sruns
                    # see the allocation, as after `salloc -N3 --no-kill`).
                    path = self.work / f"block-{line}.sh"
                    path.write_text("set -e\n" + script)
                    r = self.cluster.run(["salloc", f"-N{MAX_NODES}", "--no-kill", "--gpus-per-node=1",
                                          "bash", str(path)],
                                         timeout=TIMEOUT, env=self.env(), cwd=self.work)
                    out = r.stdout + r.stderr
                    self.assertEqual(r.returncode, 0, f"{doc}:{line}\n{script}\n{out}")
                if re.search(r"\btrain\.py\b|mypkg\.train", script):
                    self.assertIn("DOCS-OK", out, f"{doc}:{line}\n{script}\n{out}")
                    self.assertNotIn("sum=0", out)
                ran += 1
        return ran

    def node_addr(self, node):
        r = self.cluster.run(["scontrol", "show", "node", node], timeout=30, check=True)
        return re.search(r"NodeAddr=(\S+)", r.stdout).group(1)

    def test_scale_up_block(self):
        """docs/user.md's scale-up job as written on 4 nodes. Its `sleep 600` (the
        first step trains a while) becomes a wait until the first step trains: a
        shorter fixed sleep would race a loaded machine (the newcomers could join
        the first round). The first step trains on n1-n2; the second step's n3-n4
        join, and every agent restarts its workers in a round of 4, not counted as
        a failure (the first step's restart budget is 0: MIN is its node count)."""
        [(doc, line, block)] = own_test_blocks("test_scale_up_block")
        mark = self.work / "first-step-trains"
        script = adapt(block, max_nodes=SCALE_UP_NODES)
        self.assertIn("\nsleep 600\n", script)
        # Bounded, and over as soon as the first step ($!) ended.
        script = script.replace("\nsleep 600\n", f"\ntimeout {TIMEOUT:.0f} sh -c 'until [ -e {mark} ]; do "
                                "kill -0 $0 || exit 1; sleep 0.1; done' $!\n")
        env = {**self.env(), "DOCS_TRAIN_UNTIL_WORLD": "4", "DOCS_TRAINING_MARK": str(mark)}
        rc, job, out = self.cluster.sbatch(script, args=[f"--chdir={self.work}"], timeout=TIMEOUT, env=env)
        where = f"{doc}:{line}\n{script}\n{out}"
        self.assertEqual(rc, 0, where)
        self.assertEqual(trained(out).get(2), [(0, "n1"), (1, "n2")], where)
        # Every node once, the first step's first node (the host) rank 0; the others'
        # order mixes the steps (each step's SLURM_NODEID, then arrival).
        grown = trained(out).get(4, [])
        self.assertEqual(([rank for rank, _ in grown], sorted(host for _, host in grown)),
                         ([0, 1, 2, 3], ["n1", "n2", "n3", "n4"]), where)
        self.assertEqual(grown[0], (0, "n1"), where)
        self.assertIn("growing the job", out, where)

    def test_multi_machine_block(self):
        """The blocks 'without Slurm' (README.md, docs/user.md) run as written on
        each of 2 machines: two nodes of the cluster (each its own network
        namespace), outside any Slurm step. host1 is the first machine's address;
        counts adapted: --nnodes=2:4 becomes 2:2 (2 machines), and
        CUDA_VISIBLE_DEVICES=0 stands for each machine's one GPU (these have
        none, and `gpu` with none is an error: docs/elasticrun.md). The joins are
        authenticated with a token file, as docs/user.md says."""
        blocks = own_test_blocks("test_multi_machine_block")
        self.assertEqual(sorted(doc for doc, _, _ in blocks), ["README.md", "docs/user.md"])
        token = self.work / "rdzv-token"
        token.write_text("docs-multi-machine-secret\n")
        os.chmod(token, 0o600)
        host1 = self.node_addr("n1")
        machine_env = {**self.env(), "CUDA_VISIBLE_DEVICES": "0", "ELASTIC_RDZV_TOKEN_FILE": str(token)}
        ran = set()
        for doc, line, block in blocks:
            script = adapt(block).replace("host1:", f"{host1}:")
            # The one-machine command (--standalone) once, on the first machine (both
            # documents show the same one: 4 workers importing torch cost half a minute).
            for command in re.findall(r"(?m)^.*elasticrun --standalone .*$", script):
                if command in ran:
                    script = script.replace(command, "# not run: the same command ran in the block before")
                ran.add(command)
            second = re.sub(r"(?m)^.*elasticrun --standalone .*$", "# not run: on the first machine only", script)
            with self.subTest(doc=f"{doc}:{line}"):
                machines = []
                for node, text in (("n1", script), ("n2", second)):
                    path = self.work / f"machine-{node}-{line}.sh"
                    path.write_text(f"set -e\ncd {self.work}\n" + text)
                    machines.append(subprocess.Popen(
                        [str(CLUSTER_SH), "--dir", str(self.cluster.dir), "node-run", node, "env",
                         *(f"{k}={v}" for k, v in machine_env.items()), "bash", str(path)],
                        env=self.cluster._env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
                outs = [m.communicate(timeout=TIMEOUT)[0] for m in machines]
                where = f"{doc}:{line}\n{script}\n" + "\n".join(outs)
                self.assertEqual([m.returncode for m in machines], [0, 0], where)
                # --standalone --nproc-per-node=4 on n1, then one job of 2 machines.
                if "elasticrun --standalone" in script:
                    self.assertEqual(trained(outs[0]).get(4), [(r, "n1") for r in range(4)], where)
                # Outside Slurm the ranks follow the order of arrival.
                job = trained("\n".join(outs)).get(2, [])
                self.assertEqual(([rank for rank, _ in job], sorted(host for _, host in job)),
                                 ([0, 1], ["n1", "n2"]), where)
        self.assertEqual(len(ran), 1, ran)  # the documents' one standalone command ran

    def test_no_progress_block(self):
        """docs/user.md's 'Stop on no progress' block as written (inside a 2-node
        allocation, as the plain blocks): train.py fails at the same step every
        round (rank 0 on n1), its checkpoint stuck at iteration 1500. The first failed round sets
        the baseline; after 3 more without progress every agent ends the job with
        exit 5 although 96 of the 100 restarts are left. Quick failures would be a
        crash loop first (exit 2, the rule that comes first): PET_CRASH_LOOP_COUNT=0
        stands for a training that fails more slowly than the crash-loop window."""
        [(doc, line, block)] = own_test_blocks("test_no_progress_block")
        ckpt = self.work / "ckpt"
        ckpt.mkdir(exist_ok=True)
        script = adapt(block)
        path = self.work / f"block-{line}.sh"
        path.write_text("set -e\n" + script)
        env = {**self.env(), "CKPT": str(ckpt), "DOCS_STUCK_AT": "1500", "PET_CRASH_LOOP_COUNT": "0"}
        r = self.cluster.run(["salloc", f"-N{MAX_NODES}", "--no-kill", "--gpus-per-node=1", "bash", str(path)],
                             timeout=TIMEOUT, env=env, cwd=self.work)
        out = r.stdout + r.stderr
        where = f"{doc}:{line}\n{script}\n{out}"
        self.assertEqual(r.returncode, 5, where)
        self.assertEqual(out.count(
            f"no progress: 3 failed round(s) in a row without the iteration in {ckpt}/latest_checkpointed_iteration.txt "
            "growing, last 1500 (--progress-file, --no-progress-restarts=3): ending the job instead of restarting "
            "(exit 5: do not requeue)"), 1, where)
        self.assertIn("job failed: first failure: rank 0 (local rank 0) on n1: exit code 1", out)
        # Rounds 0-3, no fifth.
        self.assertEqual(re.findall(r"DOCS-STUCK restart=(\d+)", out), ["0", "1", "2", "3"], where)

    def test_plain_blocks(self):
        self.assertGreater(self.run_blocks(batch=False), 3)

    def test_batch_scripts(self):
        self.assertGreater(self.run_blocks(batch=True), 2)


if __name__ == "__main__":
    cluster_main()
