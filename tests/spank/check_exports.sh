#!/usr/bin/env bash
# spank_elastic.so must export exactly the SPANK symbols (no C++ internals that
# could clash with Slurm or other plugins), and dlopen cleanly apart from the
# libslurm symbols its host process provides.
set -euo pipefail
so="$1"
expected="plugin_name
plugin_type
plugin_version
slurm_spank_exit
slurm_spank_init
slurm_spank_init_post_opt
slurm_spank_local_user_init
slurm_spank_task_init
slurm_spank_task_init_privileged
spank_plugin_version"
# Slurm >= 25.05 also reads the plugin's slurm_spank_init_failure_mode.
version_hex=$(sed -n 's/^#define SLURM_VERSION_NUMBER *//p' /usr/include/slurm/slurm_version.h)
if [ $((version_hex)) -ge $((0x190500)) ]; then
  expected=$(printf '%s\nslurm_spank_init_failure_mode\n' "$expected" | sort)
fi
actual=$(nm -D --defined-only "$so" | awk '{print $3}' | sort)
if [ "$actual" != "$expected" ]; then
  echo "check_exports: $so exports:"; echo "$actual"
  echo "check_exports: expected exactly:"; echo "$expected"
  exit 1
fi
# dlopen it (lazy: the Slurm functions come from srun/slurmstepd) and read the
# identity values as Slurm's plugin loader does.
/usr/bin/python3 - "$so" <<'PY'
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1], mode=os.RTLD_LAZY | os.RTLD_LOCAL)
name = ctypes.c_char_p(ctypes.addressof(ctypes.c_char.in_dll(lib, "plugin_name"))).value
kind = ctypes.c_char_p(ctypes.addressof(ctypes.c_char.in_dll(lib, "plugin_type"))).value
version = ctypes.c_uint.in_dll(lib, "plugin_version").value
assert name == b"elastic", name
assert kind == b"spank", kind
want = None
for line in open("/usr/include/slurm/slurm_version.h"):
    if line.startswith("#define SLURM_VERSION_NUMBER"):
        want = int(line.split()[2], 16)
assert version == want, (hex(version), want)
assert ctypes.c_uint.in_dll(lib, "spank_plugin_version").value == 1
if want >= 0x190500:
    # ESPANK_JOB_FAILURE: a failing plugin fails the job and never drains the node.
    names, value = {}, None
    for line in open("/usr/include/slurm/slurm_errno.h"):
        word = line.strip().rstrip(",").split("=")
        if not word[0].strip().startswith("ESPANK_"):
            continue
        value = int(word[1]) if len(word) > 1 else value + 1
        names[word[0].strip()] = value
    mode = ctypes.c_int.in_dll(lib, "slurm_spank_init_failure_mode").value
    assert mode == names["ESPANK_JOB_FAILURE"], (mode, names)
for f in ("slurm_spank_init", "slurm_spank_init_post_opt", "slurm_spank_local_user_init",
          "slurm_spank_task_init"):
    getattr(lib, f)
PY
# Undefined symbols may only be libc/libstdc++/fmt ones or Slurm's (spank_*, slurm_*): the
# --elastic-join check loads the target job and its steps in srun (slurm_load_job,
# slurm_get_job_steps; spank_plugin/join.cc).
bad=$(nm -D --undefined-only "$so" | awk '{print $2}' | sed 's/@.*//' |
      grep -E '^(spank_|slurm_)' | grep -vE '^(spank_(context|get_item|getenv|setenv|unsetenv|option_register|prepend_task_argv)|slurm_(error|info|verbose|debug|hostlist_create|hostlist_shift|hostlist_destroy|load_node_single|free_node_info_msg|get_end_time|strerror|get_errno|load_job|free_job_info_msg|get_job_steps|free_job_step_info_response_msg))$' || true)
if [ -n "$bad" ]; then echo "check_exports: unexpected Slurm symbols used: $bad"; exit 1; fi
echo "check_exports: OK"
