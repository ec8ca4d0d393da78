// Several LoRA adapters served next to their base model, chosen per batch row: every Linear an adapter wraps gets
// a switch that computes the base layer for rows without an adapter and each row's own adapter branch for the
// others, so requests for different adapters decode in the same batch.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "swift/model/decoder.h"

namespace swift::serve {

struct NamedAdapter {
  std::string name;  // the model id requests use
  std::string path;  // a PEFT adapter folder
};

class MultiLora {
 public:
  // Loads each adapter onto a fresh copy of the base model from `load_base` (freed afterwards), takes its LoRA
  // branches, and installs row switches on `model`, whose Linears must have no adapter yet. Adapter i (in order)
  // gets id i + 1; id 0 is the base model.
  MultiLora(model::CausalLM& model, const std::vector<NamedAdapter>& adapters,
            const std::function<model::CausalLM()>& load_base);
  // Row r of the next forward passes uses adapter ids[r] (0: the base model).
  void set_rows(const std::vector<int64_t>& ids);
  size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
  std::shared_ptr<std::vector<int64_t>> rows_;
};

}  // namespace swift::serve
