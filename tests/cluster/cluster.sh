#!/usr/bin/env bash
# A real multi-node Slurm cluster on this one machine, for tests and the demo.
#
# Design (docs and the Slurm facts it relies on: tests/cluster/README.md):
#   - munged with its own key, on the default socket /run/munge/munge.socket.2
#     (so every libmunge client, Slurm and our rendezvous alike, finds it), or on
#     $MUNGE_SOCKET when that is set.
#   - a "hub" network namespace (elastic-hub) holding a bridge 10.200.0.1/24 and
#     slurmctld (hostname ctl); client commands (srun, sbatch, sinfo) run there.
#   - N node namespaces elastic-n1..elastic-nN (10.200.0.11, .12, ...), each with
#     one slurmd under its own hostname (n1, n2, ...). Node names do not resolve.
#   - 8 fake GPUs per node (character devices + gres.conf File=), 16 CPUs per
#     node (config_overrides), MpiParams=ports=12000-12999, TmpFS per node (PMIx),
#     PlugStackConfig pointing at the plugstack.conf in the state directory;
#     DIR/etc/token.key (root's, 0600, 64 random bytes): the per-step token's key,
#     whose path replaces @TOKEN_KEY@ in the plugstack lines (token_key=@TOKEN_KEY@).
#
# Usage:
#   cluster.sh [--dir DIR] up [--nodes N] [--plugstack FILE | --plugin SO [KEY=VALUE...]]
#                             [--oci-conf FILE]   # Slurm's OCI containers (srun --container)
#   cluster.sh [--dir DIR] down
#   cluster.sh [--dir DIR] run CMD...            # in the hub namespace, SLURM_CONF set
#   cluster.sh [--dir DIR] node-run NAME CMD...  # inside node NAME (its netns + hostname)
#   cluster.sh [--dir DIR] status
#   cluster.sh [--dir DIR] kill-node NAME        # kill -9 every process in NAME's namespace
#   cluster.sh [--dir DIR] start-node NAME       # start NAME's slurmd again after kill-node
#   cluster.sh [--dir DIR] cut-node NAME         # link down between NAME and the hub
#   cluster.sh [--dir DIR] uncut-node NAME       # link up again
#   cluster.sh [--dir DIR] logs [NAME]           # daemon logs (ctl, munge, n1, ...)
#   cluster.sh [--dir DIR] env                   # shell lines: SLURM_CONF=..., ELASTIC_CLUSTER_DIR=...
#
# State lives in one directory (default /tmp/slurm-elastic-cluster, or --dir, or
# $ELASTIC_CLUSTER_DIR), so every later invocation finds the running cluster.
# `up` starts from a clean state every time (it first runs `down`, wipes the
# directory, and starts slurmctld -i). `down` is idempotent and safe after a
# failed `up`; `up` tears everything down itself when it fails or is interrupted.
set -euo pipefail

PREFIX=elastic-
HUB=${PREFIX}hub
SUBNET=10.200.0
CTL_ADDR=$SUBNET.1
DEFAULT_MUNGE_SOCKET=/run/munge/munge.socket.2
MARKER=.slurm-elastic-cluster

DIR=${ELASTIC_CLUSTER_DIR:-/tmp/slurm-elastic-cluster}
# One cluster per machine (namespace names and the munge socket are global).
# `up` and `down` hold this lock (flock) while they run; the Python helper
# (cluster.py) holds it from up to down and tells us so with
# ELASTIC_CLUSTER_LOCK_HELD=1. A second user waits (bounded) for the first.
LOCK=${ELASTIC_CLUSTER_LOCK:-/tmp/slurm-elastic-cluster.lock}
LOCK_WAIT=${ELASTIC_CLUSTER_LOCK_WAIT:-900}
# The state directory of the cluster that is up, whatever --dir it was given:
# `down` cleans that one too (munged, pids), not only its own --dir.
ACTIVE=$LOCK.active
KILLED=()

die() { echo "cluster.sh: $*" >&2; exit 1; }
log() { echo "cluster.sh: $*" >&2; }
dbg() { [ -z "${CLUSTER_DEBUG:-}" ] || echo "cluster.sh: $(date +%T.%N | cut -c1-12) $*" >&2; }

