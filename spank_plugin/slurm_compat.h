// Every difference between the Slurm releases spank_elastic.so supports (22.05
// through 26.05; docs/admin.md lists them and which are tested), in one place.
// Included only by the Slurm-facing files (spank_api_slurm.*, plugin.cc).
#pragma once

#include <string>
#include <type_traits>

extern "C" {
// spank.h declares the slurm_spank_* callbacks outside its own extern "C"
// block (docs/design.md, "the SPANK plugin").
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/spank.h>
}

// 23.11: spank_prepend_task_argv() (task_init_privileged and task_init only).
// Before it, the S_JOB_ARGV array of task_init is the one slurmstepd execs.
#define ELASTIC_SLURM_HAS_PREPEND_ARGV (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0))

// 25.05: an exported `int slurm_spank_init_failure_mode` says what a failing
// plugin costs: ESPANK_NODE_FAILURE (the default: drains the node) or
// ESPANK_JOB_FAILURE (fails the job only). Any non-zero return is an error
// from 25.05 on (only negative ones before): callbacks return 0 or -1.
#define ELASTIC_SLURM_HAS_INIT_FAILURE_MODE (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0))

namespace elastic::spank {

// 22.05 typedefs hostlist_t as `struct hostlist *`; 24.11 makes hostlist_t the
// struct itself (`hostlist_t *slurm_hostlist_create(...)`). The pointer to the
// struct is the same type in both.
using HostlistPtr = struct hostlist*;

// slurm_get_errno() is gone by 24.11; libslurm sets errno in every release.
inline int SlurmErrno() { return errno; }

// `v` itself, as an expression that depends on T: a call with it is checked only
// where the template is instantiated, so the branch not taken is never compiled.
template <typename T, typename V>
V DependOn(V v) {
  return v;
}

// 26.05 (perhaps earlier): slurm_get_end_time() takes a slurm_step_id_t instead of
// the job id (the job-id form survives only for C under SLURM_BACKWARD_COMPAT).
// Told apart by the function's own type. Called directly, never through its
// address: an unoptimized build (the sanitizer tree) would then need the symbol
// when the plugin is loaded, before a lazy dlopen gets libslurm's (spank_exports).
template <typename Fn = decltype(&slurm_get_end_time)>
int SlurmJobEndTime(uint32_t job_id, time_t* end_time) {
  if constexpr (std::is_invocable_v<Fn, uint32_t, time_t*>) {
    return slurm_get_end_time(DependOn<Fn>(job_id), end_time);
  } else {
    slurm_step_id_t step_id{};
    step_id.job_id = job_id;
    step_id.step_het_comp = NO_VAL;
    step_id.step_id = NO_VAL;
    return slurm_get_end_time(DependOn<Fn>(step_id), end_time);
  }
}

// 26.05 (not 22.05, 24.11): job_info_t keeps the job's submit line ("sbatch -N2
// --elastic=2:4 job.sh"), where a job-level --elastic shows. "" where it does not.
template <typename Info>
std::string SlurmJobSubmitLine(const Info& info) {
  if constexpr (requires { info.submit_line; }) {
    return info.submit_line != nullptr ? info.submit_line : "";
  } else {
    return "";
  }
}

// 26.05: slurm_load_job() takes a slurm_step_id_t (job id, NO_VAL step) instead of
// the job id (22.05, 24.11). Told apart by the function's type, as above.
template <typename Fn = decltype(&slurm_load_job)>
int SlurmLoadJob(uint32_t job_id, job_info_msg_t** resp) {
  if constexpr (std::is_invocable_v<Fn, job_info_msg_t**, uint32_t, uint16_t>) {
    return slurm_load_job(resp, DependOn<Fn>(job_id), SHOW_ALL);
  } else {
    slurm_step_id_t id{};
    id.job_id = job_id;
    id.step_het_comp = NO_VAL;
    id.step_id = NO_VAL;
    return slurm_load_job(resp, DependOn<Fn>(id), SHOW_ALL);
  }
}

// 26.05: slurm_get_job_steps(slurm_step_id_t*, resp, flags) instead of
// (update_time, job_id, step_id, resp, flags). NO_VAL as the step: all of the job's.
template <typename Fn = decltype(&slurm_get_job_steps)>
int SlurmGetJobSteps(uint32_t job_id, job_step_info_response_msg_t** resp) {
  if constexpr (std::is_invocable_v<Fn, time_t, uint32_t, uint32_t, job_step_info_response_msg_t**,
                                    uint16_t>) {
    return slurm_get_job_steps(0, DependOn<Fn>(job_id), NO_VAL, resp, SHOW_ALL);
  } else {
    slurm_step_id_t id{};
    id.job_id = job_id;
    id.step_het_comp = NO_VAL;
    id.step_id = NO_VAL;
    return slurm_get_job_steps(DependOn<Fn>(&id), resp, SHOW_ALL);
  }
}

}  // namespace elastic::spank
