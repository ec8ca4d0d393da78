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

namespace swift::train {

struct AdamWGroup {
  std::vector<std::pair<std::string, at::Tensor>> params;  // (name, parameter)
  double weight_decay = 0.0;
};

struct AdamWHyper {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

class AdamW {
 public:
  AdamW(std::vector<AdamWGroup> groups, AdamWHyper hyper);

  void set_lr(double lr) { lr_ = lr; }
  double lr() const { return lr_; }

  // One update from each parameter's .grad (parameters without a gradient are skipped, as PyTorch does).
  void step();
  // ZeRO-Offload (--deepspeed *_offload on a GPU): the moments and an fp32 master copy of each parameter live on
  // `host`; each step copies the gradients there, updates the masters, and copies the new values back into the
  // parameters. Call before the first step or load. The saved state is the same either way.
  void offload_to(c10::Device host);
  bool offloaded() const { return offload_.has_value(); }

  // Drops the gradients (set_to_none, as the Trainer), so the next backward allocates fresh ones.
  void zero_grad();

  // Every parameter of every group, in group order.
  std::vector<at::Tensor> parameters() const;

  // "<name>.exp_avg", "<name>.exp_avg_sq", "<name>.step" for each parameter that has state.
  std::vector<std::pair<std::string, at::Tensor>> state_tensors() const;
  // Writes / reads the state as a safetensors file (atomic write). load() throws DataError naming the file
  // when a tensor is missing, unknown or of the wrong shape.
  void save(const std::filesystem::path& path) const;
  void load(const std::filesystem::path& path);
  // ZeRO: the state of a sharded optimizer comes in several files (one per rank that wrote them), each with
  // some parameters. Loads this optimizer's parameters from whichever file has them; entries of the
  // parameters in `elsewhere` (trainable, owned by another rank now) are skipped; anything else is a DataError.
  void load(const std::vector<std::filesystem::path>& files, const std::set<std::string>& elsewhere);

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
  double lr_ = 0.0;
  std::optional<c10::Device> offload_;
};


}  // namespace swift::train
