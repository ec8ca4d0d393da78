// GaLore's gradient projection (Zhao et al. 2024, "GaLore: Memory-Efficient LLM Training by Gradient Low-Rank
// Projection"), as galore-torch's GaLoreProjector computes it: a matrix gradient G [m, n] is projected onto the
// top `rank` singular vectors of a recent gradient, the optimizer keeps its moments at that low rank, and the
// update is projected back (times `scale`). The basis is recomputed (an SVD of the current gradient) at the first
// step and every `update_proj_gap` steps after.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace swift::train {

// Which side is projected (galore-torch's proj_type).
enum class GaLoreProjection {
  kStd,         // the smaller side: G V^T for a tall G (m >= n), U^T G for a wide one
  kReverseStd,  // the larger side
  kRight,       // always G V^T
  kLeft,        // always U^T G
  kFull,        // both: U^T G V^T
};
// "std", "reverse_std", "right", "left", "full". UsageError naming --galore_proj_type otherwise.
GaLoreProjection parse_galore_projection(const std::string& name);
std::string galore_projection_name(GaLoreProjection projection);

struct GaLoreSettings {
  int64_t rank = 128;             // --galore_rank. Default: 128 (ms-swift)
  int64_t update_proj_gap = 50;   // --galore_update_proj_gap. Default: 50 (ms-swift)
  double scale = 1.0;             // --galore_scale. Default: 1.0 (ms-swift)
  GaLoreProjection projection = GaLoreProjection::kStd;  // --galore_proj_type. Default: std
};

class GaLoreProjector {
 public:
  explicit GaLoreProjector(GaLoreSettings settings) : settings_(settings) {}

  // The low-rank gradient. `step` counts the updates made before this one (0 first): the basis is recomputed
  // from `grad` when none exists or step % update_proj_gap == 0.
  at::Tensor project(const at::Tensor& grad, int64_t step);
  // A low-rank update back in the parameter's shape, times the scale.
  at::Tensor project_back(const at::Tensor& low_rank) const;

  // The low-rank shape of a [rows, cols] gradient, and the basis shapes (one matrix, or left and right for kFull).
  std::vector<int64_t> low_rank_shape(int64_t rows, int64_t cols) const;
  std::vector<std::vector<int64_t>> basis_shapes(int64_t rows, int64_t cols) const;

  // The basis (for saving: one tensor, or left and right for kFull); empty before the first projection.
  std::vector<at::Tensor> basis() const;
  // A saved basis of a [rows, cols] parameter's gradient, shaped as basis_shapes says.
  void set_basis(std::vector<at::Tensor> basis, int64_t rows, int64_t cols);

 private:
  enum class Side { kLeft, kRight };
  Side side_for(int64_t rows, int64_t cols) const;  // the side one-sided projections use for this shape

  GaLoreSettings settings_;
  Side side_ = Side::kRight;  // the side of the last projection (one-sided projections)
  at::Tensor left_, right_;  // U[:, :rank] [m, r] and Vh[:rank] [r, n]; one-sided projections use one of them
};

}  // namespace swift::train
