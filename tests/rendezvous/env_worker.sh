#!/bin/sh
# Worker without torch: prints the rendezvous part of its environment.
# FAIL_RANK=K: in the first FAIL_ROUNDS rounds (default 1; "all": every round) rank K
# exits 1 and the other ranks wait to be stopped (so the failure cannot come after
# they finished).
echo "envworker rank=$RANK world=$WORLD_SIZE group_rank=$GROUP_RANK group_world=$GROUP_WORLD_SIZE round=$TORCHELASTIC_RESTART_COUNT master=$MASTER_ADDR:$MASTER_PORT agent_store=$TORCHELASTIC_USE_AGENT_STORE"
[ -n "$FAIL_RANK" ] || exit 0
if [ "${FAIL_ROUNDS:-1}" = all ] || [ "$TORCHELASTIC_RESTART_COUNT" -lt "${FAIL_ROUNDS:-1}" ]; then
  [ "$RANK" = "$FAIL_RANK" ] && exit 1
  exec sleep 120
fi
