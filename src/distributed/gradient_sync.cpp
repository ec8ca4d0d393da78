// Bucketed parameter broadcast and gradient all-reduce (see the header).
#include "swift/distributed/gradient_sync.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <functional>
#include <algorithm>
#include <map>
#include <utility>

#include "swift/core/error.h"

namespace swift::distributed {

namespace {
// Runs `fn` after autograd has accumulated a gradient into the parameter's .grad (what DDP's reducer hooks).
class AfterAccumulate : public torch::autograd::FunctionPostHook {
 public:
  explicit AfterAccumulate(std::function<void()> fn) : fn_(std::move(fn)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    fn_();
    return outputs;
  }

 private:
  std::function<void()> fn_;
};

using Accumulator = decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));
}  // namespace

struct GradientSync::Hooks {
  bool done = false;
  std::vector<std::pair<Accumulator, uintptr_t>> installed;  // holding the accumulator keeps it (and .grad) alive
};

GradientSync::GradientSync(ProcessGroup& group, std::vector<at::Tensor> params, int64_t bucket_bytes)
    : group_(group), params_(std::move(params)), bucket_bytes_(bucket_bytes), hooks_(std::make_unique<Hooks>()) {
  std::vector<size_t> reversed(params_.size());
  for (size_t i = 0; i < reversed.size(); ++i) reversed[i] = reversed.size() - 1 - i;
  buckets_ = make_buckets(reversed);
  bucket_of_.resize(params_.size());
  for (size_t b = 0; b < buckets_.size(); ++b)
    for (size_t i : buckets_[b]) bucket_of_[i] = b;
}

GradientSync::~GradientSync() {
  for (auto& [acc, key] : hooks_->installed) acc->del_post_hook(key);
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

// The parameters' gradients (zeros where a parameter has none here), then one 0/1 "has a gradient" flag per
// parameter: summed with them, the flags tell which parameters no rank computed a gradient for, which must stay
// without one (AdamW skips those, as in one process) instead of being updated with a zero gradient.
at::Tensor GradientSync::flat_grads(const std::vector<size_t>& params) const {
  std::vector<at::Tensor> parts;
  std::vector<double> has;
  for (size_t i : params) {
    const at::Tensor& p = params_[i];
    const at::Tensor g = p.grad();
    parts.push_back(g.defined() ? g.reshape(-1) : at::zeros({p.numel()}, p.options()));
    has.push_back(g.defined() ? 1.0 : 0.0);
  }
  parts.push_back(at::tensor(has, params_[params.front()].options()));
  return at::cat(parts);
}

void GradientSync::set_owners(const std::vector<int>& owners) {
  SWIFT_ASSERT(owners.size() == params_.size(), "one owner per parameter");
  bucket_owners_.assign(buckets_.size(), {});
  for (size_t b = 0; b < buckets_.size(); ++b) {
    std::map<int, std::vector<size_t>> by_owner;
    for (size_t i : buckets_[b]) by_owner[owners[i]].push_back(i);
    for (auto& [owner, members] : by_owner) bucket_owners_[b].emplace_back(owner, std::move(members));
  }
  owner_buckets_.clear();
  for (int rank = 0; rank < group_.world_size(); ++rank) {
    std::vector<size_t> mine;
    for (size_t i = 0; i < owners.size(); ++i)
      if (owners[i] == rank) mine.push_back(i);
    for (auto& bucket : make_buckets(mine)) owner_buckets_.emplace_back(rank, std::move(bucket));
  }
}

// Once, when overlap is first asked for (ZeRO-3 never asks: its parameters' storage comes and goes).
void GradientSync::install_hooks() {
  hooks_->done = true;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].requires_grad()) continue;
    Accumulator acc = torch::autograd::impl::grad_accumulator(params_[i]);
    if (!acc) continue;
    const uintptr_t key = acc->add_post_hook(std::make_unique<AfterAccumulate>([this, i] { on_gradient_final(i); }));
    hooks_->installed.emplace_back(std::move(acc), key);
  }
}

void GradientSync::overlap_next_backward(Exchange exchange) {
  if (!hooks_->done) install_hooks();
  arm(exchange);
}

