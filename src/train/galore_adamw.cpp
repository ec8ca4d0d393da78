// GaLore's AdamW (see galore_adamw.h).
#include "swift/train/galore_adamw.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

#include "swift/core/error.h"
#include "swift/io/safetensors.h"
#include "swift/train/fused_adamw_batch.h"
#include "swift/train/optimizer_state_file.h"

namespace swift::train {

GaLoreAdamW::GaLoreAdamW(std::vector<GaLoreGroup> groups, AdamWHyper hyper, GaLoreSettings galore)
    : hyper_(hyper), galore_(galore) {
  std::set<std::string> seen;
  for (auto& group : groups) {
    for (auto& [name, param] : group.params) {
      SWIFT_ASSERT(seen.insert(name).second, "GaLoreAdamW: parameter " + name + " given twice");
      SWIFT_ASSERT(!group.low_rank || param.dim() == 2, "GaLore projects matrices; " + name + " is not one");
      Slot slot;
      slot.name = name;
      slot.param = param;
      slot.weight_decay = group.weight_decay;
      if (group.low_rank) slot.projector.emplace(galore);
      slots_.push_back(std::move(slot));
    }
  }
}

void GaLoreAdamW::step() {
  const at::NoGradGuard no_grad;
  const double lr = this->lr(), beta1 = hyper_.beta1, beta2 = hyper_.beta2;
  // Unprojected parameters (the embeddings above all) go through LibTorch's fused AdamW kernel: one pass over
  // each instead of eight. Its update lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps') equals galore-torch's
  // lr * sqrt(bc2) / bc1 * m / (sqrt(v) + eps) for eps' = eps / sqrt(bc2); the kernel runs without weight decay,
  // which galore-torch applies after the update (below).
  FusedAdamWBatch fused;
  std::vector<Slot*> decayed;
  for (auto& slot : slots_) {
    at::Tensor grad = slot.param.grad();
    if (!grad.defined()) continue;
    SWIFT_ASSERT(!grad.is_sparse(), "GaLoreAdamW: sparse gradient for " + slot.name);
    if (slot.weight_decay > 0.0) decayed.push_back(&slot);
    if (!slot.projector) {
      if (!slot.exp_avg.defined()) {
        slot.exp_avg = at::zeros_like(slot.param, at::MemoryFormat::Preserve);
        slot.exp_avg_sq = at::zeros_like(slot.param, at::MemoryFormat::Preserve);
      }
      slot.step += 1;
      const double n = static_cast<double>(slot.step);
      fused.add(/*weight_decay=*/0.0, hyper_.eps / std::sqrt(1.0 - std::pow(beta2, n)), slot.param, grad, slot.exp_avg,
                slot.exp_avg_sq, at::full({}, n, slot.param.options().dtype(at::kFloat)));
      continue;
    }
    // Projected: galore-torch's steps one by one (the tensors are low-rank; the matrices pass twice).
    grad = slot.projector->project(grad, slot.step);
    if (!slot.exp_avg.defined()) {
      slot.exp_avg = at::zeros_like(grad);
      slot.exp_avg_sq = at::zeros_like(grad);
    }
    slot.step += 1;
    slot.exp_avg.mul_(beta1).add_(grad, 1.0 - beta1);
    slot.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1.0 - beta2);
    const at::Tensor denom = slot.exp_avg_sq.sqrt().add_(hyper_.eps);
    const double n = static_cast<double>(slot.step);
    const double step_size = lr * std::sqrt(1.0 - std::pow(beta2, n)) / (1.0 - std::pow(beta1, n));
    slot.param.add_(slot.projector->project_back(slot.exp_avg / denom), -step_size);
  }
  fused.run(lr, beta1, beta2, /*advance_steps=*/false);
  // galore-torch's decoupled weight decay, after the update: p -= lr * wd * p.
  for (Slot* slot : decayed) slot->param.add_(slot->param, -lr * slot->weight_decay);
}

std::vector<at::Tensor> GaLoreAdamW::parameters() const {
  std::vector<at::Tensor> out;
  out.reserve(slots_.size());
  for (const auto& slot : slots_) out.push_back(slot.param);
  return out;
}

