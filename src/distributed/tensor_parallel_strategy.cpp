// Tensor parallelism with data parallelism across its groups (see tensor_parallel_strategy.h).
#include "swift/distributed/tensor_parallel_strategy.h"

#include <ATen/ATen.h>

#include <cmath>

#include "swift/core/bytes.h"
#include "swift/core/logging.h"
#include "swift/distributed/gradient_norm.h"

namespace swift::distributed {
namespace {

// The model's view of the TP group.
class GroupComm : public model::TensorParallelComm {
 public:
  explicit GroupComm(ProcessGroup& group) : group_(group) {}
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.world_size(); }
  void all_reduce_sum(at::Tensor& t) override { group_.all_reduce_sum(t); }
  void all_reduce_max(at::Tensor& t) override { group_.all_reduce_max(t); }
  at::Tensor all_gather(const at::Tensor& t, int64_t dim) override { return group_.all_gather(t, dim); }

 private:
  ProcessGroup& group_;
};

std::vector<int> ranks_from(int first, int count, int stride) {
  std::vector<int> out;
  for (int i = 0; i < count; ++i) out.push_back(first + i * stride);
  return out;
}

}  // namespace

TensorParallel::TensorParallel(std::unique_ptr<ProcessGroup> world, std::string device, ZeroConfig zero, int tp_size)
    : ParallelStrategy(std::move(world), std::move(device), std::move(zero)), tp_size_(tp_size) {
  tp_group_ = group_->subgroup(ranks_from(dp_rank() * tp_size_, tp_size_, 1), "tp/" + std::to_string(dp_rank()));
  if (dp_size() > 1)
    dp_group_ = group_->subgroup(ranks_from(tp_rank(), dp_size(), tp_size_), "dp/" + std::to_string(tp_rank()));
  log_info("tensor parallel: ", tp_size_, " ranks per group x ", dp_size(), " data-parallel group(s); this rank: tp ",
           tp_rank(), ", dp ", dp_rank());
}

TensorParallel::~TensorParallel() = default;

std::vector<double> TensorParallel::sum(const std::vector<double>& values) {
  return dp_group_ ? dp_group_->sum(values) : values;
}

void TensorParallel::assign_ownership(model::CausalLM& model) {
  model::TensorParallelSplit split = model::apply_tensor_parallel(model, std::make_shared<GroupComm>(*tp_group_));
  sharded_ = std::move(split.sharded);
  partial_gradients_ = std::move(split.partial_gradients);
  ParallelStrategy::assign_ownership(model);
  for (const auto& p : trainable_) {  // once: clip_gradients adds the split ones' squares over the group
    const bool is_split = std::any_of(sharded_.begin(), sharded_.end(),
                                      [&](const model::ShardedParameter& s) { return s.parameter.is_same(p); });
    (is_split ? split_trainable_ : replicated_trainable_).push_back(p);
  }
  int64_t held = 0, whole = 0;
  for (const auto& s : sharded_) {
    held += static_cast<int64_t>(s.parameter.nbytes());
    whole += static_cast<int64_t>(s.parameter.nbytes()) * s.full_size / s.parameter.size(s.dim);
  }
  // What one rank would hold without the split (the held-memory log compares with it).
  full_parameter_bytes_ += whole - held;
  full_trainable_bytes_ += whole - held;
  log_info("tensor parallel: ", sharded_.size(), " parameters split, ", format_bytes(static_cast<double>(held)),
           " of their ", format_bytes(static_cast<double>(whole)), " on this rank; parameters held per rank ",
           format_bytes(static_cast<double>(full_parameter_bytes_)));
}

ParallelFootprint TensorParallel::footprint(model::CausalLM& model) const {
  ParallelFootprint f = ParallelStrategy::footprint(model);
  f.world_size = dp_size();
  return f;
}

void TensorParallel::begin_training(model::CausalLM& model) {
  (void)model;
  if (!dp_group_) return;
  dp_sync_.emplace(*dp_group_, trainable_, zero_.reduce_bucket_bytes);
  dp_sync_->broadcast_parameters();
}

void TensorParallel::before_backward(bool last_of_step) {
  if (dp_sync_ && last_of_step) dp_sync_->overlap_next_backward(GradientSync::Exchange::kAllReduce);
}

void TensorParallel::finish_gradients(bool first_step) {
  (void)first_step;
  // After the data-parallel exchange, which writes its sums back into the gradients when it completes.
  if (dp_sync_) dp_sync_->all_reduce_gradients();
  for (auto& p : partial_gradients_)
    if (p.requires_grad() && p.grad().defined()) tp_group_->all_reduce_sum(p.mutable_grad());
}

double TensorParallel::clip_gradients(double max_norm, bool& overflow) {
  overflow = group_->sum({overflow ? 1.0 : 0.0})[0] > 0;
  const double split_norm = gradient_norm(split_trainable_), replicated_norm = gradient_norm(replicated_trainable_);
  const double norm = std::sqrt(tp_group_->sum({split_norm * split_norm})[0] + replicated_norm * replicated_norm);
  const double coefficient = max_norm / (norm + 1e-6);  // as clip_grad_norm_
  if (max_norm > 0 && coefficient < 1.0) scale_gradients(trainable_, coefficient);
  return norm;
}

void TensorParallel::after_optimizer_step(bool stepped, bool first_step, const std::vector<at::Tensor>& optimizer_state) {
  (void)stepped;
  if (first_step) log_held_memory("tensor parallelism", model_, optimizer_state);
}

std::vector<ParameterSlice> TensorParallel::parameter_slices() const {
  std::vector<ParameterSlice> out = ParallelStrategy::parameter_slices();
  for (auto& slice : out) {
    for (const auto& s : sharded_) {
      if (s.name != slice.name) continue;
      slice.whole_shape[static_cast<size_t>(s.dim)] = s.full_size;
      slice.dim = s.dim;
      slice.index = tp_rank();
      slice.count = tp_size_;
    }
  }
  return out;
}

void TensorParallel::end_training() { log_time_in_collectives({group_.get(), tp_group_.get(), dp_group_.get()}); }

void TensorParallel::begin_save(bool trainable_only) {
  at::NoGradGuard no_grad;
  slices_while_saving_.clear();
  for (auto& s : sharded_) {
    if (trainable_only && !s.parameter.requires_grad()) continue;  // an adapter checkpoint: the frozen base stays split
    slices_while_saving_.emplace_back(&s, s.parameter.data());
    s.parameter.set_data(tp_group_->all_gather(s.parameter.data(), s.dim));
  }
}

void TensorParallel::end_save() {
  at::NoGradGuard no_grad;
  for (auto& [s, slice] : slices_while_saving_) s->parameter.set_data(slice);
  slices_while_saving_.clear();
}

}  // namespace swift::distributed
