// Bucketed parameter broadcast and gradient all-reduce (see the header).
#include "swift/dist/gradient_sync.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "swift/dist/process_group.h"

namespace swift::dist {

GradientSync::GradientSync(ProcessGroup& group, std::vector<at::Tensor> params, int64_t bucket_bytes)
    : group_(group), params_(std::move(params)), bucket_bytes_(bucket_bytes) {
  std::vector<size_t> all(params_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  buckets_ = make_buckets(all);
}

std::vector<std::vector<size_t>> GradientSync::make_buckets(const std::vector<size_t>& indices) const {
  std::vector<std::vector<size_t>> buckets;
  int64_t bytes = 0;
  for (size_t i : indices) {
    const at::Tensor& p = params_[i];
    const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
    const bool fits = !buckets.empty() && bytes + size <= bucket_bytes_ &&
                      params_[buckets.back().front()].scalar_type() == p.scalar_type() &&
                      params_[buckets.back().front()].device() == p.device();
    if (!fits) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(i);
    bytes += size;
  }
  return buckets;
}

// The bucket's gradients (zeros where a parameter has none here), then one 0/1 "has a gradient" flag per
// parameter: summed with them, the flags tell which parameters no rank computed a gradient for, which must stay
// without one (AdamW skips those, as in one process) instead of being updated with a zero gradient.
at::Tensor GradientSync::flat_grads(const std::vector<size_t>& bucket) const {
  std::vector<at::Tensor> parts;
  std::vector<double> has;
  for (size_t i : bucket) {
    const at::Tensor& p = params_[i];
    const at::Tensor g = p.grad();
    parts.push_back(g.defined() ? g.reshape(-1) : at::zeros({p.numel()}, p.options()));
    has.push_back(g.defined() ? 1.0 : 0.0);
  }
  parts.push_back(at::tensor(has, params_[bucket.front()].options()));
  return at::cat(parts);
}

namespace {
// After the collective: for each of the bucket's n parameters, whether any rank had a gradient (one copy to the
// host per bucket).
std::vector<bool> any_gradient(const at::Tensor& flat, size_t n) {
  const at::Tensor flags = flat.narrow(0, flat.numel() - static_cast<int64_t>(n), static_cast<int64_t>(n))
                               .to(at::kCPU, at::kDouble);
  std::vector<bool> out(n);
  for (size_t k = 0; k < n; ++k) out[k] = flags.data_ptr<double>()[k] > 0.5;
  return out;
}
}  // namespace

void GradientSync::set_owners(const std::vector<int>& owners) {
  owner_buckets_.clear();
  for (int rank = 0; rank < group_.world_size(); ++rank) {
    std::vector<size_t> mine;
    for (size_t i = 0; i < owners.size(); ++i)
      if (owners[i] == rank) mine.push_back(i);
    for (auto& bucket : make_buckets(mine)) owner_buckets_.emplace_back(rank, std::move(bucket));
  }
}

void GradientSync::reduce_gradients_to_owners() {
  c10::NoGradGuard no_grad;
  for (const auto& [owner, bucket] : owner_buckets_) {
    at::Tensor flat = flat_grads(bucket);
    group_.reduce_sum(flat, owner);
    const std::vector<bool> has = owner == group_.rank() ? any_gradient(flat, bucket.size()) : std::vector<bool>();
    int64_t offset = 0;
    for (size_t k = 0; k < bucket.size(); ++k) {
      at::Tensor p = params_[bucket[k]];
      if (owner == group_.rank()) {
        at::Tensor summed = flat.narrow(0, offset, p.numel()).view_as(p);
        if (!has[k]) p.mutable_grad().reset();
        else if (p.grad().defined()) p.mutable_grad().copy_(summed);
        else p.mutable_grad() = summed.clone();
      } else {
        p.mutable_grad().reset();  // not ours: freed until the next micro-batch's backward
      }
      offset += p.numel();
    }
  }
}

// One bucket's values from `root` to every rank (the root keeps its own).
void GradientSync::broadcast_bucket(const std::vector<size_t>& bucket, int root) {
  std::vector<at::Tensor> parts;
  for (size_t i : bucket) parts.push_back(params_[i].detach().reshape(-1));
  at::Tensor flat = at::cat(parts);
  group_.broadcast(flat, root);
  if (root == group_.rank()) return;
  int64_t offset = 0;
  for (size_t i : bucket) {
    at::Tensor p = params_[i].detach();
    p.copy_(flat.narrow(0, offset, p.numel()).view_as(p));
    offset += p.numel();
  }
}

void GradientSync::broadcast_from_owners() {
  c10::NoGradGuard no_grad;
  for (const auto& [owner, bucket] : owner_buckets_) broadcast_bucket(bucket, owner);
}

void GradientSync::broadcast_parameters(int root) {
  c10::NoGradGuard no_grad;
  for (const auto& bucket : buckets_) broadcast_bucket(bucket, root);
}

void GradientSync::all_reduce_gradients() {
  c10::NoGradGuard no_grad;
  for (const auto& bucket : buckets_) {
    at::Tensor flat = flat_grads(bucket);
    group_.all_reduce_sum(flat);
    const std::vector<bool> has = any_gradient(flat, bucket.size());
    int64_t offset = 0;
    for (size_t k = 0; k < bucket.size(); ++k) {
      at::Tensor p = params_[bucket[k]];
      at::Tensor summed = flat.narrow(0, offset, p.numel()).view_as(p);
      if (!has[k]) p.mutable_grad().reset();
      else if (p.grad().defined()) p.mutable_grad().copy_(summed);
      else p.mutable_grad() = summed.clone();
      offset += p.numel();
    }
  }
}

}  // namespace swift::dist
