// Mixture-of-experts layers (Qwen2-MoE, Qwen3-MoE), laid out as transformers v5 holds them in memory:
//   model.layers.N.mlp.gate.weight             [E, C]      the router (a plain Linear, never a LoRA target)
//   model.layers.N.mlp.experts.gate_up_proj    [E, 2I, C]  every expert's gate and up projections, stacked
//   model.layers.N.mlp.experts.down_proj       [E, C, I]
//   model.layers.N.mlp.shared_expert.{gate,up,down}_proj.weight, model.layers.N.mlp.shared_expert_gate.weight [1, C]
// (Hugging Face folders store one tensor per expert and projection: expert_weights.h converts.) Each token goes to
// the top-k experts of a softmax router; the experts run as two grouped matrix products over the tokens sorted by
// expert (at::_grouped_mm), not a loop over tokens.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "swift/model/decoder.h"
#include "swift/model/expert_parallel.h"

namespace swift::model {

// Whether a module is a sparse layer's router ("model.layers.N.mlp.gate"): a Linear here, but a parameter of its own
// module in transformers, so PEFT's target_modules and bitsandbytes never take it.
bool is_router(const std::string& module_name);

// at::_grouped_mm where this build and device have it, else one product per expert on its run of tokens: x [M, K]
// with rows grouped by expert (offsets [E] int32: each group's end), weights [E, K, N] -> [M, N].
at::Tensor grouped_matmul(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& offsets);

// Megatron's --moe_expert_capacity_factor: each sparse layer's experts take at most ceil(factor x k x N / E) of the
// N x k (token, choice) rows the layer's router sees on this rank; the rest are dropped (that choice adds nothing
// to its token, the other choices keep their weights, as Megatron-Core's apply_router_token_dropping). factor 0:
// dropless, as without the flag.
struct ExpertCapacity {
  double factor = 0;
  bool by_position = false;  // --moe_token_drop_policy position: an expert keeps its earliest tokens, else its most probable
  bool drops() const { return factor > 0; }
};

// Which (token, choice) rows an expert keeps under `capacity`: weights [N, k] (the router's, after any
// renormalisation), experts [N, k] ids of num_experts -> [N, k] bool.
at::Tensor expert_capacity_keep(const at::Tensor& weights, const at::Tensor& experts, int64_t num_experts,
                                const ExpertCapacity& capacity);

// What a tuner puts on a sparse layer's stacked expert weights (LoRA on PEFT's target_parameters,
// tuners/lora_experts.h): the weight the experts compute with.
class ExpertWeightsAdapter {
 public:
  virtual ~ExpertWeightsAdapter() = default;
  // `weight` is the experts' "gate_up_proj" or "down_proj" (`name`); returns it with the adapter's change added.
  virtual at::Tensor adapted(const std::string& name, const at::Tensor& weight) = 0;
};

// The experts of one sparse layer: gate_up_proj [E, 2I, C], down_proj [E, C, I] (silu(gate) * up, then down).
// Under expert parallelism (expert_parallel.h) this rank holds E / ep of them and the tokens travel to their experts.
class MoeExpertsImpl : public torch::nn::Module {
 public:
  MoeExpertsImpl(int64_t num_experts, int64_t hidden, int64_t intermediate, const at::TensorOptions& options);
  // x [N, C]; experts [N, k] (ids), weights [N, k] (the router's, in x's dtype) -> [N, C]: each token's experts'
  // outputs weighted and summed. keep [N, k] bool (expert_capacity_keep; undefined: every row) leaves the dropped
  // rows out of the experts' products.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& experts, const at::Tensor& weights, const at::Tensor& keep = {});
  at::Tensor gate_up_proj, down_proj;
  std::shared_ptr<ExpertParallel> expert_parallel;  // null: every expert here
  std::shared_ptr<ExpertWeightsAdapter> adapter;    // null: the weights as they are

