// Test helper: tests/topologies/expected.tsv (the GPU locality oracle made
// with hwloc's own CLI) and the directory of XML files it describes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hwloc_binding/binding.h"
#include "hwloc_binding/topology.h"

namespace elastic::testing {

// One row, by column name (header of expected.tsv): "file", "pci_busid",
// "locality_pus", "numa_dram", "pci_rank", "backend", "pci_id", ...
using ExpectedRow = std::map<std::string, std::string>;

// $ELASTIC_TOPOLOGIES_DIR, else the directory compiled in (tests/topologies of this repository).
std::string TopologiesDir();
std::string TopologyPath(const std::string& file);
// Every *.xml there, sorted.
std::vector<std::string> TopologyFiles();
// All rows; fails the calling test (ADD_FAILURE) if the file is missing.
std::vector<ExpectedRow> ReadExpected();

// The PCI rows of `file` whose PCI vendor is `vendor` ("10de", "1002"), sorted by pci_rank.
std::vector<ExpectedRow> PciRows(const std::vector<ExpectedRow>& rows, const std::string& file,
                                 const std::string& vendor);
// The vendors ("10de", ...) of `file`'s GPU PCI rows.
std::vector<std::string> PciVendors(const std::vector<ExpectedRow>& rows, const std::string& file);

// `text` (a cpu or node list, "" for none) as a bitmap; fails the calling test if it does not parse.
Bitmap ParsedList(const std::string& text);
// A request for `nproc` workers on topology file `file` (one of TopologyFiles()).
BindingRequest TopologyRequest(const std::string& file, BindMode mode, int nproc);
// PlanBinding(request); fails the calling test (naming the file) on error.
BindingPlan PlanOrFail(const BindingRequest& request);

}  // namespace elastic::testing
