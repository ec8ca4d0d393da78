// ZeRO-3's parameter sharding over the ranks: each parameter's values live on its owner only (the others hold an
// empty tensor); gather() broadcasts them from their owners into whole tensors for a use, release() frees them
// again, and gradients computed in backward are reduced into their owners at once. The model calls it through
// model::ParamSharding around each decoder layer; the training loop around the embeddings, norm and LM head, and
// around evaluation and checkpoint saves.
//
// Prefetch (DeepSpeed's): the first micro-batch records the sequence of gathers (embeddings, layers 0..n-1 in
// forward, n-1..0 in the backward's recomputation); later micro-batches replay it, and each gather starts the
// next one's broadcasts so they travel while this layer computes. Prefetching stops at the end of a micro-batch
// (the optimizer step changes the values) and wherever the calls leave the recorded sequence; every rank makes
// the same calls, so every rank starts the same collectives in the same order.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "swift/dist/process_group.h"
#include "swift/model/param_sharding.h"

namespace swift::dist {

class Zero3Sharding : public model::ParamSharding {
 public:
  // params: every parameter of the model (trainable or not) in the same order on every rank; owners[i] owns
  // params[i] (ParameterPartition over their bytes).
  Zero3Sharding(ProcessGroup& group, std::vector<at::Tensor> params, std::vector<int> owners);

  void gather(const std::vector<at::Tensor>& params) override;
  void release(const std::vector<at::Tensor>& params) override;
  std::vector<at::Tensor> reduce_gradients(const std::vector<at::Tensor>& params,
                                           const std::vector<at::Tensor>& grads) override;
  void gather_all() { gather(params_); }
  // Bracket one micro-batch's forward and backward (the span prefetching may cover).
  void begin_micro_batch();
  void end_micro_batch();
  // Gathers so far, and those whose broadcasts a prefetch had started, for the log.
  int64_t gathers() const { return gathers_; }
  int64_t prefetched_gathers() const { return prefetched_gathers_; }
  void release_all() { release(params_); }

  // Bytes of parameter values this rank holds now (whole parameters it owns plus whatever is gathered).
  int64_t held_parameter_bytes() const;

 private:
  struct Group {  // the parameters of one call with one owner and one dtype: one collective
    int owner;
    std::vector<size_t> members;  // positions in the call's list
  };
  struct InFlight {  // one gather's broadcasts, started
    std::vector<at::Tensor> params;
    std::vector<const void*> signature;  // which gather this is
    std::vector<Group> groups;
    std::vector<at::Tensor> flat;  // per group
    std::vector<PendingCollective> pending;
  };
  std::vector<Group> groups_of(const std::vector<at::Tensor>& params) const;
  int owner_of(const at::Tensor& p) const;
  int64_t numel_of(const at::Tensor& p) const;
  InFlight start_gather(const std::vector<at::Tensor>& params);
  void finish_gather(InFlight& in_flight);
  void drop_prefetch();
  static std::vector<const void*> signature(const std::vector<at::Tensor>& params);

  ProcessGroup& group_;
  std::vector<at::Tensor> params_;
  std::vector<int> owners_;
  std::vector<std::vector<int64_t>> shapes_;
  std::unordered_map<const void*, size_t> index_;  // TensorImpl -> position in params_

  // Prefetch.
  enum class Trace { kNone, kRecording, kReplaying };
  Trace trace_mode_ = Trace::kNone;
  std::vector<std::vector<at::Tensor>> trace_;  // the gathers of one micro-batch, in order
  std::vector<std::vector<const void*>> trace_signatures_;  // and their signatures
  size_t cursor_ = 0;                           // replaying: the position of the next expected gather
  std::optional<InFlight> prefetch_;            // the next expected gather, started
  int64_t gathers_ = 0, prefetched_gathers_ = 0;
};

}  // namespace swift::dist
