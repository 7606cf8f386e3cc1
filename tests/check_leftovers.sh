#!/usr/bin/env bash
# Fails if a test left anything of ours behind: an elasticrun or worker
# process, a Slurm/munge daemon started by the test cluster, a network namespace.
set -u
bad=0
procs=$(pgrep -a -f 'elasticrun|slurm-elastic-test|slurmctld|slurmd|slurmstepd' | grep -v -e pgrep -e check_leftovers || true)
# A zombie already handed to init (ppid 1) is dead and holds nothing; some
# inits (e.g. firecracker's) reap late, so such zombies do not count.
procs=$(echo "$procs" | while read -r pid rest; do
  [ -n "$pid" ] || continue
  stat=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null) || continue
  set -- $stat
  [ "$1" = Z ] && [ "$2" = 1 ] && continue
  echo "$pid $rest"
done)
if [ -n "$procs" ]; then echo "leftover processes:"; echo "$procs"; bad=1; fi
ns=$(ip netns list 2>/dev/null | grep -E '^elastic-' || true)
if [ -n "$ns" ]; then echo "leftover network namespaces:"; echo "$ns"; bad=1; fi
[ $bad -eq 0 ] && echo "nothing left behind"
exit $bad
