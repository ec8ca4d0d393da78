// DDP, ZeRO-1 and ZeRO-2 (see data_parallel.h).
#include "swift/distributed/data_parallel.h"

#include "swift/core/bytes.h"
#include "swift/core/logging.h"

namespace swift::distributed {

DataParallel::DataParallel(std::unique_ptr<ProcessGroup> group, std::string device, ZeroConfig zero)
    : ParallelStrategy(std::move(group), std::move(device), std::move(zero)) {}

void DataParallel::assign_ownership(model::CausalLM& model) {
  ParallelStrategy::assign_ownership(model);
  if (zero_.stage == 0) return;
  std::vector<int64_t> bytes;
  for (const auto& p : trainable_) bytes.push_back(p.numel() * static_cast<int64_t>(p.element_size()));
  owners_ = ParameterPartition(bytes, world_size()).owners();
  keep_owned(owners_);
  // The AdamW state each rank holds under the partition (the moments are two tensors shaped like the parameter).
  const std::vector<double> per_rank = bytes_per_owner(bytes, owners_);
  const double total = static_cast<double>(full_trainable_bytes_);
  std::string shares;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    if (r > 0) shares += ", ";
    shares += std::to_string(2.0 * per_rank[r] / (1 << 20)).substr(0, 6);
  }
  log_info("ZeRO-", zero_.stage, " (", zero_.source, "): AdamW state per rank ", shares, " MiB (without ZeRO ",
           std::to_string(2.0 * total / (1 << 20)).substr(0, 6), " MiB on every rank)",
           reduces_to_owners() ? "; gradients between micro-batches likewise" : "");
}

void DataParallel::begin_training(model::CausalLM& model) {
  (void)model;
  sync_.emplace(*group_, trainable_, zero_.reduce_bucket_bytes);
  if (zero_.stage > 0) sync_->set_owners(owners_);
  sync_->broadcast_parameters();
  log_info("data parallel: ", world_size(), " ranks, ", reduces_to_owners() ? "gradients reduced to their owners" : "gradients summed",
           " during the backward in ", sync_->buckets(), " bucket(s) per step",
           zero_.stage > 0 ? ", ZeRO-" + std::to_string(zero_.stage) : std::string());
}

// The exchange runs inside the backward that completes it: the last micro-batch's for DDP and ZeRO-1, every
// micro-batch's for ZeRO-2.
void DataParallel::before_backward(bool last_of_step) {
  if (reduces_to_owners()) sync_->overlap_next_backward(GradientSync::Exchange::kReduceToOwners);
  else if (last_of_step) sync_->overlap_next_backward(GradientSync::Exchange::kAllReduce);
}

void DataParallel::end_micro_batch(bool last_of_step) {
  (void)last_of_step;
  if (reduces_to_owners()) sync_->reduce_gradients_to_owners();
}

// ZeRO-2 reduces after every micro-batch, so every rank takes part even without samples of its own.
void DataParallel::skip_micro_batch(bool last_of_step) {
  (void)last_of_step;
  if (reduces_to_owners()) sync_->reduce_gradients_to_owners();
}

void DataParallel::finish_gradients(bool first_step) {
  if (!reduces_to_owners()) sync_->all_reduce_gradients();
  if (!first_step) return;
  log_info("gradient buckets started during the backward: ", sync_->overlapped_buckets(), " of ", sync_->buckets());
  // The most gradient bytes each rank held during its backward passes (measured by the exchange's hooks), next to
  // all the trainable parameters' gradients: ZeRO-2 keeps its own share and the buckets in flight.
  std::vector<double> per_rank(static_cast<size_t>(world_size()), 0.0);
  per_rank[static_cast<size_t>(rank())] = static_cast<double>(sync_->peak_gradient_bytes());
  per_rank = group_->sum(per_rank);
  log_info("gradients held during the backward, at most, per rank: ", bytes_per_rank(per_rank, 0, per_rank.size()),
           " (all gradients: ", format_bytes(static_cast<double>(full_trainable_bytes_)), ")");
}

double DataParallel::clip_gradients(double max_norm, bool& overflow) {
  return reduces_to_owners() ? clip_sharded_gradients(max_norm, overflow)
                             : ParallelStrategy::clip_gradients(max_norm, overflow);
}

void DataParallel::after_optimizer_step(bool stepped, bool first_step, const std::vector<at::Tensor>& optimizer_state) {
  if (zero_.stage == 0) return;
  if (stepped) sync_->broadcast_from_owners();  // the owners' new values to every rank
  if (first_step) log_held_memory("ZeRO-" + std::to_string(zero_.stage), model_, optimizer_state);
}

}  // namespace swift::distributed
