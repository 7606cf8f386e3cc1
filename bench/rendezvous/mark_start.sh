#!/bin/sh
# Benchmark worker: records when it started (ns since the epoch) and ends.
date +%s%N > "$BENCH_DIR/start.$$"