usage() { sed -n '/^# Usage:/,/^# State/p' "$0" | sed 's/^# \{0,1\}//' | head -n -1 >&2; exit 2; }

# ---------------------------------------------------------------- helpers

ns_exists() { [ -e "/run/netns/$1" ]; }

# Runs a command inside a namespace without remounting /sys (slurmd needs the
# host's /sys/fs/cgroup; `ip netns exec` would remount /sys).
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" "$@"; }

state_get() { # key -> value from $DIR/state.env (empty if missing)
  [ -f "$DIR/state.env" ] || return 0
  sed -n "s/^$1=//p" "$DIR/state.env" | tail -n 1
}

state_set() { echo "$1=$2" >>"$DIR/state.env"; }

node_ns() { echo "${PREFIX}$1"; }

check_node_name() {
  [[ $1 =~ ^n[0-9]+$ ]] || die "bad node name '$1' (expected n1, n2, ...)"
  ns_exists "$(node_ns "$1")" || die "node $1 is not up (no namespace $(node_ns "$1"))"
}

# A process counts as alive unless it is gone or a zombie (our daemons are
# reparented to init, which may reap them late).
alive() { # no fork: this runs in polling loops
  local line
  { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
  line=${line##*) }
  [ -n "$line" ] && [ "${line:0:1}" != Z ] && [ "${line:0:1}" != X ]
}

# Waits (bounded: at most $2 tenths of a second) until none of the pids is alive.
wait_gone() {
  local tenths=$1; shift
  local p left
  for ((i = 0; i < tenths; i++)); do
    left=0
    for p in "$@"; do alive "$p" && left=1 && break; done
    [ $left -eq 0 ] && return 0
    sleep 0.1
  done
  return 1
}

# The pids, each after every one of its descendants among them (deepest first).
deepest_first() {
  local -A in_set=() parent=()
  local p q d stat
  for p in "$@"; do in_set[$p]=1; done
  for p in "$@"; do
    stat=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    stat=${stat##*) }  # after the command name, which may hold spaces
    read -r _ q _ <<<"$stat"
    parent[$p]=$q
  done
  for p in "$@"; do
    d=0 q=$p
    while [ -n "${parent[$q]:-}" ] && [ -n "${in_set[${parent[$q]}]:-}" ] && [ $d -lt 64 ]; do
      q=${parent[$q]} d=$((d + 1))
    done
    echo "$d $p"
  done | sort -rn | cut -d' ' -f2
}

# Kills every process in a namespace as a power loss would: none may see another
# die and react (an agent that outlived its guardian even by microseconds got its
# parent-death SIGTERM and left the job with notice). So every process is stopped
# first, then SIGKILLed children before parents: a process is killed while its
# parent still lives, so no parent-death signal and no SIGHUP/SIGCONT of an
# orphaned stopped process group (which woke a stopped agent when the guardian
# died first) reaches a process that could still run. Repeated until the
# namespace is empty (a dying slurmstepd may fork), bounded.
kill_ns_procs() {
  local ns=$1 pids
  for ((i = 0; i < 50; i++)); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -z "$pids" ] && return 0
    KILLED+=($pids)
    # shellcheck disable=SC2086
    kill -STOP $pids 2>/dev/null || true
    # shellcheck disable=SC2046
    kill -9 $(deepest_first $pids) 2>/dev/null || true
    wait_gone 20 $pids || true
  done
  log "warning: processes left in namespace $ns: $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
  return 1
}

munge_socket() {
  local s
  s=$(state_get MUNGE_SOCKET)
  echo "${s:-${MUNGE_SOCKET:-$DEFAULT_MUNGE_SOCKET}}"
}

# ---------------------------------------------------------------- down

do_down() {
  local active mine=$DIR
  active=$(cat "$ACTIVE" 2>/dev/null || true)
  if [ -n "$active" ] && [ "$active" != "$DIR" ] && [ -f "$active/$MARKER" ]; then
    dbg "down: also the cluster of $active"
    DIR=$active
    down_one
    DIR=$mine
  fi
  down_one
  rm -f "$ACTIVE"
}

down_one() {
  local pids=() p ns f
  # 1. Every daemon we started, by recorded pid.
  if [ -d "$DIR/pids" ]; then
    for f in "$DIR"/pids/*.pid; do
      [ -f "$f" ] || continue
      p=$(cat "$f" 2>/dev/null || true)
      [[ $p =~ ^[0-9]+$ ]] && alive "$p" || continue
      # Only if the pid is still one of our daemons (not reused by another process).
      local comm=""
      { read -r comm <"/proc/$p/comm"; } 2>/dev/null || true
      case "$comm" in munged | slurmctld | slurmd) pids+=("$p") ;; esac
    done
  fi
  # 2. Every process in our namespaces (slurmd, slurmstepd, tasks, strays).
  local namespaces=()
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    [[ $ns == "$HUB" || $ns =~ ^${PREFIX}n[0-9]+$ ]] && namespaces+=("$ns")
  done
  for ns in "${namespaces[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null || true); do pids+=("$p"); done
  done
  dbg "down: TERM ${pids[*]:-}"
  if [ ${#pids[@]} -gt 0 ]; then
    # No graceful stop: slurmd takes ~2 s and slurmctld ~5 s on TERM, and the
    # next `up` wipes all state anyway. munged gets TERM (it removes its socket).
    local munged_pid
    munged_pid=$(cat "$DIR/pids/munged.pid" 2>/dev/null || true)
    for p in "${pids[@]}"; do
      if [ "$p" = "$munged_pid" ]; then kill -TERM "$p"; else kill -KILL "$p"; fi 2>/dev/null || true
    done
    wait_gone 50 "${pids[@]}" || kill -KILL "${pids[@]}" 2>/dev/null || true
  fi
  KILLED+=("${pids[@]}")
  dbg "down: emptying namespaces ${namespaces[*]:-}"
  for ns in "${namespaces[@]}"; do kill_ns_procs "$ns" || true; done
  dbg "down: waiting for ${KILLED[*]:-}"
  # Killed daemons are reparented to init, which reaps them (some inits late):
  # wait (bounded, 5 s) until none is alive; zombies of init do not count
  # (tests/check_leftovers.sh ignores them as well).
  wait_gone 50 "${KILLED[@]}" || log "warning: still alive: ${KILLED[*]}"
  dbg "down: deleting namespaces"
  for ns in "${namespaces[@]}"; do echo "netns del $ns"; done | ip -force -batch - 2>/dev/null || true
  for ns in "${namespaces[@]}"; do
    ! ns_exists "$ns" || ip netns del "$ns" || log "warning: could not delete namespace $ns"
  done
  # 3. The munge socket we created (munged removes it on TERM; not on KILL).
  if [ -f "$DIR/state.env" ]; then
    local sock
    sock=$(state_get MUNGE_SOCKET)
    # Only once (MUNGE_OURS=0 afterwards), and never while a munged (then not
    # ours: ours was killed above) answers on it.
    if [ -n "$sock" ] && [ "$(state_get MUNGE_OURS)" = 1 ]; then
      if ! munge -n -S "$sock" >/dev/null 2>&1; then
        rm -f "$sock" "$sock.lock"
        [ "$(state_get MUNGE_MADE_DIR)" = 1 ] && rmdir "$(dirname "$sock")" 2>/dev/null || true
      fi
      state_set MUNGE_OURS 0
      state_set MUNGE_MADE_DIR 0
    fi
    rm -f "$DIR/pids"/*.pid
    echo "DOWN=1" >>"$DIR/state.env"
    dbg "down: done"
  fi
  return 0
}

# ---------------------------------------------------------------- up

write_slurm_conf() {
  local n=$1 i
  cat >"$DIR/etc/slurm.conf" <<EOF
# Generated by tests/cluster/cluster.sh up
ClusterName=elastic
SlurmctldHost=ctl($CTL_ADDR)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
StateSaveLocation=$DIR/state
SlurmctldPidFile=$DIR/pids/slurmctld.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdSpoolDir=$DIR/spool/%n
SlurmdPidFile=$DIR/pids/slurmd-%n.pid
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$DIR/tmpfs/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MpiParams=ports=12000-12999
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=10
MessageTimeout=5
KillWait=5
InactiveLimit=0
# Heterogeneous jobs are scheduled by the backfill scheduler only (every
# bf_interval, 30 s by default): 1 s keeps the heterogeneous-step test short.
SchedulerParameters=bf_interval=1
# Preemption by partition (no accounting database needed, unlike QOS): jobs in
# "scavenge" give way to jobs in "main", SIGTERM first and SIGKILL after GraceTime
# (issue 24: a joined job preempted leaves with notice).
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
GresTypes=gpu
SlurmdParameters=config_overrides
PlugStackConfig=$DIR/etc/plugstack.conf
EOF
  for ((i = 1; i <= n; i++)); do
    echo "NodeName=n$i NodeHostname=n$i NodeAddr=$SUBNET.$((10 + i)) CPUs=16 RealMemory=16000 Gres=gpu:8 State=UNKNOWN" >>"$DIR/etc/slurm.conf"
  done
  echo "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=10 PreemptMode=OFF" >>"$DIR/etc/slurm.conf"
  echo "PartitionName=scavenge Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=CANCEL GraceTime=10" >>"$DIR/etc/slurm.conf"
  {
    echo "# Generated by tests/cluster/cluster.sh up: 8 fake GPUs per node"
    echo "AutoDetect=off"
    echo "Name=gpu File=$DIR/dev/nvidia[0-7]"
  } >"$DIR/etc/gres.conf"
}

start_munged() {
  local sock=$MUNGE_SOCK sockdir
  sockdir=$(dirname "$sock")
  if [ -S "$sock" ]; then
    if munge -n -S "$sock" >/dev/null 2>&1; then
      if [ "${ELASTIC_CLUSTER_REUSE_MUNGE:-}" = 1 ]; then
        log "using the munged that already serves $sock (ELASTIC_CLUSTER_REUSE_MUNGE=1); down leaves it alone"
        state_set MUNGE_SOCKET "$sock"
        state_set MUNGE_OURS 0
        return 0
      fi
      die "a munged that is not ours already serves $sock; stop it, or set ELASTIC_CLUSTER_REUSE_MUNGE=1 to use it (any munged on this host will do), or MUNGE_SOCKET=<path> to run the test cluster's munged on another socket (then programs using libmunge must be pointed at that socket)"
    fi
    log "removing stale munge socket $sock"
    rm -f "$sock" "$sock.lock"
  fi
  if [ ! -d "$sockdir" ]; then
    mkdir -p "$sockdir"
    state_set MUNGE_MADE_DIR 1
  fi
  chmod 0755 "$sockdir"
  mkdir -p "$DIR/munge/key"
  chmod 0755 "$DIR/munge"
  chmod 0700 "$DIR/munge/key"
  head -c 1024 /dev/urandom >"$DIR/munge/key/munge.key"
  chmod 0600 "$DIR/munge/key/munge.key"
  state_set MUNGE_SOCKET "$sock"
  state_set MUNGE_OURS 1
  setsid munged -F --key-file="$DIR/munge/key/munge.key" --socket="$sock" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" \
    --seed-file="$DIR/munge/munged.seed" </dev/null >>"$DIR/log/munged.out" 2>&1 9>&- &
  echo $! >"$DIR/pids/munged.pid"
  # Bounded wait for the socket to answer.
  for ((i = 0; i < 100; i++)); do
    munge -n -S "$sock" >/dev/null 2>&1 && return 0
    alive "$(cat "$DIR/pids/munged.pid")" || break
    sleep 0.05
  done
  cat "$DIR/log/munged.log" "$DIR/log/munged.out" >&2 2>/dev/null || true
  die "munged did not come up on $sock"
}

make_network() {
  local n=$1 i ns
  # Few processes (ip -batch): this machine may be busy.
  {
    echo "netns add $HUB"
    for ((i = 1; i <= n; i++)); do echo "netns add $(node_ns "n$i")"; done
  } | ip -batch -
  {
    echo "link set lo up"
    echo "link add br0 type bridge"
    echo "addr add $CTL_ADDR/24 dev br0"
    echo "link set br0 up"
    for ((i = 1; i <= n; i++)); do
      echo "link add n$i-br type veth peer name eth0 netns $(node_ns "n$i")"
      echo "link set n$i-br master br0 up"
    done
  } | ip -n "$HUB" -batch -
  for ((i = 1; i <= n; i++)); do
    printf 'link set lo up\naddr add %s/24 dev eth0\nlink set eth0 up\n' "$SUBNET.$((10 + i))" |
      ip -n "$(node_ns "n$i")" -batch -
  done
}

# Starts slurmd for node $1 in its namespace under its own hostname.
start_slurmd() {
  local name=$1 ns
  ns=$(node_ns "$name")
  mkdir -p "$DIR/spool/$name" "$DIR/tmpfs/$name"
  SLURM_CONF=$DIR/etc/slurm.conf setsid nsenter --net="/run/netns/$ns" unshare --uts \
    sh -c "hostname $name && exec slurmd -D" </dev/null >>"$DIR/log/slurmd-$name.out" 2>&1 9>&- &
  echo $! >"$DIR/log/slurmd-$name.launch-pid"
}

wait_nodes_idle() {
  local n=$1 out idle
  # Bounded poll (slurmd registers at once; normally idle within ~1 s):
  # at most 300 tries, 0.1 s apart.
  for ((i = 0; i < 300; i++)); do
    out=$(run_in_hub sinfo -h -N -o '%N %T' 2>/dev/null | sort -u || true)  # a node per partition: once
    idle=$(echo "$out" | grep -c ' idle$' || true)
    [ "$idle" -eq "$n" ] && return 0
    sleep 0.1
  done
  log "nodes did not all become idle; sinfo says:"
  echo "$out" >&2
  return 1
}

run_in_hub() {
  SLURM_CONF=$DIR/etc/slurm.conf ELASTIC_CLUSTER_DIR=$DIR nsenter --net="/run/netns/$HUB" "$@"
}

do_up() {
  local nodes=3 plugstack="" plugin="" plugin_args=() oci_conf=""
  # The agents' regime records (--rdzv-conf state_dir, default /tmp/slurm-elastic-UID)
  # are keyed by run id, JOBID.STEPID, which a fresh cluster repeats. The agents tell an
  # earlier run's record apart by its regime id and delete it (regime_record.h), so the
  # scenarios no longer need this; it only keeps the directory from growing.
  rm -rf /tmp/slurm-elastic-"$(id -u)"
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
      --nodes=*) nodes=${1#--nodes=}; shift ;;
      --dir) DIR=${2:?}; shift 2 ;;
      --plugstack) plugstack=${2:?--plugstack needs a file}; shift 2 ;;
      --oci-conf) oci_conf=${2:?--oci-conf needs a file}; shift 2 ;;
      --plugin)
        plugin=${2:?--plugin needs a .so path}; shift 2
        while [ $# -gt 0 ] && [[ $1 != --* ]]; do plugin_args+=("$1"); shift; done ;;
      *) die "up: unknown argument '$1'" ;;
    esac
  done
  [[ $nodes =~ ^[0-9]+$ ]] && [ "$nodes" -ge 1 ] && [ "$nodes" -le 200 ] || die "--nodes must be 1..200"
  [ -n "$plugstack" ] && [ -n "$plugin" ] && die "give either --plugstack or --plugin, not both"
  [ -z "$plugstack" ] || [ -f "$plugstack" ] || die "--plugstack: no file '$plugstack'"
  [ -z "$oci_conf" ] || [ -f "$oci_conf" ] || die "--oci-conf: no file '$oci_conf'"
  if [ -n "$plugin" ]; then
    [ -f "$plugin" ] || die "--plugin: no file '$plugin'"
    plugin=$(realpath "$plugin")
  fi
  [ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, mknod, daemons)"
  for c in slurmctld slurmd munged munge nsenter unshare ip sinfo mknod; do
    command -v "$c" >/dev/null || die "missing '$c' (run scripts/install-deps.sh)"
  done

  # Clean start: whatever is left of an earlier cluster goes first.
  dbg "up: down first"
  do_down
  if [ -e "$DIR" ]; then
    if [ -f "$DIR/$MARKER" ] || [ -z "$(ls -A "$DIR")" ]; then
      rm -rf "$DIR"
    else
      die "$DIR exists and is not a cluster state directory; refusing to wipe it"
    fi
  fi
  mkdir -p "$DIR"
  DIR=$(realpath "$DIR")
  chmod 0755 "$DIR"
  touch "$DIR/$MARKER"
  echo "$DIR" >"$ACTIVE"
  mkdir -p "$DIR"/{etc,state,spool,tmpfs,log,pids,dev}
  : >"$DIR/state.env"
  state_set NODES "$nodes"

  trap 'rc=$?; trap - EXIT INT TERM; if [ $rc -ne 0 ]; then log "up failed; tearing down (logs kept in $DIR/log)"; do_down; fi; exit $rc' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  MUNGE_SOCK=${MUNGE_SOCKET:-$DEFAULT_MUNGE_SOCKET}
  for ((i = 0; i < 8; i++)); do mknod -m 666 "$DIR/dev/nvidia$i" c 1 3; done
  write_slurm_conf "$nodes"
  # The per-step token's key (plugstack.conf token_key=PATH: root's, mode 0600, 64
  # random bytes); @TOKEN_KEY@ in the plugstack lines is its path.
  (umask 077 && head -c 64 /dev/urandom >"$DIR/etc/token.key")
  if [ -n "$plugstack" ]; then
    cp "$plugstack" "$DIR/etc/plugstack.conf"
  elif [ -n "$plugin" ]; then
    echo "required $plugin ${plugin_args[*]}" >"$DIR/etc/plugstack.conf"
  else
    echo "# no SPANK plugins (cluster.sh up --plugin SO ARGS... or --plugstack FILE)" >"$DIR/etc/plugstack.conf"
  fi
  sed -i "s|@TOKEN_KEY@|$DIR/etc/token.key|g" "$DIR/etc/plugstack.conf"
  # slurmstepd reads oci.conf beside slurm.conf.
  [ -z "$oci_conf" ] || cp "$oci_conf" "$DIR/etc/oci.conf"

  dbg "up: munged"
  start_munged
  dbg "up: network"
  make_network "$nodes"
  dbg "up: daemons"

  SLURM_CONF=$DIR/etc/slurm.conf setsid nsenter --net="/run/netns/$HUB" unshare --uts \
    sh -c "hostname ctl && exec slurmctld -D -i" </dev/null >>"$DIR/log/slurmctld.out" 2>&1 9>&- &
  echo $! >"$DIR/log/slurmctld.launch-pid"
  for ((i = 1; i <= nodes; i++)); do start_slurmd "n$i"; done

  dbg "up: waiting for $nodes idle nodes"
  if ! wait_nodes_idle "$nodes"; then
    tail -n 20 "$DIR"/log/*.log "$DIR"/log/*.out >&2 2>/dev/null || true
    exit 1
  fi
  state_set UP 1
  dbg "up: done"
  trap - EXIT INT TERM
  log "up: $nodes nodes idle (state in $DIR; run commands with: $0 --dir $DIR run srun -N$nodes hostname)"
}

# ---------------------------------------------------------------- other commands

require_up() {
  [ -f "$DIR/state.env" ] && [ "$(state_get UP)" = 1 ] && [ "$(state_get DOWN)" != 1 ] && ns_exists "$HUB" && return 0
  local active
  active=$(cat "$ACTIVE" 2>/dev/null || true)
  if [ -n "$active" ] && [ "$active" != "$DIR" ] && ns_exists "$HUB"; then
    die "no cluster is up in $DIR, but one is in $active: use --dir $active"
  fi
  die "no cluster is up (state dir $DIR); run '$0 up' first"
}

do_status() {
  if ! [ -f "$DIR/state.env" ] || [ "$(state_get DOWN)" = 1 ] || ! ns_exists "$HUB"; then
    echo "down (state dir $DIR)"
    local active
    active=$(cat "$ACTIVE" 2>/dev/null || true)
    [ -z "$active" ] || [ "$active" = "$DIR" ] || echo "a cluster is up with --dir $active"
    return 3
  fi
  echo "up: state in $DIR, munge socket $(munge_socket), $(state_get NODES) nodes"
  local f p
  for f in "$DIR"/pids/*.pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f"); printf '  %-28s pid %-8s %s\n' "$(basename "$f" .pid)" "$p" "$(alive "$p" && echo running || echo gone)"
  done
  run_in_hub sinfo -N -o '%N %T %G %c' || true
}

do_logs() {
  local which=${1:-}
  case "$which" in
    "") tail -n 40 "$DIR"/log/*.log 2>/dev/null ;;
    ctl | slurmctld) cat "$DIR/log/slurmctld.log" "$DIR/log/slurmctld.out" 2>/dev/null ;;
    munge | munged) cat "$DIR/log/munged.log" "$DIR/log/munged.out" 2>/dev/null ;;
    *) cat "$DIR/log/slurmd-$which.log" "$DIR/log/slurmd-$which.out" 2>/dev/null ;;
  esac
}

# ---------------------------------------------------------------- main

while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR=${2:?--dir needs a path}; shift 2 ;;
    --dir=*) DIR=${1#--dir=}; shift ;;
    -h | --help) usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
cmd=$1; shift
[ -d "$DIR" ] && DIR=$(realpath "$DIR")

take_lock() {
  [ -z "${ELASTIC_CLUSTER_LOCK_HELD:-}" ] || return 0
  exec 9>>"$LOCK"
  if ! flock -n 9; then
    log "waiting for the cluster lock $LOCK (held by: $(cat "$LOCK.owner" 2>/dev/null || echo '?'); at most ${LOCK_WAIT}s)"
    flock -w "$LOCK_WAIT" 9 || die "the test cluster is in use (lock $LOCK held by $(cat "$LOCK.owner" 2>/dev/null || echo '?'))"
  fi
  echo "pid $$: cluster.sh $cmd" >"$LOCK.owner"
}

case "$cmd" in
  up) take_lock; do_up "$@" ;;
  down) take_lock; do_down ;;
  run)
    require_up; [ $# -ge 1 ] || die "run: give a command"
    run_in_hub "$@" ;;
  node-run)
    [ $# -ge 2 ] || die "node-run: give a node name and a command"
    require_up; check_node_name "$1"
    name=$1; shift
    SLURM_CONF=$DIR/etc/slurm.conf ELASTIC_CLUSTER_DIR=$DIR nsenter --net="/run/netns/$(node_ns "$name")" \
      unshare --uts sh -c 'hostname "$0" && exec "$@"' "$name" "$@" ;;
  status) do_status ;;
  kill-node)
    [ $# -eq 1 ] || die "kill-node: give one node name"
    require_up; check_node_name "$1"
    kill_ns_procs "$(node_ns "$1")" ;;
  start-node)
    [ $# -eq 1 ] || die "start-node: give one node name"
    require_up; check_node_name "$1"
    [ -z "$(ip netns pids "$(node_ns "$1")")" ] || die "node $1 still has processes; kill-node it first"
    start_slurmd "$1" ;;
  cut-node)
    [ $# -eq 1 ] || die "cut-node: give one node name"
    require_up; check_node_name "$1"
    ip -n "$HUB" link set "$1-br" down ;;
  uncut-node)
    [ $# -eq 1 ] || die "uncut-node: give one node name"
    require_up; check_node_name "$1"
    ip -n "$HUB" link set "$1-br" up ;;
  logs) do_logs "$@" ;;
  env) echo "SLURM_CONF=$DIR/etc/slurm.conf"; echo "ELASTIC_CLUSTER_DIR=$DIR"; echo "MUNGE_SOCKET=$(munge_socket)" ;;
  *) usage ;;
esac
