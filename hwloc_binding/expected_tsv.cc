#include "hwloc_binding/expected_tsv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/parse.h"

namespace elastic::testing {

std::string TopologiesDir() {
  if (const char* env = std::getenv("ELASTIC_TOPOLOGIES_DIR")) return env;
  return ELASTIC_TOPOLOGIES_DIR;
}

std::string TopologyPath(const std::string& file) { return TopologiesDir() + "/" + file; }

std::vector<std::string> TopologyFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(TopologiesDir(), ec)) {
    if (entry.path().extension() == ".xml") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<ExpectedRow> ReadExpected() {
  std::string path = TopologiesDir() + "/expected.tsv";
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path << " (set ELASTIC_TOPOLOGIES_DIR to tests/topologies)";
    return {};
  }
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = Split(line, '\t');
  std::vector<ExpectedRow> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> fields = Split(line, '\t');
    ExpectedRow row;
    for (size_t i = 0; i < header.size() && i < fields.size(); ++i) row[header[i]] = fields[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<ExpectedRow> PciRows(const std::vector<ExpectedRow>& rows, const std::string& file,
                                 const std::string& vendor) {
  std::vector<ExpectedRow> pci;
  for (const ExpectedRow& row : rows) {
    if (row.at("file") == file && row.at("backend") == "PCI" && row.at("pci_id").rfind(vendor + ":", 0) == 0) {
      pci.push_back(row);
    }
  }
  std::sort(pci.begin(), pci.end(), [](const ExpectedRow& a, const ExpectedRow& b) {
    return std::stoi(a.at("pci_rank")) < std::stoi(b.at("pci_rank"));
  });
  return pci;
}

std::vector<std::string> PciVendors(const std::vector<ExpectedRow>& rows, const std::string& file) {
  std::set<std::string> vendors;
  for (const ExpectedRow& row : rows) {
    if (row.at("file") == file && row.at("backend") == "PCI") vendors.insert(row.at("pci_id").substr(0, 4));
  }
  return {vendors.begin(), vendors.end()};
}

Bitmap ParsedList(const std::string& text) {
  Bitmap set;
  std::string err;
  if (!text.empty()) {
    EXPECT_TRUE(Bitmap::ParseList("list", text, &set, &err)) << err;
  }
  return set;
}

BindingRequest TopologyRequest(const std::string& file, BindMode mode, int nproc) {
  BindingRequest request;
  request.topology_file = TopologyPath(file);
  request.mode = mode;
  request.nproc = nproc;
  return request;
}

BindingPlan PlanOrFail(const BindingRequest& request) {
  BindingPlan plan;
  std::string err;
  EXPECT_TRUE(PlanBinding(request, &plan, &err)) << request.topology_file << ": " << err;
  return plan;
}

}  // namespace elastic::testing
