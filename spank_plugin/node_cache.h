// Answers of a NodeDirectory remembered from slurmstepd's init_post_opt, for task_init.
// Under a container plugin (pyxis) task_init runs in the image's mount namespace:
// no munge socket for slurm_load_node_single, the image's /etc/hosts for
// getaddrinfo. init_post_opt runs on the host, so the plugin asks there and
// task_init replays the answers (a question not asked then goes to the real one).
#pragma once

#include <map>
#include <string>
#include <tuple>

#include "spank_plugin/spank_api.h"

namespace elastic::spank {

struct NodeAnswers {
  struct Answer {
    bool ok = false;
    std::string value;  // host / address, or why it failed
  };
  std::map<std::tuple<char, std::string>, Answer> answers;  // ('f'|'h'|'r'|'s', question)
};

class CachingNodes : public NodeDirectory {
 public:
  CachingNodes(NodeDirectory& real, NodeAnswers& answers) : real_(real), answers_(answers) {}
  bool FirstHost(const std::string& nodelist, std::string* host) override {
    std::string ignored;
    return Ask('f', nodelist, host, &ignored,
               [&](std::string* out, std::string*) { return real_.FirstHost(nodelist, out); });
  }
  bool FirstHosts(const std::string& nodelist, size_t limit, std::string* hosts) override {
    std::string ignored;
    return Ask('h', std::to_string(limit) + ":" + nodelist, hosts, &ignored,
               [&](std::string* out, std::string*) { return real_.FirstHosts(nodelist, limit, out); });
  }
  bool Resolve(const std::string& host, std::string* address, std::string* why) override {
    return Ask('r', host, address, why,
               [&](std::string* out, std::string* w) { return real_.Resolve(host, out, w); });
  }
  bool SlurmNodeAddr(const std::string& node, std::string* address, std::string* why) override {
    return Ask('s', node, address, why,
               [&](std::string* out, std::string* w) { return real_.SlurmNodeAddr(node, out, w); });
  }

 private:
  template <typename F>
  bool Ask(char kind, const std::string& question, std::string* out, std::string* why, F real) {
    auto key = std::make_tuple(kind, question);
    auto it = answers_.answers.find(key);
    if (it == answers_.answers.end()) {
      NodeAnswers::Answer a;
      std::string value, w;
      a.ok = real(&value, &w);
      a.value = a.ok ? value : w;
      it = answers_.answers.emplace(key, a).first;
    }
    (it->second.ok ? *out : *why) = it->second.value;
    return it->second.ok;
  }
  NodeDirectory& real_;
  NodeAnswers& answers_;
};

}  // namespace elastic::spank
