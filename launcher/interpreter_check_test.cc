#include "launcher/interpreter_check.h"

#include <gtest/gtest.h>

namespace elastic {
namespace {

TEST(SourceImportsTorch, ImportStatementsOnly) {
  for (const char* yes : {"import torch\n", "import torch.distributed as dist\n", "import torch, os\n",
                          "from torch import nn\n", "from torch.nn import Linear\n", "import os\nimport torch",
                          "import torch\r\n"}) {
    EXPECT_TRUE(SourceImportsTorch(yes)) << yes;
  }
  for (const char* no : {"", "import os\n", "import torchvision\n", "from torchvision import models\n",
                         "# import torch\n", "x = 'import torch'\n", "import numpy as torch_like\n",
                         "try:\n    import torch\nexcept ImportError:\n    torch = None\n"}) {
    EXPECT_FALSE(SourceImportsTorch(no)) << no;
  }
}

}  // namespace
}  // namespace elastic
