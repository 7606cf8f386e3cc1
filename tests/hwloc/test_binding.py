"""elasticrun's binding end to end: --print-binding=json against the topology
oracle (tests/topologies/expected.tsv), bad input, and real workers that
read their own CPU and memory binding from the kernel."""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ELASTICRUN = os.environ.get("ELASTICRUN", os.path.join(HERE, "../../build/launcher/elasticrun"))
TOPOLOGIES = os.environ.get("ELASTIC_TOPOLOGIES_DIR", os.path.join(HERE, "../topologies"))
PYTHON = "/usr/bin/python3"
REPORT = os.path.join(HERE, "report_binding.py")
NO_LOCALITY = "topo.j3c053.xml"  # GPUs attached to the whole machine: fallback
TIMEOUT_S = 120
MPOL_PREFERRED, MPOL_BIND, MPOL_PREFERRED_MANY = 1, 2, 5


def parse_list(text):
    """'0-3,8' or '0,1,2,3,8' -> {0,1,2,3,8}; '' -> set()."""
    result = set()
    for part in filter(None, (text or "").split(",")):
        first, _, last = part.partition("-")
        result.update(range(int(first), int(last or first) + 1))
    return result


def expected_rows():
    with open(os.path.join(TOPOLOGIES, "expected.tsv")) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def pci_rows(rows, xml, vendor):
    """GPU PCI devices of `xml` with PCI vendor `vendor`, in pci_rank (bus id) order."""
    pci = [r for r in rows if r["file"] == xml and r["backend"] == "PCI" and r["pci_id"].startswith(vendor + ":")]
    return sorted(pci, key=lambda r: int(r["pci_rank"]))


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("HWLOC_XMLFILE", "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS",
                        "OMP_NUM_THREADS")}
    env.update(extra or {})
    return env


def elasticrun(args, env=None):
    proc = subprocess.run([ELASTICRUN] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=clean_env(env), timeout=TIMEOUT_S, start_new_session=True)
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


