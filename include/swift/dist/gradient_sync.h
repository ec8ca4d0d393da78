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

 private:
  ProcessGroup& group_;
  std::vector<at::Tensor> params_;
  std::vector<std::vector<size_t>> buckets_;  // parameter indices; one dtype and device per bucket
};

}  // namespace swift::dist