void GradientSync::arm(Exchange exchange) {
  SWIFT_ASSERT(exchange == Exchange::kAllReduce || bucket_owners_.size() == buckets_.size(), "reduce to owners needs owners");
  armed_ = true;
  exchange_ = exchange;
  final_.assign(params_.size(), false);
  waiting_.clear();
  for (const auto& bucket : buckets_) waiting_.push_back(bucket.size());
  next_bucket_ = 0;
  overlapped_ = 0;
  in_flight_.clear();
}

void GradientSync::on_gradient_final(size_t param) {
  if (!armed_ || final_[param]) return;
  final_[param] = true;
  --waiting_[bucket_of_[param]];
  // In bucket order only: a later bucket that is complete waits for the earlier ones.
  while (next_bucket_ < buckets_.size() && waiting_[next_bucket_] == 0) {
    start_bucket(next_bucket_++);
    ++overlapped_;
  }
  if (measured_backwards_left_ > 0) measure_held_bytes();
}

void GradientSync::measure_held_bytes() {
  int64_t bytes = 0;
  for (const auto& p : params_)
    if (p.grad().defined()) bytes += p.grad().numel() * static_cast<int64_t>(p.grad().element_size());
  for (const auto& f : in_flight_)
    for (const auto& flat : f.flat) bytes += flat.numel() * static_cast<int64_t>(flat.element_size());
  peak_bytes_ = std::max(peak_bytes_, bytes);
}

void GradientSync::start_bucket(size_t b) {
  c10::NoGradGuard no_grad;
  while (in_flight_.size() >= 2) finish_oldest();
  InFlight f;
  if (exchange_ == Exchange::kAllReduce) {
    f.roots = {-1};
    f.members = {&buckets_[b]};
  } else {  // one reduce per owner, in rank order
    for (const auto& [owner, members] : bucket_owners_[b]) {
      f.roots.push_back(owner);
      f.members.push_back(&members);
    }
  }
  for (size_t k = 0; k < f.roots.size(); ++k) {
    f.flat.push_back(flat_grads(*f.members[k]));
    const int root = f.roots[k];
    f.pending.push_back(root < 0 ? group_.start_all_reduce_sum(f.flat.back())
                                 : group_.start_reduce_sum(f.flat.back(), root));
    if (root >= 0 && root != group_.rank())  // copied into the collective's buffer: not ours to keep
      for (size_t i : *f.members[k]) params_[i].mutable_grad().reset();
  }
  in_flight_.push_back(std::move(f));
}

// The oldest started bucket's sums, written into .grad where this rank keeps them.
void GradientSync::finish_oldest() {
  c10::NoGradGuard no_grad;
  InFlight f = std::move(in_flight_.front());
  in_flight_.pop_front();
  for (size_t k = 0; k < f.roots.size(); ++k) {
    f.pending[k].wait();
    if (f.roots[k] >= 0 && f.roots[k] != group_.rank()) continue;
    const at::Tensor& flat = f.flat[k];
    const auto& members = *f.members[k];
    // For each parameter, whether any rank had a gradient (one copy to the host per bucket).
    const at::Tensor has = flat.narrow(0, flat.numel() - static_cast<int64_t>(members.size()),
                                       static_cast<int64_t>(members.size())).to(at::kCPU, at::kDouble);
    int64_t offset = 0;
    for (size_t j = 0; j < members.size(); ++j) {
      at::Tensor p = params_[members[j]];
      at::Tensor summed = flat.narrow(0, offset, p.numel()).view_as(p);
      if (has.data_ptr<double>()[j] < 0.5) p.mutable_grad().reset();
      else if (p.grad().defined()) p.mutable_grad().copy_(summed);
      else p.mutable_grad() = summed.clone();
      offset += p.numel();
    }
  }
}

void GradientSync::finish(Exchange exchange) {
  if (armed_ && measured_backwards_left_ > 0) --measured_backwards_left_;
  if (!armed_ || exchange_ != exchange) arm(exchange);  // nothing started in a backward: every bucket now
  armed_ = false;
  while (next_bucket_ < buckets_.size()) start_bucket(next_bucket_++);
  while (!in_flight_.empty()) finish_oldest();
}

void GradientSync::all_reduce_gradients() { finish(Exchange::kAllReduce); }
void GradientSync::reduce_gradients_to_owners() { finish(Exchange::kReduceToOwners); }

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

}  // namespace swift::distributed