int64_t GaLoreAdamW::planned_state_bytes() const {
  auto count = [](const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (const int64_t d : shape) n *= d;
    return n;
  };
  int64_t bytes = 0;
  for (const auto& slot : slots_) {
    const auto element = static_cast<int64_t>(slot.param.element_size());
    if (!slot.projector) {
      bytes += 2 * slot.param.numel() * element;
      continue;
    }
    const int64_t rows = slot.param.size(0), cols = slot.param.size(1);
    bytes += 2 * count(slot.projector->low_rank_shape(rows, cols)) * element;
    for (const auto& shape : slot.projector->basis_shapes(rows, cols)) bytes += count(shape) * element;
  }
  return bytes;
}

std::string GaLoreAdamW::describe() const {
  int64_t projected = 0;
  for (const auto& slot : slots_) projected += slot.projector.has_value();
  return "GaLore AdamW (rank " + std::to_string(galore_.rank) + ", " + galore_projection_name(galore_.projection) +
         " projection refreshed every " + std::to_string(galore_.update_proj_gap) + " steps, scale " +
         c10::str(galore_.scale) + ", " + std::to_string(projected) + " of " + std::to_string(slots_.size()) +
         " parameters projected)";
}

std::vector<std::string> GaLoreAdamW::basis_names(const Slot& slot) const {
  if (galore_.projection == GaLoreProjection::kFull) return {slot.name + ".galore_basis_left", slot.name + ".galore_basis_right"};
  return {slot.name + ".galore_basis"};
}

std::vector<std::pair<std::string, at::Tensor>> GaLoreAdamW::state_tensors() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& slot : slots_) {
    if (!slot.exp_avg.defined()) continue;
    out.emplace_back(slot.name + ".exp_avg", slot.exp_avg);
    out.emplace_back(slot.name + ".exp_avg_sq", slot.exp_avg_sq);
    out.emplace_back(slot.name + ".step", at::full({}, static_cast<double>(slot.step), at::kFloat));
    if (slot.projector) {
      const auto names = basis_names(slot);
      const auto basis = slot.projector->basis();
      for (size_t i = 0; i < basis.size(); ++i) out.emplace_back(names[i], basis[i]);
    }
  }
  return out;
}

void GaLoreAdamW::save(const std::filesystem::path& path) const {
  // The settings travel with the state: a basis of another rank or projection would not fit the moments.
  io::save_safetensors(path, state_tensors(),
                       {{"format", "swift-galore-adamw"}, {"version", "1"}, {"galore_rank", std::to_string(galore_.rank)},
                        {"galore_proj_type", galore_projection_name(galore_.projection)}});
}

void GaLoreAdamW::load(const std::vector<std::filesystem::path>& paths, const std::set<std::string>& elsewhere) {
  OptimizerStateFiles files(paths, "swift-galore-adamw");
  const at::NoGradGuard no_grad;
  for (auto& slot : slots_) {
    if (!files.find(slot.name + ".exp_avg")) continue;  // no gradient yet when it was saved
    std::vector<int64_t> moment_shape = slot.param.sizes().vec();
    if (slot.projector) moment_shape = slot.projector->low_rank_shape(slot.param.size(0), slot.param.size(1));
    const auto options = slot.param.options();
    slot.exp_avg = files.take(slot.name + ".exp_avg", at::IntArrayRef(moment_shape), false).to(options, /*non_blocking=*/false, /*copy=*/true);
    slot.exp_avg_sq = files.take(slot.name + ".exp_avg_sq", at::IntArrayRef(moment_shape), true).to(options, false, true);
    const at::Tensor step = files.take(slot.name + ".step", at::IntArrayRef{}, true);
    slot.step = static_cast<int64_t>(step.item<double>());
    if (slot.projector) {
      const auto shapes = slot.projector->basis_shapes(slot.param.size(0), slot.param.size(1));
      const auto names = basis_names(slot);
      std::vector<at::Tensor> basis;
      for (size_t i = 0; i < names.size(); ++i)
        basis.push_back(files.take(names[i], at::IntArrayRef(shapes[i]), false).to(options, false, true));
      slot.projector->set_basis(std::move(basis), slot.param.size(0), slot.param.size(1));
    }
  }
  files.check_all_used(elsewhere);
}

}  // namespace swift::train
