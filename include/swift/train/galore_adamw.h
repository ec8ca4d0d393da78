// GaLore's AdamW (galore-torch's GaLoreAdamW, which ms-swift's --use_galore builds): full fine-tuning whose
// optimizer state for the chosen matrices lives at low rank. Each such parameter's gradient is projected
// (galore_projector.h), the moments are kept and updated at that rank, and the normalised update is projected
// back. Every other parameter gets the same AdamW without projection. The update is transformers' original
// AdamW, as galore-torch's: denominator sqrt(v) + eps, bias corrections folded into the step size, and decoupled
// weight decay applied after the update (p -= lr * wd * p). It is equal to galore-torch's at float32.
#pragma once

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "swift/train/adamw.h"
#include "swift/train/galore_projector.h"
#include "swift/train/optimizer.h"

namespace swift::train {

struct GaLoreGroup {
  std::vector<std::pair<std::string, at::Tensor>> params;  // (name, parameter)
  double weight_decay = 0.0;
  bool low_rank = false;  // GaLore's projection for these (each a matrix)
};

class GaLoreAdamW : public Optimizer {
 public:
  GaLoreAdamW(std::vector<GaLoreGroup> groups, AdamWHyper hyper, GaLoreSettings galore);

  void step() override;
  std::vector<at::Tensor> parameters() const override;
  // Projected parameters: two moments at low rank and the basis; the others: two moments of their shape.
  int64_t planned_state_bytes() const override;
  std::string describe() const override;
  // "<name>.exp_avg", "<name>.exp_avg_sq", "<name>.step" and, for projected ones, "<name>.galore_basis" (full
  // projection: "<name>.galore_basis_left" and "<name>.galore_basis_right").
  std::vector<std::pair<std::string, at::Tensor>> state_tensors() const override;
  void save(const std::filesystem::path& path) const override;
  using Optimizer::load;
  void load(const std::vector<std::filesystem::path>& files, const std::set<std::string>& elsewhere) override;

  const GaLoreSettings& settings() const { return galore_; }

 private:
  struct Slot {
    std::string name;
    at::Tensor param, exp_avg, exp_avg_sq;
    int64_t step = 0;
    double weight_decay = 0.0;
    std::optional<GaLoreProjector> projector;
  };
  std::vector<std::string> basis_names(const Slot& slot) const;

  std::vector<Slot> slots_;
  AdamWHyper hyper_;
  GaLoreSettings galore_;
};

}  // namespace swift::train
