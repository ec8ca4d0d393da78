// Tensor parallelism inside the model (Megatron-LM's layout): each rank of a tensor-parallel group holds a slice of
// every large weight and computes its share of the heads, the MLP width and the vocabulary.
//   column-parallel (output rows split): q_proj, k_proj, v_proj, gate_proj, up_proj, lm_head; its input goes
//     through copy_to_tensor_parallel (identity forward, gradient summed over the group in backward);
//   row-parallel (input columns split): o_proj, down_proj; their partial outputs are summed over the group by
//     reduce_from_tensor_parallel (the sum forward, identity backward), the bias added once after;
//   vocabulary-parallel: embed_tokens' rows; the logits stay split and the cross entropy is computed over the
//     split vocabulary (vocab_parallel_cross_entropy_sum), never gathering [N, V].
// Replicated: the norms (whose inputs are whole on every rank) and Qwen3's per-head q_norm/k_norm, whose gradient
// each rank computes from its own heads only: partial_gradient_parameters() are summed over the group.
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
};

// Identity forward, gradient all-reduced over the group in backward (Megatron's f).
at::Tensor copy_to_tensor_parallel(const at::Tensor& x, TensorParallelComm& comm);
// All-reduce (sum) forward, identity backward (Megatron's g).
at::Tensor reduce_from_tensor_parallel(const at::Tensor& x, TensorParallelComm& comm);

// What keeps `config` from being split over `size` ranks ("" when nothing): heads, MLP width and vocabulary must
// divide; KV heads divide, or (fewer KV heads than ranks: k/v_proj kept whole on every rank, Megatron's
// replication) divide the size.
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

// Keeps rows (dim 0) or columns (dim 1) [rank * n / size, (rank + 1) * n / size) of `p`, in place.
ShardedParameter keep_tensor_parallel_slice(const std::string& name, at::Tensor& p, int64_t dim,
                                            const TensorParallelComm& comm);

// Keeps this rank's slice of every split parameter (in place: the module tensors stay registered under their
// names; LoRA adapters slice theirs) and routes the forward through the group. Call once, after the tuners, on a
// model without quantized weights.
TensorParallelSplit apply_tensor_parallel(CausalLM& model, std::shared_ptr<TensorParallelComm> comm);

// Summed cross entropy of local logits [N, V/size] (this rank's vocabulary slice, starting at vocab_start)
// against targets [N] (whole-vocabulary ids; -100 ignored), equal to at::cross_entropy_loss(sum) of the gathered
// logits; differentiable. And the whole-vocabulary argmax [N].
at::Tensor vocab_parallel_cross_entropy_sum(const at::Tensor& logits, const at::Tensor& targets, int64_t vocab_start,
                                            TensorParallelComm& comm);
at::Tensor vocab_parallel_argmax(const at::Tensor& logits, int64_t vocab_start, TensorParallelComm& comm);

}  // namespace swift::model
