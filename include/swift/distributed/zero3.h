// ZeRO-3's parameter sharding over the ranks: each parameter's values live on its owner only (the others hold an
// empty tensor); gather() broadcasts them from their owners into whole tensors for a use, release() frees them
// again, and gradients computed in backward are reduced into their owners at once. The model calls it through
// model::ParamSharding around each decoder layer; the training loop around the embeddings, norm and LM head, and
// around evaluation and checkpoint saves.
//
// An owner's values at rest are its "home": on the device, or with offload_param (DeepSpeed's parameter
// offload) in CPU RAM, copied to the device for each gather; the optimizer updates the home between uses.
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

#include "swift/distributed/process_group.h"
#include "swift/model/param_sharding.h"

namespace swift::distributed {

struct Zero3Options {
  // Where the layers compute: gathered values live there (and owners' values at rest, unless offloaded).
  c10::Device device = c10::Device(c10::kCPU);
  // offload_param: owners keep their values in CPU RAM between uses (pinned when the device is a GPU). On a CPU
  // run that is the same memory, but the same path: during a use the owner works on the copy it sent.
  bool offload_param = false;
};

class Zero3Sharding : public model::ParamSharding {
 public:
  // params: every parameter of the model (trainable or not) in the same order on every rank, each with its full
  // shape: its values on its owner, anything (the values, or a model::shape_only tensor) elsewhere; owners[i] owns
  // params[i] (ParameterPartition over their bytes). Call release_all() to bring them to rest.
  Zero3Sharding(ProcessGroup& group, std::vector<at::Tensor> params, std::vector<int> owners,
                Zero3Options options = {});

  // A no-op when every one of `params` is whole already (gathered and not released since).
  void gather(const std::vector<at::Tensor>& params) override;
  void release(const std::vector<at::Tensor>& params) override;
  void reduce_gradients(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads) override;
  // The parameters the model gathers around each of their own uses (the embedding, the LM head).
  void gather_around_use(const std::vector<at::Tensor>& params);
  bool gathers_around_use(const at::Tensor& p) const override;
  // Bracket one micro-batch's forward and backward (the span prefetching may cover); the end releases whatever
  // is still whole.
  void begin_micro_batch();
  void end_micro_batch();
  // Gathers so far, and those whose broadcasts a prefetch had started, for the log.
  int64_t gathers() const { return gathers_; }
  int64_t prefetched_gathers() const { return prefetched_gathers_; }
  // The most bytes of parameter values this rank held gathered at once inside a micro-batch (what it uses and
  // what is being prefetched; not its own values at rest on the device), measured.
  int64_t peak_gathered_bytes() const { return gathered_peak_; }
  void release_all() { release(params_); }

  // For a checkpoint save: the values of `chunks` whole on `root`, in CPU RAM, one chunk (a decoder layer's
  // parameters, say) gathered at a time, so no rank holds more than its share and a chunk on its device; the
  // other ranks hold nothing more than at rest afterwards. release() them on `root` after the save. A collective.
  void gather_to_host(const std::vector<std::vector<at::Tensor>>& chunks, int root);

  // Bytes of parameter values this rank holds now (its homes plus whatever is gathered): on the device, and in
  // CPU RAM when that is another place (offload_param on a GPU).
  struct Held {
    int64_t device = 0, host = 0;
  };
  Held held_parameter_bytes() const;
  bool offloads_parameters() const { return options_.offload_param; }

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
    int64_t bytes = 0;  // of the flat buffers
  };
  std::vector<Group> groups_of(const std::vector<at::Tensor>& params) const;
  size_t index_of(const at::Tensor& p) const;
  int owner_of(const at::Tensor& p) const { return owners_[index_of(p)]; }
  int64_t numel_of(const at::Tensor& p) const;
  InFlight start_gather(const std::vector<at::Tensor>& params);
  void finish_gather(InFlight& in_flight);
  void drop_prefetch();
  static std::vector<const void*> signature(const std::vector<at::Tensor>& params);

  ProcessGroup& group_;
  Zero3Options options_;
  std::vector<at::Tensor> params_;
  std::vector<int> owners_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<at::Tensor> home_;  // per parameter: its values at rest where this rank owns it, else undefined
  std::vector<bool> around_use_;  // per parameter: gathered by the model around each use
  std::vector<bool> whole_;       // per parameter: gathered and not yet released (the same on every rank)
  int64_t gathered_now_ = 0, gathered_peak_ = 0;
  bool in_micro_batch_ = false;
  void count_gathered(int64_t bytes);
  int64_t bytes_of(size_t index) const;
  // Whether a whole parameter is a view of a broadcast buffer here (not its owner's home on the device).
  bool holds_copy(size_t index) const;
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

}  // namespace swift::distributed
