#!/bin/sh
# Worker without torch: prints the rendezvous part of its environment.
echo "envworker rank=$RANK world=$WORLD_SIZE group_rank=$GROUP_RANK group_world=$GROUP_WORLD_SIZE round=$TORCHELASTIC_RESTART_COUNT master=$MASTER_ADDR:$MASTER_PORT agent_store=$TORCHELASTIC_USE_AGENT_STORE"
