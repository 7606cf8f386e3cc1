#!/usr/bin/python3
"""spank.plugin: spank_elastic.so through real srun/sbatch on the 3-node test cluster.

The launcher is env_dump.sh (prints what the plugin handed it), so these tests
check the plugin alone: options in --help, validation in srun before launch,
plugstack.conf arguments, wrapping (argv[0] + PET_* environment) on every node,
sbatch inheritance, --export=NONE, --resv-ports, --mpi=pmix, and that bad input
fails the step with a message but never takes srun or a node down.
Environment: SPANK_SO (the built plugin), PMIX_PROBE (elastic_pmix_probe, optional).
"""

import os
import re
import sys
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "cluster"))
from cluster import ClusterTestCase, main as cluster_main, slurm_pmix_missing  # noqa: E402

SPANK_SO = os.environ.get("SPANK_SO", str(HERE.parents[1] / "build/spank_plugin/spank_elastic.so"))
DUMP = str(HERE / "env_dump.sh")
PMIX_PROBE = os.environ.get("PMIX_PROBE", "")
OPTIONS = ["elastic", "elastic-nproc-per-node", "elastic-max-restarts", "elastic-rdzv-port",
           "elastic-rdzv-id", "elastic-rdzv-endpoint", "elastic-rdzv-conf", "elastic-bind",
           "elastic-log-dir", "elastic-no-python", "elastic-python", "elastic-join"]
# Slurm >= 23.11 wraps the task with spank_prepend_task_argv (slurm_compat.h);
# the plugin is built for the Slurm whose headers are installed (srun --version
# of 26.05 wants a slurm.conf).
_SLURM_VERSION_HEX = re.search(r"#define SLURM_VERSION_NUMBER\s+(0x[0-9a-fA-F]+)",
                               Path("/usr/include/slurm/slurm_version.h").read_text()).group(1)
SLURM_PREPENDS = int(_SLURM_VERSION_HEX, 16) >= 0x170b00
NODE_ADDR = {"n1": "10.200.0.11", "n2": "10.200.0.12", "n3": "10.200.0.13"}


def parse_dump(text):
    """{host: {KEY: VALUE}} from env_dump.sh's lines."""
    nodes = {}
    for line in text.splitlines():
        m = re.match(r"^(n\d+) ([A-Za-z0-9_]+)=(.*)$", line)
        if m:
            nodes.setdefault(m.group(1), {})[m.group(2)] = m.group(3)
    return nodes


