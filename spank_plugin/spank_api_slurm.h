// SpankApi and NodeDirectory on the real Slurm (only in spank_elastic.so).
#pragma once

#include "spank_plugin/slurm_compat.h"

#include "spank_plugin/spank_api.h"

namespace elastic::spank {

class SlurmSpankApi final : public SpankApi {
 public:
  explicit SlurmSpankApi(spank_t sp) : sp_(sp) {}
  Context GetContext() override;
  bool GetItem(Item item, uint32_t* value) override;
  bool GetArgv(std::vector<std::string>* argv) override;
  bool GetEnv(const std::string& name, std::string* value) override;
  bool SetEnv(const std::string& name, const std::string& value) override;
  bool UnsetEnv(const std::string& name) override;
  void ExitTask(int code) override;
  bool WrapTask(const std::string& launcher, bool* prepended, std::string* err) override;
  void Error(const std::string& message) override;
  void Info(const std::string& message) override;
  bool IsExecutable(const std::string& path) override;
  std::vector<std::string> ProcessCmdline() override;
  int OpenAgentBundle(const std::string& dir, std::string* why) override;
  bool KeepAcrossExec(int fd) override;
  bool ReadTokenKey(const std::string& path, std::string* key, std::string* err) override;
  int HandToTask(const std::string& content, std::string* err) override;
  int StartHostRunner(const std::string& program, std::string* err) override;
  bool StartListeningHostRunner(const std::string& program, const std::string& prefix, std::string* name,
                                std::string* err) override;
  long ParentPid() override;
  bool JobEndTime(uint32_t job_id, int64_t* end_time) override;
  SlurmRelease Release() override;
  bool LoadJob(uint32_t job_id, TargetJob* job, std::string* err) override;
  uint32_t UserId() override;
  void ExitSrun(int code) override;
  bool CancelJobsNamed(const std::string& name, std::string* err) override;

 private:
  spank_t sp_;
};

class SlurmNodeDirectory final : public NodeDirectory {
 public:
  bool FirstHost(const std::string& nodelist, std::string* host) override;
  bool FirstHosts(const std::string& nodelist, size_t limit, std::string* hosts) override;
  bool Resolve(const std::string& host, std::string* address, std::string* why) override;
  bool SlurmNodeAddr(const std::string& node, std::string* address, std::string* why) override;
};

}  // namespace elastic::spank
