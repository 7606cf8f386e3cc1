#!/bin/sh
# A stand-in launcher for plugin tests: prints what the plugin handed it, one
# "<host> KEY=VALUE" line each, then runs nothing. $0 is this script (argv[0]
# replaced by the plugin), "$@" the user's arguments after their argv[0].
h=$(hostname)
echo "$h ARGV0=$0"
echo "$h ARGS=$*"
echo "$h SLURM_NODEID=$SLURM_NODEID"
env | grep -E '^(PET_|ELASTIC_SPANK_|CUDA_VISIBLE_DEVICES=|SLURM_STEP_GPUS=|PMIX_RANK=|SLURM_SPANK_|_SLURM_SPANK_OPTION_)' | sort | sed "s/^/$h /"
