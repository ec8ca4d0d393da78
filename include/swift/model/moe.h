// Mixture-of-experts layers (Qwen2-MoE, Qwen3-MoE, Mixtral, DeepSeek-V2/V3), laid out as transformers v5 holds them
// in memory:
//   model.layers.N.mlp.gate.weight             [E, C]      the router (a plain Linear, never a LoRA target)
//   model.layers.N.mlp.gate.e_score_correction_bias [E]    DeepSeek-V3 only
//   model.layers.N.mlp.experts.gate_up_proj    [E, 2I, C]  every expert's gate and up projections, stacked
//   model.layers.N.mlp.experts.down_proj       [E, C, I]
//   model.layers.N.mlp.shared_expert.{gate,up,down}_proj.weight, model.layers.N.mlp.shared_expert_gate.weight [1, C]
//   (DeepSeek: model.layers.N.mlp.shared_experts.{gate,up,down}_proj.weight, no gate)
// (Hugging Face folders store one tensor per expert and projection: expert_weights.h converts.) Each token goes to
// the top-k experts of its router (RoutingRule); the experts run as two grouped matrix products over the tokens sorted by
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
  // x [N, C]; experts [N, k] (ids), weights [N, k] (the router's: in x's dtype, or fp32 to weigh in fp32) -> [N, C]:
  // each token's experts' outputs weighted and summed (in x's dtype). keep [N, k] bool (expert_capacity_keep; undefined: every row) leaves the dropped
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

// How a sparse layer chooses its experts from its router logits and weighs them (MoeConfig's routing fields).
struct RoutingRule {
  int64_t top_k = 1;
  bool norm_topk_prob = false;
  std::string scoring = "softmax";  // softmax | sigmoid
  std::string group_scoring;        // "" | max | top2_sum
  int64_t num_groups = 1, topk_groups = 1;
  double scaling = 1.0;  // routed_scaling_factor
  bool in_fp32 = false;  // MoeConfig::router_in_fp32
  static RoutingRule of(const MoeConfig& moe);
  // The softmax top-k (optionally renormalised) that Megatron's loss and drop policies know.
  bool plain() const { return scoring == "softmax" && group_scoring.empty() && scaling == 1.0; }
};

// A sparse layer's routing as transformers computes it: the scores in fp32 (softmax, or sigmoid), the experts chosen
// by the top k of the scores plus `correction_bias` [E] (DeepSeek-V3; undefined: none) within the best groups, their
// scores the weights, renormalised where norm_topk_prob and times the scaling. logits [N, E] -> (weights [N, k]
// float32, experts [N, k]).
std::pair<at::Tensor, at::Tensor> route_experts(const at::Tensor& logits, const RoutingRule& rule,
                                                const at::Tensor& correction_bias = {});

class SparseMoeBlockImpl : public torch::nn::Module {
 public:
  SparseMoeBlockImpl(const ModelConfig& config, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x);  // x [B, T, C]
  // Where each forward appends its router logits [B x T, E] (record_router_logits); null: nowhere.
  std::vector<at::Tensor>* router_log = nullptr;
  // Where each forward appends the experts it chose [B x T, k] (record_router_logits): what the experts' load counts.
  std::vector<at::Tensor>* choice_log = nullptr;
  ExpertCapacity capacity;  // set_expert_capacity
  // Tensor parallelism (apply_tensor_parallel, with sequence parallelism): x is this rank's part of the sequence,
  // routed through whole experts here (Megatron's --expert_tensor_parallel_size 1); the logged router logits are
  // gathered to whole rows, so every rank sees the batch's.
  TensorParallelComm* tp_comm = nullptr;
  Linear gate{nullptr};
  // DeepSeek-V3's gate.e_score_correction_bias [E]: registered on the gate (a parameter that is never trained, for
  // transformers' buffer of that name), undefined elsewhere.
  at::Tensor score_correction_bias;
  MoeExperts experts{nullptr};
  MLP shared_expert{nullptr};  // "shared_expert" (Qwen2-MoE) or "shared_experts" (DeepSeek)
  Linear shared_expert_gate{nullptr};  // Qwen2-MoE's; null when the shared expert is added ungated

 private:
  at::Tensor router_logits(const at::Tensor& x);
  RoutingRule rule_;
};
TORCH_MODULE(SparseMoeBlock);

// The softmax routers' routing (Qwen-MoE, Mixtral): route_experts with softmax scores, the top k, renormalised when
// `norm_topk_prob`.
std::pair<at::Tensor, at::Tensor> route_top_k(const at::Tensor& logits, int64_t top_k, bool norm_topk_prob);

// Gives every sparse layer of `model` the capacity (the training run's --moe_expert_capacity_factor).
void set_expert_capacity(CausalLM& model, const ExpertCapacity& capacity);

// The share of one forward's (token, choice) rows that `capacity` dropped, over every sparse layer's router logits
// [N, E] (the pads, `mask` [B, T] 0, left out): [dropped, rows] float64 on the logits' device.
at::Tensor dropped_choices(const std::vector<at::Tensor>& router_logits, int64_t top_k, bool norm_topk_prob,
                           const ExpertCapacity& capacity, const at::Tensor& mask);

// Makes every sparse layer of `model` append its router logits to `log` on each forward (transformers'
// output_router_logits), in layer order, and the experts it chose to `choices` where given; null stops it. The
// caller clears the logs between forwards.
void record_router_logits(CausalLM& model, std::vector<at::Tensor>* log, std::vector<at::Tensor>* choices = nullptr);

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

// How unevenly one forward's tokens spread over the experts: for each sparse layer's choices [N, k] (expert ids of
// num_experts), the busiest expert's share of the choices times E (1: every expert equally busy; E: every token to
// one expert), the pads (`mask` [B, T], 0) left out. Returns [the sum over the layers that saw a token, their count]
// (float64, on the choices' device: computed without waiting for the device, as the other metrics).
at::Tensor expert_load_max(const std::vector<at::Tensor>& choices, int64_t num_experts, const at::Tensor& mask,
                           const SumOverRowShares& over_shares = {});
// The (token, choice) rows each expert was routed by the sparse layers (`choices` as above), the pads left out,
// summed over the layers: [num_experts] float64 on the choices' device; zeros without layers.
at::Tensor expert_tokens(const std::vector<at::Tensor>& choices, int64_t num_experts, const at::Tensor& mask);

}  // namespace swift::model
