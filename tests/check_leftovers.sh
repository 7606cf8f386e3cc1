#!/usr/bin/env bash
# Fails if a test left anything of ours behind: an elasticrun or worker
# process, a Slurm/munge daemon started by the test cluster, a network namespace.
set -u
bad=0
procs=$(pgrep -a -f 'elasticrun|slurm-elastic-test|slurmctld|slurmd|slurmstepd' | grep -v -e pgrep -e check_leftovers || true)
if [ -n "$procs" ]; then echo "leftover processes:"; echo "$procs"; bad=1; fi
ns=$(ip netns list 2>/dev/null | grep -E '^elastic-' || true)
if [ -n "$ns" ]; then echo "leftover network namespaces:"; echo "$ns"; bad=1; fi
[ $bad -eq 0 ] && echo "nothing left behind"
exit $bad
