#include "launcher/step_gpus.h"

#include <algorithm>

#include "common/device_list.h"

namespace elastic {
namespace {

const std::string* NonEmpty(const EnvMap& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

}  // namespace

bool CountStepGpus(const EnvMap& env, int* count, std::string* err) {
  DeviceList list;
  bool ok = true;
  if (const std::string* cvd = NonEmpty(env, "CUDA_VISIBLE_DEVICES")) {
    ok = ParseDeviceList(DeviceListKind::kCuda, "CUDA_VISIBLE_DEVICES", *cvd, &list, err);
  } else if (const std::string* step = NonEmpty(env, "SLURM_STEP_GPUS")) {
    ok = ParseDeviceList(DeviceListKind::kSlurm, "SLURM_STEP_GPUS", *step, &list, err);
  } else if (const std::string* job = NonEmpty(env, "SLURM_JOB_GPUS")) {
    ok = ParseDeviceList(DeviceListKind::kSlurm, "SLURM_JOB_GPUS", *job, &list, err);
  }
  *count = ok ? static_cast<int>(list.size()) : 0;
  return ok;
}

bool StepDefaultNproc(const EnvMap& env, int* nproc, std::string* err) {
  int gpus = 0;
  if (!CountStepGpus(env, &gpus, err)) return false;
  *nproc = std::max(gpus, 1);
  return true;
}

}  // namespace elastic
