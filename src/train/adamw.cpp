// Fused AdamW (see adamw.h).
#include "swift/train/adamw.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>

#include "swift/core/error.h"
#include "swift/io/safetensors.h"
#include "swift/train/fused_adamw_batch.h"
#include "swift/train/optimizer_state_file.h"

namespace swift::train {

AdamW::AdamW(std::vector<AdamWGroup> groups, AdamWHyper hyper) : hyper_(hyper) {
  std::set<std::string> seen;
  for (auto& group : groups) {
    for (auto& [name, param] : group.params) {
      SWIFT_ASSERT(seen.insert(name).second, "AdamW: parameter " + name + " given twice");
      Slot slot;
      slot.name = name;
      slot.param = param;
      slot.weight_decay = group.weight_decay;
      slots_.push_back(std::move(slot));
    }
  }
}

void AdamW::offload_to(c10::Device host) {
  SWIFT_ASSERT(std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.exp_avg.defined(); }),
               "AdamW::offload_to before any state exists");
  offload_ = host;
}

void AdamW::init_state(Slot& slot) const {
  const at::NoGradGuard no_grad;
  if (offload_) slot.master = slot.param.detach().to(*offload_, at::kFloat, /*non_blocking=*/false, /*copy=*/true);
  const at::Tensor& like = offload_ ? slot.master : slot.param;
  slot.exp_avg = at::zeros_like(like, at::MemoryFormat::Preserve);
  slot.exp_avg_sq = at::zeros_like(like, at::MemoryFormat::Preserve);
  slot.step = at::zeros({}, like.options().dtype(at::kFloat));
}

void AdamW::step() {
  const at::NoGradGuard no_grad;
  FusedAdamWBatch batch;
  for (auto& slot : slots_) {
    const at::Tensor& grad = slot.param.grad();
    if (!grad.defined()) continue;
    SWIFT_ASSERT(!grad.is_sparse(), "AdamW: sparse gradient for " + slot.name);
    if (!slot.exp_avg.defined()) init_state(slot);
    batch.add(slot.weight_decay, hyper_.eps, offload_ ? slot.master : slot.param,
              offload_ ? grad.to(*offload_, at::kFloat) : grad, slot.exp_avg, slot.exp_avg_sq, slot.step);
  }
  batch.run(lr(), hyper_.beta1, hyper_.beta2, /*advance_steps=*/true);
  if (offload_)  // the updated masters back into the parameters (their device and dtype)
    for (auto& slot : slots_)
      if (slot.param.grad().defined()) slot.param.detach().copy_(slot.master);
}

std::vector<at::Tensor> AdamW::parameters() const {
  std::vector<at::Tensor> out;
  out.reserve(slots_.size());
  for (const auto& slot : slots_) out.push_back(slot.param);
  return out;
}

int64_t AdamW::planned_state_bytes() const {
  int64_t bytes = 0;  // two moments shaped like each parameter (fp32 with offload, as the masters)
  for (const auto& slot : slots_)
    bytes += 2 * slot.param.numel() * static_cast<int64_t>(offload_ ? 4 : slot.param.element_size());
  return bytes;
}

std::vector<std::pair<std::string, at::Tensor>> AdamW::state_tensors() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& slot : slots_) {
    if (!slot.exp_avg.defined()) continue;
    out.emplace_back(slot.name + ".exp_avg", slot.exp_avg);
    out.emplace_back(slot.name + ".exp_avg_sq", slot.exp_avg_sq);
    out.emplace_back(slot.name + ".step", slot.step);
  }
  return out;
}

void AdamW::save(const std::filesystem::path& path) const {
  io::save_safetensors(path, state_tensors(), {{"format", "swift-adamw"}, {"version", "1"}});
}

void AdamW::load(const std::vector<std::filesystem::path>& paths, const std::set<std::string>& elsewhere) {
  OptimizerStateFiles files(paths, "swift-adamw");
  const at::NoGradGuard no_grad;
  for (auto& slot : slots_) {
    if (!files.find(slot.name + ".exp_avg")) continue;  // a parameter that had no gradient yet when it was saved
    init_state(slot);
    for (auto [suffix, target] : {std::pair<const char*, at::Tensor*>{".exp_avg", &slot.exp_avg},
                                  {".exp_avg_sq", &slot.exp_avg_sq},
                                  {".step", &slot.step}})
      target->copy_(files.take(slot.name + suffix, target->sizes(), std::string(suffix) != ".exp_avg"));
  }
  files.check_all_used(elsewhere);
}

}  // namespace swift::train