 private:
  // The experts held here over rows grouped by expert (offsets [experts held] int32: each group's end).
  at::Tensor run_held_experts(const at::Tensor& rows, const at::Tensor& offsets);
};
TORCH_MODULE(MoeExperts);

class SparseMoeBlockImpl : public torch::nn::Module {
 public:
  SparseMoeBlockImpl(const ModelConfig& config, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x);  // x [B, T, C]
  // Where each forward appends its router logits [B x T, E] (record_router_logits); null: nowhere.
  std::vector<at::Tensor>* router_log = nullptr;
  ExpertCapacity capacity;  // set_expert_capacity
  // Tensor parallelism (apply_tensor_parallel, with sequence parallelism): x is this rank's part of the sequence,
  // routed through whole experts here (Megatron's --expert_tensor_parallel_size 1); the logged router logits are
  // gathered to whole rows, so every rank sees the batch's.
  TensorParallelComm* tp_comm = nullptr;
  Linear gate{nullptr};
  MoeExperts experts{nullptr};
  MLP shared_expert{nullptr};
  Linear shared_expert_gate{nullptr};

 private:
  int64_t top_k_;
  bool norm_topk_prob_;
};
TORCH_MODULE(SparseMoeBlock);

// Every sparse layer's routing as the router computes it: softmax in fp32, the top k, renormalised when
// `norm_topk_prob`. logits [N, E] -> (weights [N, k] float32, experts [N, k]).
std::pair<at::Tensor, at::Tensor> route_top_k(const at::Tensor& logits, int64_t top_k, bool norm_topk_prob);

// Gives every sparse layer of `model` the capacity (the training run's --moe_expert_capacity_factor).
void set_expert_capacity(CausalLM& model, const ExpertCapacity& capacity);

// The share of one forward's (token, choice) rows that `capacity` dropped, over every sparse layer's router logits
// [N, E] (the pads, `mask` [B, T] 0, left out): [dropped, rows] float64 on the logits' device.
at::Tensor dropped_choices(const std::vector<at::Tensor>& router_logits, int64_t top_k, bool norm_topk_prob,
                           const ExpertCapacity& capacity, const at::Tensor& mask);

// Makes every sparse layer of `model` append its router logits to `log` on each forward (transformers'
// output_router_logits), in layer order; null stops it. The caller clears the log between forwards.
void record_router_logits(CausalLM& model, std::vector<at::Tensor>* log);

// Context parallelism: a count over tokens summed over the ranks holding shares of the same rows (the figures below
// then use every rank's token counts, each rank's probabilities over its own tokens: a rank's loss is its part of the
// whole rows', the parts adding up over the group, as Megatron-Core reduces tokens_per_expert over its TP x CP
// group). Empty: the tokens here are the rows' (one rank, or the rows whole on every rank).
using SumOverRowShares = std::function<at::Tensor(const at::Tensor&)>;

// transformers' load_balancing_loss_func (Switch Transformer's auxiliary loss) over one forward's router logits:
// E x sum_e (share of the top-k choices that went to expert e) x (mean router probability of e), over every layer's
// tokens together; `mask` [B, T] (1 real, 0 pad; undefined: every token) leaves the pads out. float32 scalar.
at::Tensor load_balancing_loss(const std::vector<at::Tensor>& router_logits, int64_t top_k, const at::Tensor& mask,
                               const SumOverRowShares& over_shares = {});

// Megatron-Core's load-balancing loss (--moe_aux_loss_coeff; switch_load_balancing_loss_func), layer by layer: for
// each sparse layer (E / k) x sum_e (tokens that chose expert e among their top k / tokens: summing to k over the
// experts) x (mean router probability of e), over the tokens of this forward (pads, `mask` 0, left out). Returns [the sum over the
// layers, the number of layers] (float32; the first differentiable; [0, 0] on the host without router logits: a
// pipeline stage of dense layers).
at::Tensor megatron_load_balancing_loss(const std::vector<at::Tensor>& router_logits, int64_t top_k, const at::Tensor& mask,
                                        const SumOverRowShares& over_shares = {});

// How unevenly one forward's tokens spread over the experts: for each sparse layer's router logits [N, E], the
// busiest expert's share of the top-k choices times E (1: every expert equally busy; E: every token to one expert),
// the pads (`mask` [B, T], 0) left out. Returns [the sum over the layers that saw a token, their count] (float64, on
// the logits' device: computed without waiting for the device, as the other metrics).
at::Tensor expert_load_max(const std::vector<at::Tensor>& router_logits, int64_t top_k, const at::Tensor& mask,
                           const SumOverRowShares& over_shares = {});

}  // namespace swift::model
