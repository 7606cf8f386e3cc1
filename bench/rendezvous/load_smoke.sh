#!/usr/bin/env bash
# Process test: 512 agents connect at once (8x max_unauthenticated), all join,
# and each exchanges the constant 5 messages in the first round and 3 in the
# restart round (a message per agent that grew with N, say a broadcast per
# join, would show here; agents closed at accept are the unit test
# UnauthenticatedConnectionsPastTheCapWaitUnacceptedUntilAPlaceFrees).
#   load_smoke.sh RDZV_LOAD
set -euo pipefail
out=$("$1" --agents 512 --connect-window 0 2>/dev/null)
echo "$out"
grep -q ' first_round_msgs_per_agent=5.0 ' <<<"$out"
grep -q ' restart_round_msgs_per_agent=3.0$' <<<"$out"
