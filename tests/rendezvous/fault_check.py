"""The randomized fault run's checker and report (fault_run.py). A group is (round,
its store's address); it trains from the moment every one of its GROUP_WORLD_SIZE
workers runs until the first of them is gone. The run fails on
  - two groups of the run training at once (their spans overlap by more than SLACK_S);
  - a group of cut-off nodes only: a minority trained alone (every member's link was
    cut when the group began);
  - a worker whose all_reduce gave a wrong sum (torch workers);
  - a requeue (`scontrol requeue`, --requeue with a batch job's environment and a fake
    scontrol on PATH) while a group trains;
  - an agent exit that no fault caused (found by the driver, fault_run.py)."""
import os
import socket

# Two groups must overlap by more than this to count (clock reads and polling).
SLACK_S = 0.5
FAULT_KINDS = ("kill_worker", "kill_agent", "stop_agent", "cut")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def groups(run):
    """(round, store) -> (start, end, nodes, reduced) of the span where every member ran
    (reduced: every member said its first all_reduce was done); groups never complete
    are left out."""
    by_key = {}
    for w in list(run.workers.values()) + run.past:
        by_key.setdefault((w["round"], w["store"]), []).append(w)
    spans = {}
    for key, members in by_key.items():
        if len({m["group_rank"] for m in members}) < members[0]["world"]:
            continue  # some member never started: the group never trained
        start = max(m["start"] for m in members)
        end = min(m["end"] for m in members)
        if end > start:
            spans[key] = (start, end, sorted(m["node"] for m in members),
                          all("reduced" in m for m in members))
    return spans


def cut_at(node, t):
    """Whether `node`'s link was cut at epoch time t (and had been for SLACK_S)."""
    return any(start + SLACK_S <= t and (end is None or t < end) for start, end in node.cuts)


def check(run):
    spans = sorted(groups(run).items(), key=lambda kv: kv[1][0])
    run.trained_groups = len(spans)
    run.reduced_groups = sum(1 for _, s in spans if s[3])
    for i, (ka, a) in enumerate(spans):
        for kb, b in spans[i + 1:]:
            overlap = min(a[1], b[1]) - max(a[0], b[0])
            if overlap > SLACK_S:
                run.violations.append(
                    "two groups trained at once for %.1f s: round %d (store %s, nodes %s) and round %d "
                    "(store %s, nodes %s)" % (overlap, ka[0], ka[1], a[2], kb[0], kb[1], b[2]))
    run.overlaps = sum(1 for v in run.violations if v.startswith("two groups"))
    for key, s in spans:
        if all(cut_at(run.nodes[k], s[0]) for k in s[2]):
            run.violations.append("a minority trained alone: round %d (store %s), nodes %s, all cut off "
                                  "at %.1f s" % (key[0], key[1], s[2], s[0] - run.t0_epoch))
    run.minority_groups = sum(1 for v in run.violations if v.startswith("a minority"))
    for w in list(run.workers.values()) + run.past:
        if "wrong" in w:
            run.violations.append("a wrong all_reduce on node %d in round %d: %s"
                                  % (w["node"], w["round"], w["wrong"]))
    requeues = []
    if os.path.exists(run.scontrol_log):
        with open(run.scontrol_log) as f:
            requeues = [float(line.split()[0]) for line in f if "requeue" in line]
    for t in requeues:
        during = [k for k, s in spans if s[0] <= t <= s[1]]
        run.violations.append("scontrol requeue at %.1f s%s" % (
            t - run.t0_epoch, " while round %d trained" % during[0][0] if during else ""))
    run.requeues = len(requeues)
    run.unexplained_exits = sum(1 for v in run.violations if "no fault caused it" in v)


def fault_counts(run):
    """Faults by kind, then how many hit the host and how many came while another lasted."""
    kinds = {k: sum(1 for f in run.faults if f["kind"] == k) for k in FAULT_KINDS}
    kinds = {k: n for k, n in kinds.items() if n}
    return (kinds, sum(1 for f in run.faults if f["host"]),
            sum(1 for f in run.faults if f["concurrent"]))


def report(run):
    kinds, host, concurrent = fault_counts(run)
    workers = "torch workers%s" % (" (preloaded)" if run.preload else "") if run.torch else "shell workers"
    lines = ["fault run: seed %d, %d agents (MIN %d, %s, %s), %.0f s: %d faults %s, %d on the host, "
             "%d while another lasted; %d groups trained%s, %d overlaps, %d minority groups, "
             "%d requeues, %d unexplained exits, %d violations"
             % (run.seed, run.count, run.min_nodes, "network namespaces" if run.net else "loopback",
                workers, run.duration_s, len(run.faults), kinds, host, concurrent, run.trained_groups,
                " (%d all-reduced)" % run.reduced_groups if run.torch else "", run.overlaps,
                run.minority_groups, run.requeues, run.unexplained_exits, len(run.violations))]
    if run.violations:
        lines += run.violations
        lines.append("sequence:")
        lines += ["%7.2f %s" % e for e in run.events]
        lines.append("agent logs in %s" % run.dir)
    return "\n".join(lines)
