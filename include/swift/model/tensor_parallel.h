// Tensor parallelism inside the model (Megatron-LM's layout): each rank of a tensor-parallel group holds a slice of
// every large weight and computes its share of the heads, the MLP width and the vocabulary.
//   column-parallel (output rows split): q_proj, k_proj, v_proj (InternLM2's fused wqkv: whole key/value groups per
//     rank), gate_proj, up_proj, lm_head; its input goes
//     through copy_to_tensor_parallel (identity forward, gradient summed over the group in backward);
//   row-parallel (input columns split): o_proj, down_proj; their partial outputs are summed over the group by
//     reduce_from_tensor_parallel (the sum forward, identity backward), the bias added once after;
//   vocabulary-parallel: embed_tokens' rows; the logits stay split and the cross entropy is computed over the
//     split vocabulary (vocab_parallel_cross_entropy_sum), never gathering [N, V].
// Replicated: the norms (whose inputs are whole on every rank) and Qwen3's per-head q_norm/k_norm, whose gradient
// each rank computes from its own heads only: partial_gradient_parameters() are summed over the group.
// Sequence parallelism (Megatron's --sequence_parallel): between the split layers the activations [B, T, C] are cut
// along T over the group instead of whole on every rank, so the norms and residual adds hold 1/size of them:
// a column-parallel input is gathered (gather_from_sequence_parallel: all-gather forward, reduce-scatter backward),
// a row-parallel output is reduce-scattered (scatter_to_sequence_parallel: reduce-scatter forward, all-gather
// backward) instead of all-reduced, and so is the embedding's. The last norm's output is gathered back to whole rows
// for the head the same way: the gather's backward sums the vocabulary slices' partial gradients, so the head adds
// no exchange of its own (a sequence classifier's whole score head: gather_sequence_for_replicated_use instead).
// Every norm's gradient is then partial (its rank's tokens only).
// The group itself is the distributed area's (TensorParallelComm is how the model sees it).
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "swift/model/decoder.h"

namespace swift::model {

// The tensor-parallel group's collectives, in place on this rank's tensor.
class TensorParallelComm {
 public:
  virtual ~TensorParallelComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void all_reduce_sum(at::Tensor& t) = 0;
  virtual void all_reduce_max(at::Tensor& t) = 0;
  virtual at::Tensor all_gather(const at::Tensor& t, int64_t dim) = 0;  // every rank's t, concatenated along dim
  // The sum over the group of every rank's t, cut into size() equal parts along dim: this rank's part.
  virtual at::Tensor reduce_scatter_sum(const at::Tensor& t, int64_t dim) = 0;
};

// Identity forward, gradient all-reduced over the group in backward (Megatron's f).
at::Tensor copy_to_tensor_parallel(const at::Tensor& x, TensorParallelComm& comm);
// All-reduce (sum) forward, identity backward (Megatron's g).
at::Tensor reduce_from_tensor_parallel(const at::Tensor& x, TensorParallelComm& comm);
// Sequence parallelism, on [B, T, C] split along T (dim 1) in rank order:
// all-gather forward, reduce-scatter backward (the input of column-parallel layers, the head's included);
at::Tensor gather_from_sequence_parallel(const at::Tensor& x, TensorParallelComm& comm);
// reduce-scatter forward, all-gather backward (the partial outputs of a row-parallel layer or the embedding);
at::Tensor scatter_to_sequence_parallel(const at::Tensor& x, TensorParallelComm& comm);
// all-gather forward, this rank's part of the gradient backward (not summed: every rank then computes the same
// thing from the whole rows, as the router logits' load-balancing loss; Megatron's tensor_parallel_output_grad=False).
at::Tensor gather_sequence_for_replicated_use(const at::Tensor& x, TensorParallelComm& comm);

// What keeps `config` from being split over `size` ranks ("" when nothing): heads, MLP width (of the dense layers)
// and vocabulary must divide; KV heads divide, or (fewer KV heads than ranks: k/v_proj kept whole on every rank,
// Megatron's replication) divide the size. Mixture-of-experts layers are not split: under sequence parallelism each
// rank routes its own tokens through whole experts (apply_tensor_parallel).
std::string tensor_parallel_problem(const ModelConfig& config, int size);

// One sharded parameter: its name, the dimension it is split along and its whole size there.
struct ShardedParameter {
  std::string name;
  at::Tensor parameter;
  int64_t dim = 0;
  int64_t full_size = 0;
};

// What splitting a model over the group did: the sliced parameters, and the replicated ones whose gradient each rank
// computes only in part (q_norm, k_norm; LoRA's A on column-split layers, B on row-split ones), which are summed
// over the group after the backward.
struct TensorParallelSplit {
  std::vector<ShardedParameter> sharded;
  std::vector<at::Tensor> partial_gradients;
};

// Keeps part `index` of `count` equal parts of `p` along `dim`, in place (a shape-only parameter takes the part's
// shape: another pipeline stage's, or one read later).
ShardedParameter keep_parameter_slice(const std::string& name, at::Tensor& p, int64_t dim, int index, int count);

// Keeps rows (dim 0) or columns (dim 1) [rank * n / size, (rank + 1) * n / size) of `p`, in place.
ShardedParameter keep_tensor_parallel_slice(const std::string& name, at::Tensor& p, int64_t dim,
                                            const TensorParallelComm& comm);

// Keeps this rank's slice of every split parameter (in place: the module tensors stay registered under their
// names; LoRA adapters slice theirs) and routes the forward through the group; with `sequence_parallel` the
// activations between the split layers are cut along the sequence too (forward_hidden's rows must then divide by
// the group's size). Call once, after the tuners, on a model without quantized weights.
TensorParallelSplit apply_tensor_parallel(CausalLM& model, std::shared_ptr<TensorParallelComm> comm,
                                          bool sequence_parallel = false);

// Summed cross entropy of local logits [N, V/size] (this rank's vocabulary slice, starting at vocab_start)
// against targets [N] (whole-vocabulary ids; -100 ignored), equal to at::cross_entropy_loss(sum) of the gathered
// logits; differentiable. And the whole-vocabulary argmax [N].
at::Tensor vocab_parallel_cross_entropy_sum(const at::Tensor& logits, const at::Tensor& targets, int64_t vocab_start,
                                            TensorParallelComm& comm);
// The same per token ([N], 0 where the target is -100): -log p(target) over the whole vocabulary.
at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits, const at::Tensor& targets, int64_t vocab_start,
                                        TensorParallelComm& comm);
at::Tensor vocab_parallel_argmax(const at::Tensor& logits, int64_t vocab_start, TensorParallelComm& comm);

}  // namespace swift::model
