"""Worker of the console-backpressure tests (test_torch.py, ConsoleBackpressureTest).

    chatty_worker.py OUT_DIR PRINTER_RANK LINES SECONDS

Rank PRINTER_RANK prints LINES numbered lines (~90 bytes each) to stdout, then
touches OUT_DIR/printed. Every other rank connects to the agent's store as a real
PyTorch TCPStore client and, for SECONDS, does a set+get every 0.2 s; it writes
[[monotonic start, latency], ...] to OUT_DIR/latency.RANK.json (CLOCK_MONOTONIC is
the test's clock too)."""
import datetime
import json
import os
import sys
import time

import torch.distributed as dist

out_dir, printer, lines, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
rank = int(os.environ["RANK"])
if rank == printer:
    for i in range(lines):
        sys.stdout.write("line %07d %s\n" % (i, "x" * 80))
    sys.stdout.flush()
    open(os.path.join(out_dir, "printed"), "w").close()
else:
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False,
                          timeout=datetime.timedelta(seconds=120))
    open(os.path.join(out_dir, "connected.%d" % rank), "w").close()
    samples = []
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        start = time.monotonic()
        store.set("backpressure/%d/%d" % (rank, i), "v%d" % i)
        assert store.get("backpressure/%d/%d" % (rank, i)) == b"v%d" % i
        samples.append([start, time.monotonic() - start])
        i += 1
        time.sleep(0.2)
    with open(os.path.join(out_dir, "latency.%d.json" % rank), "w") as f:
        json.dump(samples, f)
