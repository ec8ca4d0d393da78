// Fused AdamW (see adamw.h).
#include "swift/train/adamw.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "swift/core/error.h"
#include "swift/io/safetensors.h"

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
  // The kernel takes one weight decay per call and tensors of one device and dtype: bucket by all three.
  struct Bucket {
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
  };
  std::map<std::tuple<double, int, int, int>, Bucket> buckets;
  for (auto& slot : slots_) {
    const at::Tensor& grad = slot.param.grad();
    if (!grad.defined()) continue;
    SWIFT_ASSERT(!grad.is_sparse(), "AdamW: sparse gradient for " + slot.name);
    if (!slot.exp_avg.defined()) init_state(slot);
    const at::Tensor& target = offload_ ? slot.master : slot.param;
    const auto device = target.device();
    auto& b = buckets[{slot.weight_decay, static_cast<int>(device.type()), device.index(),
                       static_cast<int>(target.scalar_type())}];
    b.params.push_back(target);
    b.grads.push_back(offload_ ? grad.to(*offload_, at::kFloat) : grad);
    b.exp_avgs.push_back(slot.exp_avg);
    b.exp_avg_sqs.push_back(slot.exp_avg_sq);
    b.steps.push_back(slot.step);
  }
  for (auto& [key, b] : buckets) {
    // PyTorch advances the step counters before the kernel, which reads them for bias correction.
    at::_foreach_add_(b.steps, 1.0);
    at::_fused_adamw_(b.params, b.grads, b.exp_avgs, b.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, b.steps, lr_,
                      hyper_.beta1, hyper_.beta2, std::get<0>(key), hyper_.eps, /*amsgrad=*/false,
                      /*maximize=*/false);
  }
  if (offload_)  // the updated masters back into the parameters (their device and dtype)
    for (auto& slot : slots_)
      if (slot.param.grad().defined()) slot.param.detach().copy_(slot.master);
}

void AdamW::zero_grad() {
  for (auto& slot : slots_) {
    if (slot.param.grad().defined()) slot.param.mutable_grad() = at::Tensor();
  }
}

std::vector<at::Tensor> AdamW::parameters() const {
  std::vector<at::Tensor> out;
  out.reserve(slots_.size());
  for (const auto& slot : slots_) out.push_back(slot.param);
  return out;
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

void AdamW::load(const std::filesystem::path& path) { load(std::vector<std::filesystem::path>{path}, {}); }

void AdamW::load(const std::vector<std::filesystem::path>& paths, const std::set<std::string>& elsewhere) {
  std::vector<std::shared_ptr<io::SafetensorsFile>> files;
  for (const auto& path : paths) {
    files.push_back(io::SafetensorsFile::open(path));
    const auto format = files.back()->metadata().find("format");
    SWIFT_CHECK(format != files.back()->metadata().end() && format->second == "swift-adamw", DataError,
                path.string() + " is not a swift AdamW state file", "resume from a checkpoint written by swift sft");
  }
  std::set<std::string> used;
  const at::NoGradGuard no_grad;
  for (auto& slot : slots_) {
    size_t f = 0;
    while (f < files.size() && !files[f]->contains(slot.name + ".exp_avg")) ++f;
    if (f == files.size()) continue;  // a parameter that had no gradient yet when the state was saved
    const auto& file = *files[f];
    const std::string where = paths[f].string();
    init_state(slot);
    for (auto [suffix, target] : {std::pair<const char*, at::Tensor*>{".exp_avg", &slot.exp_avg},
                                  {".exp_avg_sq", &slot.exp_avg_sq},
                                  {".step", &slot.step}}) {
      const std::string name = slot.name + suffix;
      SWIFT_CHECK(file.contains(name), DataError, where + " lacks " + name,
                  "the optimizer state is incomplete; resume with --resume_only_model true");
      const at::Tensor saved = file.get(name);
      SWIFT_CHECK(saved.sizes() == target->sizes(), DataError,
                  where + ": " + name + " has shape " + c10::str(saved.sizes()) + ", the model's is " +
                      c10::str(target->sizes()),
                  "resume with the model and --train_type of the run that wrote it");
      // Damaged state would train on NaN from the first step: the moments must be finite, the second moment and
      // the step count not negative.
      const bool finite = at::isfinite(saved).all().item<bool>();
      const bool signed_ok = std::string(suffix) == ".exp_avg" || (saved >= 0).all().item<bool>();
      SWIFT_CHECK(finite && signed_ok, DataError,
                  where + ": " + name + (finite ? " holds negative values" : " holds NaN or inf"),
                  "the optimizer state is damaged; resume from another checkpoint, or with --resume_only_model true");
      target->copy_(saved);
      used.insert(name);
    }
  }
  for (size_t f = 0; f < files.size(); ++f) {
    for (const auto& entry : files[f]->entries()) {
      const std::string param = entry.name.substr(0, entry.name.rfind('.'));
      SWIFT_CHECK(used.count(entry.name) > 0 || elsewhere.count(param) > 0, DataError,
                  paths[f].string() + " holds state for " + entry.name + ", which is not a trainable parameter here",
                  "resume with the --train_type, --target_modules and model of the run that wrote it");
    }
  }
}

}  // namespace swift::train
