"""Preloaded by test_preload.py: every fork the preloaded interpreter (the zygote)
makes takes ELASTIC_TEST_SLOW_FORK_S seconds first, so its answer to each spawn
request is that late (issue 21: the agent's loop must go on meanwhile)."""
import os
import time

_zygote = os.getpid()
_fork = os.fork


def _slow_fork():
    if os.getpid() == _zygote:  # the zygote's fork of its helper, not the helper's
        time.sleep(float(os.environ.get("ELASTIC_TEST_SLOW_FORK_S", "0")))
    return _fork()


os.fork = _slow_fork
