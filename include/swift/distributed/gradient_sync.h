// Data parallelism's exchanges (what PyTorch's DDP and DeepSpeed's ZeRO-2 do): at the start every rank takes
// rank 0's trainable weights, and in each step's backward the gradients are summed over ranks a few flat buckets
// at a time (one collective per bucket instead of one per tensor). Summed, not averaged: the training loop
// divides each rank's loss by the token count of the whole global batch, so the sum is exactly the gradient one
// process would compute on that batch.
//
// The exchange overlaps the backward: a hook on each parameter's gradient accumulator marks its gradient final,
// and a bucket whose parameters are all final starts its collective at once while autograd goes on with earlier
// layers. Buckets follow the parameters in reverse (the order backward finishes them) and start strictly in
// bucket order, so every rank starts the same collectives in the same order whatever its data; at most two
// buckets are in flight, an older one is finished (its sum written back) before a third starts, so the copies
// cost two buckets of memory, not a second set of gradients.
//
// DDP / ZeRO-1: all-reduce, once per optimizer step (in the last micro-batch's backward; gradient accumulation
// needs no "no_sync"). ZeRO-2: after every micro-batch each gradient is reduced into its owner's .grad (which
// keeps accumulating over the step) and dropped by the other ranks as soon as its bucket has been copied, so a
// rank holds its own parameters' gradients plus about two buckets.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "swift/distributed/process_group.h"

namespace swift::distributed {

class GradientSync {
 public:
  enum class Exchange { kAllReduce, kReduceToOwners };

  // params: the trainable parameters, in the same order on every rank.
  GradientSync(ProcessGroup& group, std::vector<at::Tensor> params, int64_t bucket_bytes = 25ll << 20);
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;
  ~GradientSync();

  void broadcast_parameters(int root = 0);
  // ZeRO: owners[i] is the rank that owns params[i] (ParameterPartition). Needed by kReduceToOwners and
  // broadcast_from_owners.
  void set_owners(const std::vector<int>& owners);

  // Call before a backward whose gradients `exchange` will handle: buckets start as backward completes them.
  void overlap_next_backward(Exchange exchange);
  // Sums .grad over ranks in place (finishing what the backward started, or all of it when nothing was armed).
  // A parameter without a gradient on this rank (no sample this step) counts as zeros and receives the sum; one
  // without a gradient on every rank stays without one (AdamW skips it, as in one process).
  void all_reduce_gradients();
  // ZeRO-2, after each micro-batch's backward: each gradient summed into its owner's .grad; the others drop theirs.
  void reduce_gradients_to_owners();
  // ZeRO-1/2, after the owners' optimizer step: every rank takes each parameter's new value from its owner.
  void broadcast_from_owners();

  size_t buckets() const { return buckets_.size(); }
  // Buckets whose collective started inside the last armed backward, for the log.
  size_t overlapped_buckets() const { return overlapped_; }
  // The most bytes of gradients (in .grad and in buckets being exchanged) this rank held at any hook of the first
  // few armed backward passes: measured, to show what ZeRO-2 keeps.
  int64_t peak_gradient_bytes() const { return peak_bytes_; }

 private:
  struct InFlight {  // one bucket's collectives: per owner (kReduceToOwners) or one (kAllReduce)
    std::vector<int> roots;  // -1: all-reduce
    std::vector<const std::vector<size_t>*> members;  // into buckets_ / bucket_owners_ (fixed after set_owners)
    std::vector<at::Tensor> flat;
    std::vector<PendingCollective> pending;
  };

  // Flat buckets over `indices`: one dtype and device each, at most bucket_bytes (or one larger parameter).
  std::vector<std::vector<size_t>> make_buckets(const std::vector<size_t>& indices) const;
  at::Tensor flat_grads(const std::vector<size_t>& params) const;
  void broadcast_bucket(const std::vector<size_t>& bucket, int root);
  void install_hooks();
  void arm(Exchange exchange);
  void on_gradient_final(size_t param);  // the accumulator hook
  void start_bucket(size_t b);
  void finish_oldest();
  void finish(Exchange exchange);
  void measure_held_bytes();

  ProcessGroup& group_;
  std::vector<at::Tensor> params_;
  int64_t bucket_bytes_;
  std::vector<std::vector<size_t>> buckets_;  // parameter indices, reverse order; one dtype and device each
  std::vector<size_t> bucket_of_;             // parameter -> its bucket
  // ZeRO: each bucket's parameters grouped by owner, in rank order (one reduce each); empty without owners.
  std::vector<std::vector<std::pair<int, std::vector<size_t>>>> bucket_owners_;
  std::vector<std::pair<int, std::vector<size_t>>> owner_buckets_;  // (owner, bucket) for broadcast_from_owners

  struct Hooks;  // the accumulators the hooks hang on (their type differs between LibTorch versions)
  std::unique_ptr<Hooks> hooks_;
  bool armed_ = false;
  Exchange exchange_ = Exchange::kAllReduce;
  std::vector<bool> final_;      // per parameter, in the armed backward
  std::vector<size_t> waiting_;  // per bucket: parameters not final yet
  size_t next_bucket_ = 0;       // buckets [0, next_bucket_) have started
  size_t overlapped_ = 0;
  std::deque<InFlight> in_flight_;
  int measured_backwards_left_ = 4;
  int64_t peak_bytes_ = 0;
};

}  // namespace swift::distributed
