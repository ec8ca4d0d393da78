// What the training loop, the checkpoints and the parallel strategies need of an optimizer: a step over the
// parameters' gradients at the learning rate the schedule sets, and a state that saves to one safetensors file
// (per rank when sharded) and loads back by parameter name. AdamW (adamw.h) is the default; GaLore's AdamW
// (galore_adamw.h) keeps low-rank state for --use_galore / --optim galore_adamw.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace swift::train {

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  void set_lr(double lr) { lr_ = lr; }
  double lr() const { return lr_; }

  // One update from each parameter's .grad (parameters without a gradient are skipped, as PyTorch does).
  virtual void step() = 0;
  // Drops the gradients (set_to_none, as the Trainer), so the next backward allocates fresh ones.
  void zero_grad();
  // Every parameter it updates, in group order.
  virtual std::vector<at::Tensor> parameters() const = 0;
  // The bytes its state will hold once every parameter has had a step (for the memory estimate).
  virtual int64_t planned_state_bytes() const = 0;
  // "AdamW", "GaLore AdamW (rank 64)": for the log.
  virtual std::string describe() const = 0;

  // The state as named tensors ("<parameter>.<what>"), for saving and for measuring what it holds.
  virtual std::vector<std::pair<std::string, at::Tensor>> state_tensors() const = 0;
  // Writes the state as a safetensors file (atomic write).
  virtual void save(const std::filesystem::path& path) const = 0;
  void load(const std::filesystem::path& path) { load(std::vector<std::filesystem::path>{path}, {}); }
  // The state of this optimizer's parameters from whichever of `files` has them (ZeRO: one per rank that wrote
  // them); entries of the parameters in `elsewhere` (another rank's now) are skipped; anything else, a missing
  // or damaged tensor, or a file of another optimizer is a DataError naming the file.
  virtual void load(const std::vector<std::filesystem::path>& files, const std::set<std::string>& elsewhere) = 0;

 private:
  double lr_ = 0.0;
};

}  // namespace swift::train
