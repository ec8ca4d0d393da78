// GaLore's projection (see galore_projector.h). The choices follow galore-torch 1.0 line by line where they
// matter to the numbers: the SVD in float32 (torch.linalg.svd, reduced), the basis cast back to the gradient's
// dtype, the side chosen from the shape, project_back choosing its side from the low-rank shape.
#include "swift/train/galore_projector.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "swift/core/error.h"

namespace swift::train {

GaLoreProjection parse_galore_projection(const std::string& name) {
  if (name == "std") return GaLoreProjection::kStd;
  if (name == "reverse_std") return GaLoreProjection::kReverseStd;
  if (name == "right") return GaLoreProjection::kRight;
  if (name == "left") return GaLoreProjection::kLeft;
  if (name == "full") return GaLoreProjection::kFull;
  throw UsageError("--galore_proj_type " + name + " is not a GaLore projection",
                   "use std (default), reverse_std, right, left or full");
}

std::string galore_projection_name(GaLoreProjection projection) {
  switch (projection) {
    case GaLoreProjection::kStd: return "std";
    case GaLoreProjection::kReverseStd: return "reverse_std";
    case GaLoreProjection::kRight: return "right";
    case GaLoreProjection::kLeft: return "left";
    case GaLoreProjection::kFull: return "full";
  }
  return "std";
}

GaLoreProjector::Side GaLoreProjector::side_for(int64_t rows, int64_t cols) const {
  switch (settings_.projection) {
    case GaLoreProjection::kStd: return rows >= cols ? Side::kRight : Side::kLeft;
    case GaLoreProjection::kReverseStd: return rows >= cols ? Side::kLeft : Side::kRight;
    case GaLoreProjection::kRight: return Side::kRight;
    case GaLoreProjection::kLeft: return Side::kLeft;
    case GaLoreProjection::kFull: break;
  }
  return Side::kRight;  // unused for kFull
}

at::Tensor GaLoreProjector::project(const at::Tensor& grad, int64_t step) {
  SWIFT_ASSERT(grad.dim() == 2, "GaLore projects matrices; got a gradient of shape " + c10::str(grad.sizes()));
  const bool full = settings_.projection == GaLoreProjection::kFull;
  const Side side = side_ = side_for(grad.size(0), grad.size(1));
  const bool have = full ? left_.defined() : (side == Side::kLeft ? left_.defined() : right_.defined());
  if (!have || step % settings_.update_proj_gap == 0) {
    // galore-torch: the SVD of the float32 gradient; the basis in the gradient's dtype.
    const auto [u, s, vh] = at::linalg_svd(grad.to(at::kFloat), /*full_matrices=*/false);
    (void)s;
    // Contiguous, as a basis read back from a checkpoint is: a strided view of U takes another matmul kernel on
    // some CPUs (AVX-512), whose last bits differ, and resuming would not be exact.
    if (full || side == Side::kLeft)
      left_ = u.narrow(1, 0, std::min(settings_.rank, u.size(1))).to(grad.scalar_type()).contiguous();
    if (full || side == Side::kRight)
      right_ = vh.narrow(0, 0, std::min(settings_.rank, vh.size(0))).to(grad.scalar_type()).contiguous();
  }
  if (full) return at::matmul(at::matmul(left_.t(), grad), right_.t());
  return side == Side::kRight ? at::matmul(grad, right_.t()) : at::matmul(left_.t(), grad);
}

at::Tensor GaLoreProjector::project_back(const at::Tensor& low_rank) const {
  // galore-torch picks the side again from the low-rank shape; that is the side project used (except where rank
  // >= the short side under reverse_std, where galore-torch multiplies by a basis it does not have).
  at::Tensor back;
  if (settings_.projection == GaLoreProjection::kFull) back = at::matmul(at::matmul(left_, low_rank), right_);
  else back = side_ == Side::kRight ? at::matmul(low_rank, right_) : at::matmul(left_, low_rank);
  return back * settings_.scale;
}

std::vector<int64_t> GaLoreProjector::low_rank_shape(int64_t rows, int64_t cols) const {
  const int64_t r = std::min({settings_.rank, rows, cols});  // the reduced SVD has min(rows, cols) vectors
  if (settings_.projection == GaLoreProjection::kFull) return {r, r};
  return side_for(rows, cols) == Side::kRight ? std::vector<int64_t>{rows, r} : std::vector<int64_t>{r, cols};
}

std::vector<std::vector<int64_t>> GaLoreProjector::basis_shapes(int64_t rows, int64_t cols) const {
  const int64_t r = std::min({settings_.rank, rows, cols});
  if (settings_.projection == GaLoreProjection::kFull) return {{rows, r}, {r, cols}};
  if (side_for(rows, cols) == Side::kRight) return {{r, cols}};
  return {{rows, r}};
}

std::vector<at::Tensor> GaLoreProjector::basis() const {
  std::vector<at::Tensor> out;
  if (left_.defined()) out.push_back(left_);
  if (right_.defined()) out.push_back(right_);
  return out;
}

void GaLoreProjector::set_basis(std::vector<at::Tensor> basis, int64_t rows, int64_t cols) {
  const bool full = settings_.projection == GaLoreProjection::kFull;
  SWIFT_ASSERT(basis.size() == (full ? 2u : 1u), "GaLore: wrong number of basis matrices");
  left_ = right_ = at::Tensor();
  side_ = side_for(rows, cols);
  if (full) {
    left_ = basis[0];
    right_ = basis[1];
  } else {
    (side_ == Side::kLeft ? left_ : right_) = basis[0];
  }
}

}  // namespace swift::train
