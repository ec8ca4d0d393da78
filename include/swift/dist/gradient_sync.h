// Data parallelism's two exchanges (what PyTorch's DDP does): at the start every rank takes rank 0's trainable
// weights, and after each step's local backward the gradients are summed over ranks, a few flat buckets at a
// time (one collective per bucket instead of one per tensor). Summed, not averaged: the training loop divides
// each rank's loss by the token count of the whole global batch, so the sum is exactly the gradient one
// process would compute on that batch. Gradient accumulation needs no "no_sync": the exchange runs once per
// optimizer step, after the last micro-batch.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace swift::dist {

class ProcessGroup;

class GradientSync {
 public:
  // params: the trainable parameters, in the same order on every rank.
  GradientSync(ProcessGroup& group, std::vector<at::Tensor> params, int64_t bucket_bytes = 25ll << 20);

  void broadcast_parameters(int root = 0);
  // Sums .grad over ranks in place. A parameter without a gradient on this rank (no sample this step) counts
  // as zeros and receives the sum.
  void all_reduce_gradients();
  size_t buckets() const { return buckets_.size(); }

  // ZeRO: owners[i] is the rank that owns params[i] (ParameterPartition). Needed by the two calls below.
  void set_owners(const std::vector<int>& owners);
  // ZeRO-2, after each micro-batch's backward: each gradient is summed into its owner's .grad (which keeps
  // accumulating over the step's micro-batches); the other ranks drop theirs.
  void reduce_gradients_to_owners();
  // ZeRO-1/2, after the owners' optimizer step: every rank takes each parameter's new value from its owner.
  void broadcast_from_owners();

 private:
  // Flat buckets over `indices`: one dtype and device each, at most bucket_bytes (or one larger parameter).
  std::vector<std::vector<size_t>> make_buckets(const std::vector<size_t>& indices) const;
  at::Tensor flat_grads(const std::vector<size_t>& bucket) const;
  void broadcast_bucket(const std::vector<size_t>& bucket, int root);

  ProcessGroup& group_;
  std::vector<at::Tensor> params_;
  int64_t bucket_bytes_;
  std::vector<std::vector<size_t>> buckets_;  // parameter indices; one dtype and device per bucket
  std::vector<std::pair<int, std::vector<size_t>>> owner_buckets_;  // (owner, bucket)
};

}  // namespace swift::dist