class TestSpankPlugin(ClusterTestCase):
    nodes = 3
    plugin = SPANK_SO
    plugin_args = [f"launcher={DUMP}"]

    def setUp(self):
        self.plugstack = self.cluster.plugstack_conf.read_text()

    def tearDown(self):
        self.cluster.plugstack_conf.write_text(self.plugstack)  # re-read by every srun

    def set_plugstack_args(self, *args):
        self.cluster.set_plugin_args(SPANK_SO, args)

    def srun_dump(self, args, timeout=60, **kw):
        r = self.cluster.srun(args, timeout=timeout, **kw)
        return r, parse_dump(r.stdout)

    def assert_nodes_healthy(self):
        states = self.cluster.node_states()
        for node, state in states.items():
            self.assertIn(state.split()[0].rstrip("*"), ("idle", "mixed", "allocated", "completing"),
                          f"{node} is {state}")

    # ---------------------------------------------------------------- options

    def test_help_lists_every_option_with_prefix(self):
        for cmd in (["srun", "--help"], ["sbatch", "--help"], ["salloc", "--help"]):
            r = self.cluster.run(cmd, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            for opt in OPTIONS:
                self.assertRegex(r.stdout, rf"--{re.escape(opt)}\b", f"{cmd[0]} --help lacks --{opt}")
            self.assertGreaterEqual(r.stdout.count("[elastic]"), len(OPTIONS), cmd[0])

    def test_bad_value_fails_in_srun_before_launch(self):
        cases = [("--elastic=3:2", "'3:2'"), ("--elastic=x", "MIN:MAX"),
                 ("--elastic-nproc-per-node=gpus", "gpu, cpu or auto"),
                 ("--elastic-rdzv-port=70000", "[1, 65535]"),
                 ("--elastic-bind=socket", "binding mode"),
                 ("--elastic-rdzv-conf=novalue", "key=value")]
        for opt, what in cases:
            with self.subTest(opt=opt):
                start = time.monotonic()
                r = self.cluster.srun(["-N3", "--elastic", opt, "true"] if not opt.startswith("--elastic=")
                                      else ["-N3", opt, "true"], timeout=30)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn("elastic", r.stderr)
                self.assertIn(what, r.stderr)
                self.assertNotIn("job", r.stderr.lower().replace("elastic", ""),
                                 "srun got as far as an allocation")
                self.assertLess(time.monotonic() - start, 10)

    def test_sbatch_rejects_bad_value_before_submitting(self):
        r = self.cluster.run(["sbatch", "--elastic=0:1", "--wrap", "true"], timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--elastic: '0:1'", r.stderr)
        self.assertNotIn("Submitted", r.stdout)

    def test_options_without_elastic_are_an_error(self):
        r = self.cluster.srun(["-N1", "--elastic-max-restarts=2", "true"], timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--elastic-max-restarts needs --elastic", r.stderr)

    def test_bad_plugstack_argument_is_reported(self):
        for args, what in ((["colour=blue"], "unknown argument 'colour'"),
                           (["port=9-3"], "port: '9-3'"),
                           (["default=maybe"], "default: 'maybe'")):
            with self.subTest(args=args):
                self.set_plugstack_args(f"launcher={DUMP}", *args)
                r = self.cluster.srun(["-N1", "--elastic", "true"], timeout=30)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(what, r.stderr)
                self.assertEqual(r.stderr.count(what), 1, r.stderr)  # said once, by srun
                # A plain srun has no use for the plugin: not a word, not a failure.
                r = self.cluster.srun(["-N1", "true"], timeout=30)
                self.assertEqual((r.returncode, r.stderr), (0, ""))

    def test_optional_with_a_typo_fails_elastic_steps_and_leaves_plain_ones(self):
        # The package's own line is `optional`: Slurm then ignores the callbacks'
        # errors, and `srun --elastic` used to run the program without elasticrun.
        self.cluster.plugstack_conf.write_text(
            f"optional {Path(SPANK_SO).resolve()} launcher={DUMP} colour=blue\n")
        r, nodes = self.srun_dump(["-N2", "--elastic", "true"])
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("unknown argument 'colour'", r.stderr)
        self.assertEqual(nodes, {}, "the launcher ran")
        r = self.cluster.srun(["-N2", "sh", "-c", "echo plain"], timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("colour", r.stderr)  # every plain srun used to print it (three times)
        self.assertEqual(r.stdout.split(), ["plain", "plain"])

    # ---------------------------------------------------------------- wrapping

    def test_wraps_every_node_with_the_contract(self):
        r, nodes = self.srun_dump(["-N3", "--elastic=2:3", "--gpus-per-node=4", "python3", "train.py",
                                   "--epochs", "2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(nodes), ["n1", "n2", "n3"], r.stdout)
        ports = set()
        for host, env in nodes.items():
            with self.subTest(host=host):
                self.assertEqual(env["ARGV0"], DUMP)
                if SLURM_PREPENDS:
                    # 23.11+: spank_prepend_task_argv keeps the task's program as
                    # argv[1] (slurmstepd may have resolved it); elasticrun skips it.
                    self.assertEqual(env.get("ELASTIC_SPANK_ARGV_PREPENDED"), "1")
                    program, rest = env["ARGS"].split(" ", 1)
                    self.assertIn(os.path.basename(program), ("python3",), env["ARGS"])
                    self.assertEqual(rest, "train.py --epochs 2")
                else:
                    self.assertNotIn("ELASTIC_SPANK_ARGV_PREPENDED", env)
                    self.assertEqual(env["ARGS"], "train.py --epochs 2")
                self.assertEqual(env["ELASTIC_SPANK_ARGV0"], "python3")
                self.assertEqual(env["PET_NNODES"], "2:3")
                self.assertEqual(env["PET_NODE_RANK"], env["SLURM_NODEID"])
                # No count given: none forwarded; elasticrun counts these 4 GPUs
                # (launcher/step_gpus.h).
                self.assertNotIn("PET_NPROC_PER_NODE", env)
                self.assertEqual(env["CUDA_VISIBLE_DEVICES"], "0,1,2,3")
                self.assertEqual(env["PET_RDZV_BACKEND"], "c10d")
                host_part, port = env["PET_RDZV_ENDPOINT"].rsplit(":", 1)
                self.assertEqual(host_part, NODE_ADDR["n1"])  # names do not resolve: Slurm NodeAddr
                ports.add(port)
                is_host = "1" if env["SLURM_NODEID"] == "0" else "0"
                self.assertEqual(env["PET_RDZV_CONF"], f"expected_nodes=3,is_host={is_host}")
                self.assertRegex(env["PET_RDZV_ID"], r"^\d+\.\d+$")
        self.assertEqual(len(ports), 1)
        self.assertEqual(len({env["PET_RDZV_ID"] for env in nodes.values()}), 1)

    def test_no_value_means_the_steps_nodes_and_no_gpus_means_one(self):
        r, nodes = self.srun_dump(["-N2", "--elastic", "hostname"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(nodes), 2)
        for env in nodes.values():
            self.assertEqual(env["PET_NNODES"], "2:2")
            # No GPUs: elasticrun's rule gives 1 (launcher/step_gpus.h); no count forwarded.
            self.assertNotIn("PET_NPROC_PER_NODE", env)

    def test_without_elastic_nothing_changes(self):
        r = self.cluster.srun(["-N3", "sh", "-c", 'echo "$0 ${PET_NNODES:-none} ${ELASTIC_SPANK_ARGV0:-none}"'],
                              timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([os.path.basename(line) for line in r.stdout.splitlines()], ["sh none none"] * 3)

    def test_options_reach_every_node(self):
        r, nodes = self.srun_dump(["-N2", "--elastic=1:4", "--elastic-nproc-per-node=3",
                                   "--elastic-max-restarts=5", "--elastic-rdzv-id=myrun",
                                   "--elastic-rdzv-port=23456", "--elastic-rdzv-conf=join_timeout=30",
                                   "--elastic-bind=numa", "--elastic-log-dir=/tmp/elogs",
                                   "--elastic-no-python", "--elastic-python=/usr/bin/python3", "x.py"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(nodes), 2, r.stdout)
        for node, env in nodes.items():
            self.assertEqual(env["PET_NNODES"], "1:4")
            self.assertEqual(env["PET_NPROC_PER_NODE"], "3")
            self.assertEqual(env["PET_MAX_RESTARTS"], "5")
            self.assertEqual(env["PET_RDZV_ID"], "myrun")
            self.assertEqual(env["PET_RDZV_ENDPOINT"], f"{NODE_ADDR['n1']}:23456")
            self.assertTrue(env["PET_RDZV_CONF"].endswith(",join_timeout=30"), env["PET_RDZV_CONF"])
            self.assertEqual(env["PET_BIND"], "numa")
            # One level per node (a shared filesystem), the files on by default.
            self.assertEqual(env["PET_LOG_DIR"], f"/tmp/elogs/{node}")
            self.assertEqual(env["PET_TEE"], "3")
            self.assertEqual(env["PET_NO_PYTHON"], "1")
            self.assertEqual(env["PET_PYTHON"], "/usr/bin/python3")

    def test_explicit_endpoint_node_name_goes_through_slurm(self):
        r, nodes = self.srun_dump(["-N2", "--elastic", "--elastic-rdzv-endpoint=n2:24000", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for env in nodes.values():
            self.assertEqual(env["PET_RDZV_ENDPOINT"], f"{NODE_ADDR['n2']}:24000")
            self.assertEqual(env["PET_RDZV_CONF"], "expected_nodes=2")

    def test_export_none_is_still_wrapped(self):
        r, nodes = self.srun_dump(["-N3", "--export=NONE", "--elastic=2:3", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(nodes), 3, r.stdout + r.stderr)
        for env in nodes.values():
            self.assertEqual(env["PET_NNODES"], "2:3")
            self.assertEqual(env["ELASTIC_SPANK_ARGV0"], "true")

    def test_resv_ports_give_the_port(self):
        r, nodes = self.srun_dump(["-N2", "--resv-ports=1", "--elastic", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for env in nodes.values():
            port = int(env["PET_RDZV_ENDPOINT"].rsplit(":", 1)[1])
            self.assertTrue(12000 <= port <= 12999, port)

    def test_sbatch_elastic_is_inherited_by_plain_srun(self):
        rc, job, out = self.cluster.sbatch("#!/bin/sh\n#SBATCH -N3\n#SBATCH --gpus-per-node=2\n#SBATCH --elastic=2:3\n"
                                           "srun --gpus-per-node=2 python3 train.py\n", timeout=120)
        self.assertEqual(rc, 0, out)
        nodes = parse_dump(out)
        self.assertEqual(sorted(nodes), ["n1", "n2", "n3"], out)
        for env in nodes.values():
            self.assertEqual(env["PET_NNODES"], "2:3")
            # No count forwarded: elasticrun counts the step's 2 GPUs (launcher/step_gpus.h).
            self.assertNotIn("PET_NPROC_PER_NODE", env)
            self.assertEqual(len(env["CUDA_VISIBLE_DEVICES"].split(",")), 2, env)
            self.assertEqual(env["PET_RDZV_ID"], f"{job}.0")
            self.assertEqual(env["ELASTIC_SPANK_ARGV0"], "python3")

    # ------------------------------------------------------- first contact (issue 20)

    def test_fewer_nodes_than_min_is_refused_before_anything_starts(self):
        # The README's headline without -N gets one node: refused at once with the fix,
        # not 600 s of waiting for nodes a running step can never gain.
        for args, what in ((["--elastic=2:8"], "the step has 1 node and --elastic=2:8 needs at least 2: "
                                               "add -N2-8 --no-kill"),
                           (["-N2", "--elastic=3:4"], "the step has 2 nodes and --elastic=3:4 needs at "
                                                      "least 3: add -N3-4 --no-kill")):
            with self.subTest(args=args):
                start = time.monotonic()
                r, nodes = self.srun_dump([*args, "true"], timeout=30)
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn(what, r.stderr)
                self.assertEqual(nodes, {}, "a task started")
                self.assertLess(time.monotonic() - start, 10)
        # Meant to be joined by another step (scale-up): an explicit rendezvous id.
        r, nodes = self.srun_dump(["-N1", "--elastic=2:3", "--elastic-rdzv-id=joinme", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(nodes["n1"]["PET_NNODES"], "2:3")

    def test_min_below_the_node_count_without_no_kill_warns(self):
        warning = "--elastic=2:3 on 3 nodes without --no-kill: Slurm ends the whole step when a node is lost"
        r, nodes = self.srun_dump(["-N3", "--elastic=2:3", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(warning, r.stderr)
        self.assertEqual(len(nodes), 3)
        r, nodes = self.srun_dump(["-N3", "--no-kill", "--elastic=2:3", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(warning, r.stderr)

    def test_torchrun_under_elastic_is_refused_with_drop_torchrun(self):
        r, nodes = self.srun_dump(["-N2", "--elastic", "torchrun", "--nnodes=2", "train.py"], timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("drop torchrun: srun --elastic replaces it", r.stderr)
        self.assertEqual(nodes, {})

    def test_bare_job_level_elastic_means_the_steps_nodes(self):
        # Slurm 22.05 hands `#SBATCH --elastic` / `salloc --elastic` to every srun of
        # the job as the string "(null)".
        rc, job, out = self.cluster.sbatch("#!/bin/sh\n#SBATCH -N2\n#SBATCH --elastic\nsrun true\n",
                                           timeout=120)
        self.assertEqual(rc, 0, out)
        nodes = parse_dump(out)
        self.assertEqual(sorted(nodes), ["n1", "n2"], out)
        for env in nodes.values():
            self.assertEqual(env["PET_NNODES"], "2:2")
        r = self.cluster.run(["salloc", "-N2", "--elastic", "srun", "true"], timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        nodes = parse_dump(r.stdout)
        self.assertEqual(sorted(nodes), ["n1", "n2"], r.stdout + r.stderr)
        self.assertEqual({env["PET_NNODES"] for env in nodes.values()}, {"2:2"})

    def test_job_level_elastic_is_not_inherited_by_the_tasks(self):
        # The task (elasticrun and its workers) gets its options as PET_*; the
        # variables that make an srun elastic are gone, so a worker's own srun
        # is a plain one. `srun --elastic=off` opts a setup step out.
        rc, job, out = self.cluster.sbatch(
            "#!/bin/sh\n#SBATCH -N2\n#SBATCH --elastic=2:3\n#SBATCH --elastic-max-restarts=2\n"
            "srun --elastic=off sh -c 'echo \"setup $(hostname) x${PET_NNODES}x\"'\n"
            "srun true\n", timeout=120)
        self.assertEqual(rc, 0, out)
        self.assertEqual(sorted(line for line in out.splitlines() if line.startswith("setup ")),
                         ["setup n1 xx", "setup n2 xx"], out)
        nodes = parse_dump(out)
        self.assertEqual(sorted(nodes), ["n1", "n2"], out)
        for env in nodes.values():
            self.assertEqual(env["PET_NNODES"], "2:3")
            self.assertEqual(env["PET_MAX_RESTARTS"], "2")
            leaked = [k for k in env if "SLURM_SPANK_OPTION_elastic_" in k]
            self.assertEqual(leaked, [], env)

    def test_default_on_and_off(self):
        self.set_plugstack_args(f"launcher={DUMP}", "default=on")
        r, nodes = self.srun_dump(["-N2", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(nodes), 2)
        # off in any case, no and 0 (issue 20 item 13: OFF was refused).
        for off in ("off", "OFF", "no", "0"):
            r = self.cluster.srun(["-N2", f"--elastic={off}", "sh", "-c", 'echo "x${PET_NNODES}x"'], timeout=60)
            self.assertEqual((r.returncode, r.stdout.split()), (0, ["xx", "xx"]), f"--elastic={off}: {r.stderr}")

    @unittest.skipIf(slurm_pmix_missing(), slurm_pmix_missing())
    def test_mpi_pmix_defers_the_address_to_pmix(self):
        r, nodes = self.srun_dump(["-N3", "--mpi=pmix", "--elastic", "true"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for env in nodes.values():
            self.assertEqual(env.get("ELASTIC_SPANK_PMIX_ENDPOINT"), "1")

    @unittest.skipUnless(PMIX_PROBE, "elastic_pmix_probe not built (no libpmix-dev)")
    @unittest.skipIf(slurm_pmix_missing(), slurm_pmix_missing())
    def test_pmix_bootstrap_across_nodes(self):
        r = self.cluster.srun(["-N3", "--mpi=pmix", PMIX_PROBE], timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        ranks = sorted(int(x) for x in re.findall(r"node_rank=(\d+)", r.stdout))
        self.assertEqual(ranks, [0, 1, 2], r.stdout)
        self.assertEqual(re.findall(r"nnodes=(\d+)", r.stdout), ["3"] * 3)
        self.assertEqual(re.findall(r"^host_address=(.*)$", r.stdout, re.M), [NODE_ADDR["n1"]] * 3)

    # ---------------------------------------------------------------- refusals

    def test_several_tasks_per_node_refuse_a_worker_count_of_their_own(self):
        # One task per GPU runs (test_spank_e2e); each task is one worker, so a
        # worker count besides is refused in srun, before anything starts.
        r = self.cluster.srun(["-N2", "-n4", "--elastic", "--elastic-nproc-per-node=2", "true"], timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--elastic-nproc-per-node=2 with 4 tasks on 2 nodes: with several tasks per node "
                      "each task is one worker", r.stderr)

    def test_node_multiple_outside_min_max_is_refused(self):
        r = self.cluster.srun(["-N3", "--elastic=3:3", "--elastic-node-multiple=2", "true"], timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--elastic-node-multiple=2 with --elastic=3:3: 3:3 nodes holds no multiple of 2",
                      r.stderr)

    def test_multi_prog_is_refused(self):
        conf = self.cluster.dir / "jobs" / "multi.conf"
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text("* true\n")
        r = self.cluster.srun(["-N2", "--elastic", "--multi-prog", str(conf)], timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--multi-prog", r.stderr)

    def test_missing_launcher_fails_the_step_not_the_node(self):
        self.set_plugstack_args("launcher=/nonexistent/elasticrun")
        r = self.cluster.srun(["-N3", "--elastic", "true"], timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/nonexistent/elasticrun", r.stderr)
        self.tearDown()
        r = self.cluster.srun(["-N3", "hostname"], timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_nodes_healthy()

    def test_env_form_of_a_bad_option_fails_the_step_cleanly(self):
        # Slurm turns this variable into the option callback, in srun and on the nodes.
        r = self.cluster.srun(["-N2", "true"], timeout=30,
                              env={"SLURM_SPANK__SLURM_SPANK_OPTION_elastic_elastic": "9:1"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("'9:1'", r.stderr)
        r = self.cluster.srun(["-N3", "hostname"], timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_nodes_healthy()


if __name__ == "__main__":
    cluster_main()
