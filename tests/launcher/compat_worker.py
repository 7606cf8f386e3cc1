"""A worker for the torchrun comparison (test_torchrun_compat.py), stdlib only:
writes what a start decided (the contract variables, argv, unbuffered output)
to $COMPAT_OUT/rank.<RANK>.json. Runs as a script, as a module (-m) and through
the console-script-like `compat-worker` (no .py)."""
import json
import os
import sys

KEYS = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
        "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
        "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE", "OMP_NUM_THREADS",
        "TORCHELASTIC_SIGNALS_TO_HANDLE", "COMPAT_VIA"]


def main():
    out = os.environ["COMPAT_OUT"]
    record = {key: os.environ.get(key) for key in KEYS}
    record["argv"] = sys.argv[1:]
    record["unbuffered"] = getattr(sys.stdout, "write_through", False)  # python -u or PYTHONUNBUFFERED
    print("compat-line local_rank=%s" % os.environ.get("LOCAL_RANK"), flush=True)  # the console's prefix
    path = os.path.join(out, "rank.%s.json" % os.environ.get("RANK", "x"))
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.rename(path + ".tmp", path)


if __name__ == "__main__":
    main()
