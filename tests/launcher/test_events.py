"""The job's event record (--events, LOG_DIR/events.jsonl) and its picture
(`elasticrun timeline`), with real worker processes (no torch)."""
import json
import os
import subprocess
import unittest
import xml.etree.ElementTree as ET

from launcher_test_util import ELASTICRUN, LauncherTestCase, run_log_dir

SVG = "{http://www.w3.org/2000/svg}"


def read_events(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class EventRecordTest(LauncherTestCase):
    def test_a_failure_and_its_recovery_in_order_then_the_picture(self):
        events = self.path("events.jsonl")
        logs = self.path("logs")
        rc, out, err = self.run_agent(["--standalone", "--nproc-per-node=2", "--max-restarts=1",
                                       "--events", events, "--log-dir", logs]
                                      + self.worker_args("fail-once", 7))
        self.assertEqual(rc, 0, err)
        record = read_events(events)
        kinds = [(e["event"], e.get("reason"), e.get("world_size")) for e in record]
        self.assertEqual(kinds, [("job_start", None, None), ("round", "start", 2),
                                 ("worker_failure", None, None), ("round", "worker_failure", 2),
                                 ("end", "done", None)], record)
        failure = record[2]["failure"]
        self.assertEqual((failure["rank"], failure["exit_code"], failure["cause"]), (1, 7, "exit code 7"))
        self.assertEqual([e["restarts_used"] for e in record], [0, 0, 1, 1, 1])
        self.assertEqual(record[3]["restarts_left"], 0)
        self.assertGreaterEqual(record[3]["recovery_ms"], 0)
        self.assertNotIn("recovery_ms", record[1])
        self.assertTrue(all(e["v"] == 2 and e["time"].endswith("Z") for e in record), record)
        # The same record in the run's log directory.
        self.assertEqual(read_events(os.path.join(run_log_dir(logs), "events.jsonl")), record)

        svg = self.path("job.svg")
        done = subprocess.run([ELASTICRUN, "timeline", events, "-o", svg], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        root = ET.parse(svg).getroot()  # well-formed XML
        self.assertEqual(root.tag, SVG + "svg")
        markers = [c for c in root.iter(SVG + "circle") if "marker" in c.get("class", "").split()]
        self.assertEqual([m.get("class").split()[1] for m in markers], [e["event"] for e in record])
        self.assertEqual(len([r for r in root.iter(SVG + "rect") if r.get("class") == "recovery"]), 1)
        self.assert_nothing_left()

    def test_an_unwritable_event_path_is_an_error_before_anything_runs(self):
        bad = self.path("no/such/dir/events.jsonl")
        rc, out, err = self.run_agent(["--standalone", "--events", bad] + self.worker_args("env", self.dir))
        self.assertEqual(rc, 2, err)
        self.assertIn("--events: cannot open '%s'" % bad, err)
        self.assertFalse([f for f in os.listdir(self.dir) if f.startswith("env.")])  # no worker ran

    def test_timeline_names_the_bad_line(self):
        events = self.path("events.jsonl")
        with open(events, "w") as f:
            f.write('{"v":1,"event":"job_start","unix_ms":1}\n{"v":1,"event":"party","unix_ms":2}\n')
        done = subprocess.run([ELASTICRUN, "timeline", events, "-o", self.path("x.svg")],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 2)
        self.assertIn("line 2: unknown event 'party'", done.stderr)


if __name__ == "__main__":
    unittest.main()
