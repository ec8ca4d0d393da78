// Bucketed parameter broadcast and gradient all-reduce (see the header).
#include "swift/dist/gradient_sync.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "swift/dist/process_group.h"

namespace swift::dist {

GradientSync::GradientSync(ProcessGroup& group, std::vector<at::Tensor> params, int64_t bucket_bytes)
    : group_(group), params_(std::move(params)) {
  int64_t bytes = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const at::Tensor& p = params_[i];
    const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
    const bool fits = !buckets_.empty() && bytes + size <= bucket_bytes &&
                      params_[buckets_.back().front()].scalar_type() == p.scalar_type() &&
                      params_[buckets_.back().front()].device() == p.device();
    if (!fits) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().push_back(i);
    bytes += size;
  }
}

void GradientSync::broadcast_parameters(int root) {
  c10::NoGradGuard no_grad;
  for (const auto& bucket : buckets_) {
    std::vector<at::Tensor> parts;
    for (size_t i : bucket) parts.push_back(params_[i].detach().reshape(-1));
    at::Tensor flat = at::cat(parts);
    group_.broadcast(flat, root);
    int64_t offset = 0;
    for (size_t i : bucket) {
      at::Tensor p = params_[i].detach();
      p.copy_(flat.narrow(0, offset, p.numel()).view_as(p));
      offset += p.numel();
    }
  }
}

void GradientSync::all_reduce_gradients() {
  c10::NoGradGuard no_grad;
  for (const auto& bucket : buckets_) {
    std::vector<at::Tensor> parts;
    for (size_t i : bucket) {
      const at::Tensor& p = params_[i];
      const at::Tensor g = p.grad();
      parts.push_back(g.defined() ? g.reshape(-1) : at::zeros({p.numel()}, p.options()));
    }
    at::Tensor flat = at::cat(parts);
    group_.all_reduce_sum(flat);
    int64_t offset = 0;
    for (size_t i : bucket) {
      at::Tensor p = params_[i];
      at::Tensor summed = flat.narrow(0, offset, p.numel()).view_as(p);
      if (p.grad().defined()) {
        p.mutable_grad().copy_(summed);
      } else {
        p.mutable_grad() = summed.clone();
      }
      offset += p.numel();
    }
  }
}

}  // namespace swift::dist