class PrintBindingTest(unittest.TestCase):
    def print_json(self, *args, env=None):
        rc, out, err = elasticrun(["--print-binding=json"] + list(args), env)
        self.assertEqual(rc, 0, err)
        return json.loads(out)

    def test_every_gpu_gets_its_locality_from_expected_tsv(self):
        rows = expected_rows()
        files = sorted({r["file"] for r in rows if r["backend"] == "PCI"
                        and r["pci_id"].split(":")[0] in ("10de", "1002")})
        self.assertGreaterEqual(len(files), 10)
        for xml in files:
            if xml == NO_LOCALITY:
                continue
            vendors = {r["pci_id"][:4] for r in rows if r["file"] == xml and r["backend"] == "PCI"}
            pci = pci_rows(rows, xml, "10de" if "10de" in vendors else "1002")
            with self.subTest(xml=xml):
                plan = self.print_json("--topology", os.path.join(TOPOLOGIES, xml),
                                       "--nproc-per-node=gpu", "--bind=gpu")
                self.assertEqual(len(plan), len(pci))
                for i, (worker, row) in enumerate(zip(plan, pci)):
                    self.assertEqual(set(worker), {"local_rank", "gpu", "cpus", "mems"})
                    self.assertEqual(worker["local_rank"], i)
                    self.assertEqual(worker["gpu"], row["pci_busid"])
                    self.assertEqual(parse_list(worker["cpus"]), parse_list(row["locality_pus"]))
                    self.assertEqual(parse_list(worker["mems"]), parse_list(row["numa_dram"]))

    def test_amd_gpus_of_a_mixed_node_with_gpu_vendor(self):
        pci = pci_rows(expected_rows(), "chimera.xml", "1002")
        plan = self.print_json("--topology", os.path.join(TOPOLOGIES, "chimera.xml"),
                               "--nproc-per-node=gpu", "--gpu-vendor=amd")
        self.assertEqual([w["gpu"] for w in plan], [r["pci_busid"] for r in pci])
        self.assertEqual(parse_list(plan[0]["cpus"]), parse_list(pci[0]["locality_pus"]))

    def test_cuda_visible_devices_subset(self):
        pci = pci_rows(expected_rows(), "g4dnmetal.xml", "10de")
        plan = self.print_json("--topology", os.path.join(TOPOLOGIES, "g4dnmetal.xml"), "--nproc-per-node=gpu",
                               env={"CUDA_VISIBLE_DEVICES": "6,1"})
        self.assertEqual([w["gpu"] for w in plan], [pci[6]["pci_busid"], pci[1]["pci_busid"]])
        self.assertEqual(parse_list(plan[0]["cpus"]), parse_list(pci[6]["locality_pus"]))
        plan = self.print_json("--topology", os.path.join(TOPOLOGIES, "g4dnmetal.xml"), "--nproc-per-node=gpu",
                               env={"SLURM_STEP_GPUS": "2,5"})
        self.assertEqual([w["gpu"] for w in plan], [pci[2]["pci_busid"], pci[5]["pci_busid"]])

    def test_topology_from_hwloc_xmlfile(self):
        pci = pci_rows(expected_rows(), "ipa20.xml", "10de")
        plan = self.print_json("--nproc-per-node=4", env={"HWLOC_XMLFILE": os.path.join(TOPOLOGIES, "ipa20.xml")})
        self.assertEqual([w["gpu"] for w in plan], [r["pci_busid"] for r in pci])

    def test_gpu_exclusive_is_disjoint_inside_the_locality(self):
        pci = pci_rows(expected_rows(), "g4dnmetal.xml", "10de")
        plan = self.print_json("--topology", os.path.join(TOPOLOGIES, "g4dnmetal.xml"), "--nproc-per-node=8",
                               "--bind=gpu-exclusive")
        seen = set()
        for worker, row in zip(plan, pci):
            cpus = parse_list(worker["cpus"])
            self.assertTrue(cpus and cpus <= parse_list(row["locality_pus"]))
            self.assertFalse(cpus & seen)
            seen |= cpus

    def test_fallback_without_locality_is_said_once(self):
        rc, out, err = elasticrun(["--print-binding", "--topology", os.path.join(TOPOLOGIES, NO_LOCALITY),
                                   "--nproc-per-node=gpu"])
        self.assertEqual(rc, 0, err)
        self.assertEqual((out + err).count("whole machine"), 1, out + err)
        plan = self.print_json("--topology", os.path.join(TOPOLOGIES, NO_LOCALITY), "--nproc-per-node=gpu")
        self.assertEqual(len(plan), 2)
        self.assertNotEqual(plan[0]["mems"], plan[1]["mems"])
        self.assertFalse(parse_list(plan[0]["cpus"]) & parse_list(plan[1]["cpus"]))

    def test_no_gpu_plan_has_null_gpu(self):
        plan = self.print_json("--nproc-per-node=2", "--bind=numa")
        self.assertEqual([w["gpu"] for w in plan], [None, None])


class BadInputTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="elastic-hwloc-test-")
        self.marker = os.path.join(self.dir, "started")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def refused(self, args, mention, env=None):
        # The program would create the marker: it must never run.
        rc, out, err = elasticrun(args + ["--no-python", "/usr/bin/touch", self.marker], env)
        self.assertNotEqual(rc, 0, out + err)
        self.assertIn(mention, err)
        self.assertFalse(os.path.exists(self.marker), "a worker was started")

    def test_missing_topology_file(self):
        self.refused(["--topology", os.path.join(self.dir, "missing.xml"), "--nproc-per-node=1"], "missing.xml")

    def test_malformed_topology_file(self):
        bad = os.path.join(self.dir, "bad.xml")
        with open(bad, "w") as f:
            f.write("<?xml version=\"1.0\"?>\n<topology><object type=\"Machine\"")
        rc, out, err = elasticrun(["--print-binding=json", "--topology", bad])
        self.assertNotEqual(rc, 0, out)
        self.assertIn("bad.xml", err)
        self.refused(["--topology", bad, "--nproc-per-node=1"], "bad.xml")

    def test_more_workers_than_gpus(self):
        xml = os.path.join(TOPOLOGIES, "ipa20.xml")
        rc, out, err = elasticrun(["--print-binding=json", "--topology", xml, "--nproc-per-node=5", "--bind=gpu"])
        self.assertNotEqual(rc, 0, out)
        self.assertIn("4 visible GPU", err)
        self.refused(["--topology", xml, "--nproc-per-node=5", "--bind=gpu"], "4 visible GPU")

    def test_unknown_mode(self):
        self.refused(["--bind=socket", "--nproc-per-node=1"], "socket")
        self.refused(["--membind=interleave", "--nproc-per-node=1"], "interleave")


