// Reading an optimizer's state back from its safetensors file(s), with the checks every optimizer wants: the file
// is that optimizer's (its "format" metadata), each tensor is where and what it should be, finite, and not
// negative where it cannot be; every entry of the files is used (or belongs to a parameter another rank holds).
#pragma once

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "swift/io/safetensors.h"

namespace swift::train {

class OptimizerStateFiles {
 public:
  // DataError when a file is not one of `format` (e.g. "swift-adamw").
  OptimizerStateFiles(const std::vector<std::filesystem::path>& paths, const std::string& format);

  // The file holding `name`, or nullptr when none does.
  const io::SafetensorsFile* find(const std::string& name) const;
  // The saved tensor `name` (DataError when absent): checked finite (and >= 0 when `non_negative`), and of
  // `shape` when given. Marks it used.
  at::Tensor take(const std::string& name, const c10::optional<at::IntArrayRef>& shape, bool non_negative);
  // DataError for an entry not taken whose parameter (the name up to its first state suffix ".<what>") is not in
  // `elsewhere`.
  void check_all_used(const std::set<std::string>& elsewhere) const;

 private:
  std::vector<std::filesystem::path> paths_;
  std::vector<std::shared_ptr<io::SafetensorsFile>> files_;
  std::set<std::string> used_;
};

}  // namespace swift::train
