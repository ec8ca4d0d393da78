// AdamW over named parameters with LibTorch's fused kernel (one pass over each parameter per step), the
// optimizer transformers' Trainer uses by default ("adamw_torch_fused"). LibTorch's torch::optim::AdamW runs
// about ten elementwise passes per parameter instead; on a full fine-tune that was the largest gap to ms-swift.
// State is keyed by parameter name, so a checkpoint's optimizer state survives a change of parameter order.
#pragma once

#include <ATen/core/Tensor.h>

#include <c10/core/Device.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "swift/train/optimizer.h"

namespace swift::train {

struct AdamWGroup {
  std::vector<std::pair<std::string, at::Tensor>> params;  // (name, parameter)
  double weight_decay = 0.0;
};

struct AdamWHyper {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<AdamWGroup> groups, AdamWHyper hyper);

  void step() override;
  // ZeRO-Offload (--deepspeed *_offload on a GPU): the moments and an fp32 master copy of each parameter live on
  // `host`; each step copies the gradients there, updates the masters, and copies the new values back into the
  // parameters. Call before the first step or load. The saved state is the same either way.
  void offload_to(c10::Device host);
  bool offloaded() const { return offload_.has_value(); }

  std::vector<at::Tensor> parameters() const override;
  int64_t planned_state_bytes() const override;
  std::string describe() const override { return "AdamW"; }

  // "<name>.exp_avg", "<name>.exp_avg_sq", "<name>.step" for each parameter that has state.
  std::vector<std::pair<std::string, at::Tensor>> state_tensors() const override;
  void save(const std::filesystem::path& path) const override;
  using Optimizer::load;
  void load(const std::vector<std::filesystem::path>& files, const std::set<std::string>& elsewhere) override;

 private:
  struct Slot {
    std::string name;
    at::Tensor param, exp_avg, exp_avg_sq, step;  // step: 1-element fp32, as the fused kernel wants
    at::Tensor master;                            // offloaded: the fp32 copy the update runs on
    double weight_decay = 0.0;
  };
  void init_state(Slot& slot) const;

  std::vector<Slot> slots_;
  AdamWHyper hyper_;
  std::optional<c10::Device> offload_;
};


}  // namespace swift::train
