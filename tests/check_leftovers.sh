#!/usr/bin/env bash
# Fails if a test left anything of ours behind: an elasticrun or worker
# process, a Slurm/munge daemon started by the test cluster, a network namespace,
# a test cluster that was never brought down (its munge socket, state), temporary
# package roots of the shipping tests.
set -u
bad=0
self_ns=$(readlink /proc/self/ns/pid)
procs=$(pgrep -a -f 'elasticrun|slurm-elastic-test|slurmctld|slurmd|slurmstepd' | grep -v -e pgrep -e check_leftovers || true)
# A zombie already handed to init (ppid 1) is dead and holds nothing; some
# inits (e.g. firecracker's) reap late, so such zombies do not count.
procs=$(echo "$procs" | while read -r pid rest; do
  [ -n "$pid" ] || continue
  [ "$pid" = 1 ] && continue  # a PID namespace's init (scripts/in-root.sh) is never a leftover
  # Only this PID namespace: the other systems of the matrix run at the same
  # time in roots of their own (scripts/test.sh) and check their own leftovers.
  [ "$(readlink "/proc/$pid/ns/pid" 2>/dev/null)" = "$self_ns" ] || continue
  stat=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null) || continue
  set -- $stat
  [ "$1" = Z ] && [ "$2" = 1 ] && continue
  echo "$pid $rest"
done)
if [ -n "$procs" ]; then echo "leftover processes:"; echo "$procs"; bad=1; fi
if [ -e /var/lib/slurm-elastic-test-installed ]; then
  echo "leftover installation of the slurm-elastic .deb by ship.deb_on_cluster"; bad=1
fi
ns=$(ip netns list 2>/dev/null | grep -E '^elastic-' || true)
if [ -n "$ns" ]; then echo "leftover network namespaces:"; echo "$ns"; bad=1; fi
# The test cluster's munged (its key lives in a cluster state directory, which
# holds the marker file), whatever --dir the cluster was given.
for pid in $(pgrep -x munged 2>/dev/null); do
  [ "$(readlink "/proc/$pid/ns/pid" 2>/dev/null)" = "$self_ns" ] || continue
  key=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | sed -n 's/^--key-file=//p')
  [ -n "$key" ] || continue
  d=$(dirname "$(dirname "$(dirname "$key")")")
  if [ -f "$d/.slurm-elastic-cluster" ]; then echo "leftover munged of the test cluster: $pid (key $key)"; bad=1; fi
done
# Cluster state directories that were brought up and never down (their munge
# socket, spool and daemons' files would be left as they are).
lock=${ELASTIC_CLUSTER_LOCK:-/tmp/slurm-elastic-cluster.lock}
for d in "${ELASTIC_CLUSTER_DIR:-/tmp/slurm-elastic-cluster}" $(cat "$lock.active" 2>/dev/null); do
  st=$d/state.env
  [ -f "$d/.slurm-elastic-cluster" ] && [ -f "$st" ] || continue
  up=$(sed -n 's/^UP=//p' "$st" | tail -n 1)
  down=$(sed -n 's/^DOWN=//p' "$st" | tail -n 1)
  ours=$(sed -n 's/^MUNGE_OURS=//p' "$st" | tail -n 1)
  if [ "$up" = 1 ] && [ "$down" != 1 ]; then echo "leftover test cluster in $d (up, never brought down)"; bad=1; fi
  if [ "$ours" = 1 ]; then echo "leftover munge socket of the test cluster in $d (MUNGE_OURS=1)"; bad=1; fi
done
# Temporary package roots of the shipping tests (tests/ship).
tmp=$(ls -d /tmp/elastic-deb-* 2>/dev/null || true)
if [ -n "$tmp" ]; then echo "leftover package directories:"; echo "$tmp"; bad=1; fi
[ $bad -eq 0 ] && echo "nothing left behind"
exit $bad
