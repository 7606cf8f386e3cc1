#!/bin/sh
# Trivial worker for bench_launcher.py (same for elasticrun and torchrun).
#   p1: stamp the start time, wait for the release file, exit 0.
#   p3: attempt 0: stamp; rank 0 waits for every start, stamps the crash, exits 1;
#       the others wait to be stopped. Attempt 1: stamp and exit 0.
d=$BENCH_DIR
c=${TORCHELASTIC_RESTART_COUNT:-0}
date +%s%N > "$d/start.$c.$RANK"
case "$BENCH_MODE" in
  p1)
    # Slow poll: a worker must not load the 2 cores while later ones start.
    while [ ! -e "$d/release" ]; do sleep 0.2; done ;;
  p3)
    if [ "$c" = 0 ]; then
      if [ "$RANK" = 0 ]; then
        while [ "$(ls "$d" | grep -c '^start\.0\.')" -lt "$LOCAL_WORLD_SIZE" ]; do sleep 0.005; done
        date +%s%N > "$d/crash"
        exit 1
      fi
      exec sleep 1000
    fi ;;
esac
exit 0
