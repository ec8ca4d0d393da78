// Context parallelism inside the model: the ranks of a context-parallel group each hold a share of every sequence
// (Megatron's load-balanced causal split: a row cut into 2n chunks, rank r keeping chunks r and 2n - 1 - r, so
// every rank has as many keys before its queries as the others). Everything but attention is per token and runs on
// the share alone; attention needs every key, and gets them one of two ways:
//   ring (Megatron's --context_parallel_size, ring attention): the key/value blocks travel around the ring, each
//     rank attends its queries to one block per step and merges the partial results by their log-sum-exp; the
//     backward sends the blocks around again, with their gradients travelling beside them. Memory: one block of
//     scores at a time, the keys of this rank only kept for the backward;
//   Ulysses (ms-swift's --sequence_parallel_size): an all-to-all turns "my tokens, every head" into "every token, my
//     heads", attention runs whole over the sequence for 1/n of the heads, and a second all-to-all turns it back.
//     The heads (after tensor parallelism) must divide by the group; key/value heads that do not are repeated.
// The group itself is the distributed area's (ContextParallelComm is how the model sees it).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace swift::model {

enum class ContextParallelAttention { kRing, kUlysses };

// The context-parallel group's communication, as the attention uses it.
class ContextParallelComm {
 public:
  virtual ~ContextParallelComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual at::Tensor all_gather(const at::Tensor& t, int64_t dim) = 0;  // every rank's t, concatenated along dim
  // `t` cut into size() parts along scatter_dim, part r sent to rank r; the parts received, concatenated along
  // gather_dim in rank order.
  virtual at::Tensor all_to_all(const at::Tensor& t, int64_t scatter_dim, int64_t gather_dim) = 0;
  // Sends `t` to the next rank around the ring and receives the previous rank's tensor of the same shape and dtype,
  // on `channel` (two shifts may be in flight at once on different channels). Started now; the returned function
  // waits and gives the received tensor.
  virtual std::function<at::Tensor()> start_ring_shift(const at::Tensor& t, int channel) = 0;
};

struct ContextParallel {
  std::shared_ptr<ContextParallelComm> comm;
  ContextParallelAttention attention = ContextParallelAttention::kRing;
};

// What every attention layer of one forward pass needs to see the whole sequence (CausalLM::forward_hidden makes it).
struct ContextParallelInputs {
  ContextParallelComm* comm = nullptr;
  ContextParallelAttention attention = ContextParallelAttention::kRing;
  at::Tensor segments;      // [B, T/n] int64: this rank's tokens' segment ids (packing); undefined: one sequence per row
  at::Tensor all_segments;  // [B, T] every rank's, in rank order (gathered once per forward pass)
};

// The index in its whole row of each of this rank's `local_length` tokens under the load-balanced split: [local_length]
// int64, chunk `rank` then chunk 2 size - 1 - rank.
at::Tensor context_parallel_token_index(int64_t local_length, int rank, int size, c10::Device device);

// This rank's share of `t` along `dim` (of a length that 2 size divides): its two chunks, concatenated.
at::Tensor context_parallel_share(const at::Tensor& t, int64_t dim, int rank, int size);

// The sum of `t` over the group's ranks, added in rank order (so the same on every rank). The backward passes each
// rank's gradient to its own `t` unchanged: for a loss that every rank computes alike from the sum, whose gradients
// the ranks then sum (rlhf's per-row log-probabilities, summed over the ranks' shares of each row).
at::Tensor sum_over_context_parallel(const at::Tensor& t, ContextParallelComm& comm);

// Attention of this rank's queries over every rank's keys, as one rank would compute it over the whole rows
// (causal by token index, within a segment, within `window` tokens when above 0): q [B, H, T/n, D], k and v
// [B, Hkv, T/n, D] after RoPE, H a multiple of Hkv; returns [B, H, T/n, D] in q's dtype. Differentiable (the
// backward communicates over the same group).
at::Tensor context_parallel_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const ContextParallelInputs& in, int64_t window, double scale);

}  // namespace swift::model
