#!/usr/bin/python3
"""Plots launch, restart and store-init times of slurm-elastic against its anchor (torchrun,
PyTorch's TCPStore server) from
the tables in docs/benchmarks.md (whatever each section measured last), with
gnuplot, into docs/benchmarks.svg.

    bench/plot/plot_benchmarks.py [--md docs/benchmarks.md] [--out docs/benchmarks.svg]

A row is plotted when its first cell names a launch/start, a crash/restart/
kill or a store init measure and the next two cells are times ("0.209 s", "34 ms"): ours, then
torchrun's; with several runs in a cell ("0.16 / 0.08 s") the last one. Log scale: the two differ by one to two orders of magnitude.
"""
import argparse
import re
import textwrap
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# "0.209 s", "34 ms", or several runs "0.16 / 0.08 s" (the last one is plotted).
TIME = re.compile(r"^\s*\**(?:[0-9.]+\s*/\s*)*([0-9]+(?:\.[0-9]+)?)\s*(ms|s)\**\s*$")
WANTED = re.compile(r"^P\d|launch|start|restart|crash|kill|rendezvous|store init", re.I)


def seconds(cell):
    m = TIME.match(cell)
    if not m:
        return None
    value = float(m.group(1))
    return value / 1000 if m.group(2) == "ms" else value


def rows(markdown):
    # The summary repeats rows of the sections above it; floors are not launchers.
    markdown = re.sub(r"<!-- summary: begin.*?<!-- summary: end -->", "", markdown, flags=re.S)
    out = []
    for line in markdown.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not WANTED.search(cells[0]) or cells[0].lower().startswith("floor"):
            continue
        ours, theirs = seconds(cells[1]), seconds(cells[2])
        if ours is None or theirs is None or ours <= 0 or theirs <= 0:
            continue
        label = re.sub(r"[`*]", "", cells[0])
        label = re.sub(r"\s*\(torchrun ([^)]*)\)", r" (\1)", label)
        out = [row for row in out if row[0] != label]  # a later run of the same measure wins
        out.append((label, ours, theirs))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--md", type=Path, default=ROOT / "docs/benchmarks.md")
    ap.add_argument("--out", type=Path, default=ROOT / "docs/benchmarks.svg")
    a = ap.parse_args()
    data = rows(a.md.read_text())
    if not data:
        sys.exit(f"no launch/restart rows with two times in {a.md}")
    wrapped = [textwrap.wrap(label, 18) for label, _, _ in data]
    table = "\n".join('"' + "\\n".join(w) + f'" {ours} {theirs}'
                      for w, (_, ours, theirs) in zip(wrapped, data))
    width = max(700, 150 * len(data))
    bmargin = 2 + max(len(w) for w in wrapped)
    terminal = (f"png size {width},480 font \"sans,9\"" if a.out.suffix == ".png"
                else f"svg size {width},480 dynamic font \"sans,11\" background \"white\"")
    script = f"""
set terminal {terminal}
set output "{a.out}"
set title "slurm-elastic vs its anchor in the same run (torchrun; PyTorch's TCPStore server for store init): seconds, log scale, lower is better"
set termoption noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set yrange [0.01:*]
set ylabel "seconds"
set xtics nomirror font ",9"
set grid ytics
set key top right
set bmargin {bmargin}
$data << EOD
{table}
EOD
plot $data using 2:xtic(1) title "slurm-elastic" lc rgb "#1b7837", \\
     '' using 3 title "anchor: torchrun / PyTorch's store" lc rgb "#b2182b"
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print(f"{a.out}: {len(data)} measures")
    for label, ours, theirs in data:
        print(f"  {label}: {ours:g} s vs {theirs:g} s ({theirs / ours:.1f}x)")


if __name__ == "__main__":
    main()