class RealBindingTest(unittest.TestCase):
    """Workers started by elasticrun on this machine read their own binding."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="elastic-hwloc-test-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_workers(self, nproc, *options):
        plan_rc, plan_out, plan_err = elasticrun(["--print-binding=json", "--nproc-per-node=%d" % nproc]
                                                 + list(options))
        self.assertEqual(plan_rc, 0, plan_err)
        plan = json.loads(plan_out)
        rc, out, err = elasticrun(["--standalone", "--nproc-per-node=%d" % nproc] + list(options)
                                  + [PYTHON, REPORT, self.dir])
        self.assertEqual(rc, 0, out + err)
        reports = []
        for rank in range(nproc):
            with open(os.path.join(self.dir, "binding.%d.json" % rank)) as f:
                reports.append(json.load(f))
        return plan, reports

    def check(self, plan, reports, policy):
        for worker, report in zip(plan, reports):
            self.assertEqual(parse_list(report["cpus_allowed"]), parse_list(worker["cpus"]))
            self.assertEqual(set(report["affinity"]), parse_list(worker["cpus"]))
            self.assertTrue(parse_list(worker["mems"]) <= parse_list(report["mems_allowed"]))
            if report["mempolicy"] is not None and policy is not None:
                mode, nodes = report["mempolicy"]
                self.assertIn(mode, policy)
                self.assertEqual(set(nodes), parse_list(worker["mems"]))
            self.assertIsNone(report["hwloc_xmlfile"])

    def test_numa_binding_is_what_workers_get(self):
        plan, reports = self.run_workers(2, "--bind=numa")
        self.check(plan, reports, (MPOL_PREFERRED, MPOL_PREFERRED_MANY))
        for worker, report in zip(plan, reports):
            cores = int(report["omp_num_threads"])
            self.assertGreaterEqual(cores, 1)
            self.assertLessEqual(cores, len(parse_list(worker["cpus"])))
        # Workers bound to the same CPUs share their cores (--nproc-per-node=cpu put
        # 96 workers x 6 threads on 96 cores): no more threads than cores, unless
        # there are more workers than cores (then 1 each).
        by_cpus = {}
        for worker, report in zip(plan, reports):
            by_cpus.setdefault(worker["cpus"], []).append(int(report["omp_num_threads"]))
        for cpus, threads in by_cpus.items():
            self.assertLessEqual(sum(threads), max(len(parse_list(cpus)), len(threads)), (cpus, threads))

    def test_gpu_exclusive_workers_get_disjoint_cpus(self):
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("needs 2 CPUs")
        plan, reports = self.run_workers(2, "--bind=gpu-exclusive", "--membind=strict")
        self.check(plan, reports, (MPOL_BIND,))
        first, second = (parse_list(r["cpus_allowed"]) for r in reports)
        self.assertTrue(first and second)
        self.assertFalse(first & second)

    def test_xml_plan_is_not_applied_to_this_machine(self):
        # ipa20.xml names CPUs this machine lacks: workers run unbound, with the
        # same CPUs as the agent, and HWLOC_XMLFILE is not passed on.
        own = set(os.sched_getaffinity(0))
        rc, out, err = elasticrun(["--standalone", "--nproc-per-node=1", "--bind=gpu",
                                   PYTHON, REPORT, self.dir],
                                  {"HWLOC_XMLFILE": os.path.join(TOPOLOGIES, "ipa20.xml")})
        self.assertEqual(rc, 0, out + err)
        with open(os.path.join(self.dir, "binding.0.json")) as f:
            report = json.load(f)
        self.assertEqual(set(report["affinity"]), own)
        self.assertIsNone(report["hwloc_xmlfile"])


if __name__ == "__main__":
    unittest.main()
