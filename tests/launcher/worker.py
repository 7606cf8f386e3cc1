"""A stand-in worker for elasticrun's real-process tests (stdlib only).

Usage: worker.py MODE [ARGS]
  env DIR            dump the environment to DIR/env.<RANK>.json, and what else a start
                     decides (argv, sys.path[0], cwd, CPU affinity, parent, group, signal
                     dispositions) to DIR/proc.<RANK>.json
  fail-once CODE     rank 1 exits CODE on the first attempt; everyone else exits 0
  fail CODE          rank 0 exits CODE at once; the others wait for a signal
  wait DIR [child]   record pid/pgid in DIR, then wait: SIGTERM -> DIR/term.<RANK>, exit 143;
                     SIGUSR1 -> DIR/usr1.<RANK>; SIGUSR2 -> exit 0. `child`: also start a
                     `sleep` in the worker's process group.
  lines N            print N numbered lines in odd-sized writes; the last one without newline
  progress FILE CRASH_AT EVERY
                     resume from the iteration in FILE, write it (rank 0, atomically) every
                     EVERY steps, fail at step CRASH_AT every round (0: EVERY+1 steps after
                     the resumed one: progress each round)
  hang-fs MOUNT DIR  (hung_fs.py) on the node with HUNG_FS_NODE=1: local rank 0 records its pid
                     in DIR/stuck.<RANK> and stats a file on MOUNT (never answered: it hangs
                     there, in D state once signalled); local rank 1 waits for DIR/held, then
                     exits 1. Elsewhere: at restart 0 wait for a signal, later exit 0.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

RANK = int(os.environ.get("RANK", "-1"))


def touch(path, text=""):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def mode_env(out_dir):
    touch(os.path.join(out_dir, "env.%d.json" % RANK), json.dumps(dict(os.environ)))
    dispositions = {}
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGPIPE):
        h = signal.getsignal(sig)
        dispositions[sig.name] = h if isinstance(h, int) else getattr(h, "__name__", "handler")
    facts = {"argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(), "name": __name__,
             "affinity": sorted(os.sched_getaffinity(0)), "ppid": os.getppid(), "pid": os.getpid(),
             "pgid": os.getpgid(0), "signals": dispositions,
             "minidom_loaded": "xml.dom.minidom" in sys.modules,  # test_preload.py preloads it
             "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))}
    touch(os.path.join(out_dir, "proc.%d.json" % RANK), json.dumps(facts))


def mode_wait(out_dir, child):
    def on_term(signum, frame):
        touch(os.path.join(out_dir, "term.%d" % RANK))
        os._exit(143)

    def on_usr1(signum, frame):
        touch(os.path.join(out_dir, "usr1.%d" % RANK))

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGUSR2, lambda s, f: os._exit(0))
    pids = [os.getpid()]
    if child:
        pids.append(subprocess.Popen(["sleep", "1000"]).pid)
    touch(os.path.join(out_dir, "pids.%d" % RANK),
          json.dumps({"pids": pids, "pgid": os.getpgid(0)}))
    touch(os.path.join(out_dir, "ready.%d" % RANK))
    while True:
        signal.pause()


def mode_hang_fs(mount, out_dir):
    if os.environ.get("HUNG_FS_NODE") != "1":
        if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
            while True:
                signal.pause()
        print("rank %d done at restart %s" % (RANK, os.environ["TORCHELASTIC_RESTART_COUNT"]), flush=True)
        return
    if os.environ["LOCAL_RANK"] == "0":
        touch(os.path.join(out_dir, "stuck.%d" % RANK), str(os.getpid()))
        os.stat(os.path.join(mount, "never-answered"))
        sys.exit("the hung filesystem answered")
    while not os.path.exists(os.path.join(out_dir, "held")):
        time.sleep(0.02)
    print("rank %d fails while local rank 0 hangs on %s" % (RANK, mount), flush=True)
    sys.exit(1)


def mode_progress(path, crash_at, checkpoint_every):
    """Rank 0 resumes from the iteration in PATH, writes PATH every `checkpoint_every`
    steps (atomically) and fails at step `crash_at` (0: checkpoint_every+1 steps after
    the resumed one); the other ranks wait for the stop."""
    if RANK != 0:
        while True:
            signal.pause()
    try:
        with open(path) as f:
            step = int(f.read())
    except (OSError, ValueError):
        step = 0
    restart = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    crash_at = crash_at if crash_at > 0 else step + checkpoint_every + 1
    print("rank %d resumes at step %d (restart %d)" % (RANK, step, restart), flush=True)
    while True:
        step += 1
        if step == crash_at:
            print("rank %d fails at step %d" % (RANK, step), flush=True)
            sys.exit(1)
        if step % checkpoint_every == 0:
            touch(path, "%d\n" % step)


def mode_lines(n):
    lines = ["rank %d line %d with some padding to make it longer\n" % (RANK, i) for i in range(n)]
    data = "".join(lines)[:-1]  # the last line has no newline
    out = sys.stdout.buffer
    rnd = random.Random(RANK)
    pos = 0
    while pos < len(data):
        size = rnd.randint(1, 9000)
        out.write(data[pos:pos + size].encode())
        out.flush()
        pos += size


def main():
    mode = sys.argv[1]
    if mode == "env":
        mode_env(sys.argv[2])
    elif mode == "fail-once":
        if RANK == 1 and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
            print("rank 1 fails on purpose", flush=True)
            sys.exit(int(sys.argv[2]))
        print("rank %d ok at restart %s" % (RANK, os.environ["TORCHELASTIC_RESTART_COUNT"]))
    elif mode == "fail":
        if RANK == 0:
            sys.exit(int(sys.argv[2]))
        while True:
            signal.pause()
    elif mode == "fail-after":  # rank 0 fails SECONDS after its start with CODE
        if RANK == 0:
            time.sleep(float(sys.argv[2]))
            sys.exit(int(sys.argv[3]))
        while True:
            signal.pause()
    elif mode == "wait":
        mode_wait(sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "child")
    elif mode == "progress":
        mode_progress(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "hang-fs":
        mode_hang_fs(sys.argv[2], sys.argv[3])
    elif mode == "lines":
        mode_lines(int(sys.argv[2]))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
