// Mixture-of-experts layers (see moe.h).
#include "swift/model/moe.h"

#include <ATen/ATen.h>
#if __has_include(<ATen/ops/_grouped_mm.h>)
#include <ATen/ops/_grouped_mm.h>
#define SWIFT_HAS_GROUPED_MM 1
#endif

#include <atomic>
#include <cmath>
#include <limits>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/model/tensor_parallel.h"

namespace swift::model {

namespace {

// One product per expert on its run of rows: what grouped_matmul falls back to.
at::Tensor matmul_per_group(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& offsets) {
  const auto ends = offsets.to(at::kCPU, at::kLong);
  const int64_t* end = ends.data_ptr<int64_t>();
  std::vector<at::Tensor> parts;
  int64_t begin = 0;
  for (int64_t e = 0; e < weights.size(0); ++e) {
    if (end[e] > begin) parts.push_back(at::matmul(x.narrow(0, begin, end[e] - begin), weights[e]));
    begin = end[e];
  }
  return parts.empty() ? x.new_zeros({0, weights.size(2)}) : at::cat(parts, 0);
}

}  // namespace

bool is_router(const std::string& module_name) {
  const std::string tail = ".mlp.gate";
  return module_name.size() >= tail.size() && module_name.compare(module_name.size() - tail.size(), tail.size(), tail) == 0;
}

at::Tensor grouped_matmul(const at::Tensor& x, const at::Tensor& weights, const at::Tensor& offsets) {
#ifdef SWIFT_HAS_GROUPED_MM
  // Some devices and dtypes lack a kernel (CUDA's wants bf16 on recent GPUs): after the first refusal, the loop.
  static std::atomic<bool> unsupported{false};
  if (!unsupported.load()) {
    try {
      return at::_grouped_mm(x, weights, offsets);
    } catch (const c10::Error& e) {
      unsupported = true;
      log_info("mixture of experts: at::_grouped_mm is not available here (", e.what_without_backtrace(),
               "); one matrix product per expert instead");
    }
  }
#endif
  return matmul_per_group(x, weights, offsets);
}

MoeExpertsImpl::MoeExpertsImpl(int64_t num_experts, int64_t hidden, int64_t intermediate,
                               const at::TensorOptions& options) {
  gate_up_proj = register_parameter("gate_up_proj", at::empty({num_experts, 2 * intermediate, hidden}, options));
  down_proj = register_parameter("down_proj", at::empty({num_experts, hidden, intermediate}, options));
}

at::Tensor MoeExpertsImpl::forward(const at::Tensor& x, const at::Tensor& experts, const at::Tensor& weights,
                                   const at::Tensor& keep) {
  const int64_t k = experts.size(1);
  const int64_t num_experts = expert_parallel ? expert_parallel->num_experts : gate_up_proj.size(0);
  // Every (token, choice) pair that runs sorted by expert (stable: within an expert in token order), so each
  // expert's tokens are one run of rows. `order` holds each row's flat (token, choice) index.
  at::Tensor flat_experts = experts.reshape({-1});
  at::Tensor order;
  if (keep.defined()) {
    const at::Tensor kept = keep.reshape({-1}).nonzero().squeeze(1);
    flat_experts = flat_experts.index_select(0, kept);
    order = kept.index_select(0, at::argsort(flat_experts, /*stable=*/true));
  } else {
    order = at::argsort(flat_experts, /*stable=*/true);
  }
  const at::Tensor token = at::floor_divide(order, k);
  const at::Tensor counts = at::bincount(flat_experts, {}, num_experts);
  const at::Tensor rows = x.index_select(0, token);  // [rows, C]
  at::Tensor out = expert_parallel
                       ? exchange_with_experts(rows, counts, *expert_parallel,
                                               [this](const at::Tensor& r, const at::Tensor& o) { return run_held_experts(r, o); })
                       : run_held_experts(rows, at::cumsum(counts, 0).to(at::kInt));  // [rows, C]
  out = (out * weights.reshape({-1}).index_select(0, order).unsqueeze(-1)).to(x.scalar_type());
  return at::zeros_like(x).index_add(0, token, out);
}

at::Tensor MoeExpertsImpl::run_held_experts(const at::Tensor& rows, const at::Tensor& offsets) {
  const at::Tensor gate_up_weight = adapter ? adapter->adapted("gate_up_proj", gate_up_proj) : gate_up_proj;
  const at::Tensor down_weight = adapter ? adapter->adapted("down_proj", down_proj) : down_proj;
  const at::Tensor gate_up = grouped_matmul(rows, gate_up_weight.transpose(1, 2), offsets);  // [M, 2I]
  const auto halves = gate_up.chunk(2, -1);
  return grouped_matmul(at::silu(halves[0]) * halves[1], down_weight.transpose(1, 2), offsets);  // [M, C]
}

SparseMoeBlockImpl::SparseMoeBlockImpl(const ModelConfig& c, const at::TensorOptions& options)
    : rule_(RoutingRule::of(c.moe)) {
  gate = register_module("gate", Linear(c.hidden_size, c.moe.num_experts, /*bias=*/false, options));
  if (c.moe.score_correction_bias)
    // In fp32 whatever the model's dtype, as transformers keeps it (_keep_in_fp32_modules_strict): it decides ties.
    score_correction_bias = gate->register_parameter(
        "e_score_correction_bias", at::zeros({c.moe.num_experts}, options.dtype(at::kFloat)), /*requires_grad=*/false);
  experts = register_module("experts", MoeExperts(c.moe.num_experts, c.hidden_size, c.moe.expert_intermediate_size, options));
  if (c.moe.shared_expert_intermediate_size > 0) {
    shared_expert = register_module(c.moe.shared_expert_module, MLP(c, c.moe.shared_expert_intermediate_size, options));
    if (c.moe.shared_expert_gated)
      shared_expert_gate = register_module("shared_expert_gate", Linear(c.hidden_size, 1, /*bias=*/false, options));
  }
}

RoutingRule RoutingRule::of(const MoeConfig& m) {
  RoutingRule r;
  r.top_k = m.experts_per_token;
  r.norm_topk_prob = m.norm_topk_prob;
  r.scoring = m.scoring;
  r.group_scoring = m.group_scoring;
  r.num_groups = m.num_groups;
  r.topk_groups = m.topk_groups;
  r.scaling = m.routed_scaling_factor;
  r.in_fp32 = m.router_in_fp32;
  return r;
}

std::pair<at::Tensor, at::Tensor> route_experts(const at::Tensor& logits, const RoutingRule& rule,
                                                const at::Tensor& correction_bias) {
  const at::Tensor scores = rule.scoring == "sigmoid" ? at::sigmoid(logits.to(at::kFloat)) : at::softmax(logits, -1, at::kFloat);
  at::Tensor choice = correction_bias.defined() ? scores + correction_bias.to(at::kFloat) : scores;
  if (!rule.group_scoring.empty()) {  // only the experts of each token's topk_groups best groups stay in the running
    const int64_t N = scores.size(0), E = scores.size(1);
    const at::Tensor grouped = choice.view({N, rule.num_groups, E / rule.num_groups});
    const at::Tensor group_scores = rule.group_scoring == "max" ? std::get<0>(grouped.max(-1))
                                                                : std::get<0>(grouped.topk(2, -1)).sum(-1);
    const at::Tensor best = std::get<1>(group_scores.topk(rule.topk_groups, -1, /*largest=*/true, /*sorted=*/false));
    const at::Tensor kept = at::zeros_like(group_scores, at::kBool).scatter(1, best, true).unsqueeze(-1)
                                .expand({N, rule.num_groups, E / rule.num_groups}).reshape({N, E});
    // V2 zeroes the other groups' softmax scores, V3 sets its choice scores to -inf: the same choice either way.
    choice = choice.masked_fill(kept.logical_not(), rule.group_scoring == "max" ? 0.0 : -std::numeric_limits<double>::infinity());
  }
  at::Tensor top, chosen;
  if (correction_bias.defined() || !rule.group_scoring.empty()) {
    chosen = std::get<1>(choice.topk(rule.top_k, -1));
    top = scores.gather(1, chosen);
  } else {
    std::tie(top, chosen) = at::topk(scores, rule.top_k, -1);
  }
  if (rule.norm_topk_prob)  // DeepSeek-V3 guards the sum with 1e-20; softmax routers' sums are never 0
    top = rule.scoring == "sigmoid" ? top / (top.sum(-1, /*keepdim=*/true) + 1e-20) : top / top.sum(-1, /*keepdim=*/true);
  if (rule.scaling != 1.0) top = top * rule.scaling;
  return {top, chosen};
}

std::pair<at::Tensor, at::Tensor> route_top_k(const at::Tensor& logits, int64_t top_k, bool norm_topk_prob) {
  RoutingRule rule;
  rule.top_k = top_k;
  rule.norm_topk_prob = norm_topk_prob;
  return route_experts(logits, rule);
}

at::Tensor expert_capacity_keep(const at::Tensor& weights, const at::Tensor& experts, int64_t num_experts,
                                const ExpertCapacity& capacity) {
  at::NoGradGuard no_grad;
  const int64_t tokens = experts.size(0), k = experts.size(1);
  // Megatron-Core's get_capacity over the layer's tokens x k choices.
  const auto most = static_cast<int64_t>(std::ceil(static_cast<double>(tokens * k) / static_cast<double>(num_experts) * capacity.factor));
  if (most >= tokens) return at::ones_like(experts, at::kBool);  // no expert can receive more
  const at::Tensor routed = at::zeros({tokens, num_experts}, weights.options().dtype(at::kFloat));
  at::Tensor kept;  // [tokens, E]: the rows each expert keeps
  if (capacity.by_position) {
    const at::Tensor chose = routed.scatter(1, experts, 1.0);
    kept = chose.gt(0) & at::cumsum(chose, 0).le(static_cast<double>(most));  // each expert's earliest tokens
  } else {
    const at::Tensor probable = routed.scatter(1, experts, weights.to(at::kFloat));
    const at::Tensor best = std::get<1>(at::topk(probable, most, 0, /*largest=*/true, /*sorted=*/false));  // [most, E]
    kept = at::zeros({tokens, num_experts}, experts.options().dtype(at::kBool)).scatter(0, best, true);
  }
  return kept.gather(1, experts);
}

// DeepSeek's routers compute their logits in fp32 (the input and the weight cast up), the others in the model's dtype.
// (ZeRO-3 gathers a layer's weights whole around the layer, so the gate's weight is here either way.)
at::Tensor SparseMoeBlockImpl::router_logits(const at::Tensor& x) {
  if (!rule_.in_fp32 || x.scalar_type() == at::kFloat) return gate(x);
  return at::linear(x.to(at::kFloat), gate->weight.to(at::kFloat));
}

at::Tensor SparseMoeBlockImpl::forward(const at::Tensor& input) {
  const at::Tensor x = input.reshape({-1, input.size(-1)});  // [N, C]
  const at::Tensor logits = router_logits(x);
  if (router_log) {  // under TP this rank's [B, T / tp, E] gathered to the whole rows' [B, T, E]
    const int64_t experts = logits.size(-1);
    router_log->push_back(tp_comm ? gather_sequence_for_replicated_use(logits.view({input.size(0), input.size(1), experts}),
                                                                       *tp_comm).view({-1, experts})
                                  : logits);
  }
  // As transformers: the scores in fp32; the chosen weights back in the logits' dtype for the softmax routers, in fp32
  // for DeepSeek's (its experts' outputs are weighed in fp32, then cast).
  const auto [top, chosen] = route_experts(logits, rule_, score_correction_bias);
  if (choice_log) {
    at::NoGradGuard no_grad;
    const int64_t k = chosen.size(-1);
    choice_log->push_back(tp_comm ? gather_sequence_for_replicated_use(chosen.view({input.size(0), input.size(1), k}),
                                                                       *tp_comm).view({-1, k})
                                  : chosen);
  }
  const int64_t num_experts = logits.size(-1);
  const at::Tensor keep = capacity.drops() ? expert_capacity_keep(top, chosen, num_experts, capacity) : at::Tensor();
  at::Tensor out = experts(x, chosen, rule_.in_fp32 ? top : top.to(logits.scalar_type()), keep);
  if (shared_expert)
    out = out + (shared_expert_gate ? at::sigmoid(shared_expert_gate(x)) * shared_expert(x) : shared_expert(x));
  return out.reshape(input.sizes());
}

void record_router_logits(CausalLM& model, std::vector<at::Tensor>* log, std::vector<at::Tensor>* choices) {
  for (const auto& layer : *model->model->layers)
    if (auto moe = layer->as<DecoderLayerImpl>()->moe) {
      moe->router_log = log;
      moe->choice_log = log ? choices : nullptr;
    }
}

void set_expert_capacity(CausalLM& model, const ExpertCapacity& capacity) {
  for (const auto& layer : *model->model->layers)
    if (auto moe = layer->as<DecoderLayerImpl>()->moe) moe->capacity = capacity;
}

at::Tensor dropped_choices(const std::vector<at::Tensor>& router_logits, int64_t top_k, bool norm_topk_prob,
                           const ExpertCapacity& capacity, const at::Tensor& mask) {
  at::NoGradGuard no_grad;
  at::Tensor dropped, rows;
  for (const auto& logits : router_logits) {
    const auto [top, chosen] = route_top_k(logits, top_k, norm_topk_prob);
    const at::Tensor lost = expert_capacity_keep(top, chosen, logits.size(-1), capacity).logical_not().to(at::kDouble);
    const at::Tensor weight = mask.defined() ? mask.reshape({-1, 1}).to(logits.device(), at::kDouble)
                                             : at::ones({logits.size(0), 1}, lost.options());
    const at::Tensor d = (lost * weight).sum(), n = weight.sum() * static_cast<double>(top_k);
    dropped = dropped.defined() ? dropped + d : d;
    rows = rows.defined() ? rows + n : n;
  }
  if (!dropped.defined()) return at::zeros({2}, at::TensorOptions().dtype(at::kDouble));
  return at::stack({dropped, rows});
}

namespace {

at::Tensor over(const SumOverRowShares& over_shares, const at::Tensor& counts) {
  if (!over_shares) return counts;
  at::NoGradGuard no_grad;
  return over_shares(counts);
}

}  // namespace

at::Tensor load_balancing_loss(const std::vector<at::Tensor>& router_logits, int64_t top_k, const at::Tensor& mask,
                               const SumOverRowShares& over_shares) {
  SWIFT_ASSERT(!router_logits.empty(), "router logits of at least one sparse layer");
  const int64_t experts = router_logits.front().size(-1);
  const auto options = router_logits.front().options().dtype(at::kFloat);
  at::Tensor chosen = at::zeros({experts}, options), probability = at::zeros({experts}, options), rows;
  const at::Tensor weight = mask.defined() ? mask.reshape({-1}).to(options) : at::Tensor();
  for (const auto& logits : router_logits) {
    const at::Tensor probs = at::softmax(logits, -1);  // in the logits' dtype, as transformers
    const at::Tensor picks = std::get<1>(at::topk(probs, top_k, -1)).reshape({-1});
    if (weight.defined()) {
      chosen = chosen + at::zeros({experts}, options).scatter_add(0, picks, weight.repeat_interleave(top_k));
      probability = probability + (probs.to(at::kFloat) * weight.unsqueeze(-1)).sum(0);
      rows = rows.defined() ? rows + weight.sum() : weight.sum();
    } else {
      chosen = chosen + at::bincount(picks, {}, experts).to(at::kFloat);
      probability = probability + probs.to(at::kFloat).sum(0);
      const at::Tensor n = at::scalar_tensor(static_cast<double>(logits.size(0)), options);
      rows = rows.defined() ? rows + n : n;
    }
  }
  // One exchange for the counts of every layer (the choices without gradient, as transformers' one-hot).
  const at::Tensor counts = over(over_shares, at::cat({chosen.detach(), rows.detach().reshape({1})}));
  const at::Tensor all_rows = counts[experts];
  return (counts.narrow(0, 0, experts) / all_rows * (probability / all_rows)).sum() * static_cast<double>(experts);
}

at::Tensor megatron_load_balancing_loss(const std::vector<at::Tensor>& router_logits, int64_t top_k, const at::Tensor& mask,
                                        const SumOverRowShares& over_shares) {
  if (router_logits.empty()) return at::zeros({2}, at::TensorOptions().dtype(at::kFloat));  // a stage of dense layers
  at::Tensor sum;
  for (const auto& logits : router_logits) {
    const int64_t experts = logits.size(-1);
    const at::Tensor probs = at::softmax(logits, -1, at::kFloat);  // Megatron's scores for the aux loss: fp32
    const at::Tensor picks = std::get<1>(at::topk(probs, top_k, -1));
    const at::Tensor weight = mask.defined() ? mask.reshape({-1, 1}).to(probs.options())
                                             : at::ones({logits.size(0), 1}, probs.options());
    const at::Tensor chose = at::zeros_like(probs).scatter(1, picks, 1.0);  // [N, E]
    // Megatron-Core's tokens_per_expert and token count, one exchange per layer as its router's.
    const at::Tensor counts = over(over_shares, at::cat({(chose * weight).sum(0), weight.sum().reshape({1})}));
    const at::Tensor tokens = counts[experts].clamp_min(1.0);
    const at::Tensor share = counts.narrow(0, 0, experts) / tokens;  // sums to k over the experts
    const at::Tensor probability = (probs * weight).sum(0) / tokens;
    const at::Tensor layer = (share * probability).sum() * (static_cast<double>(experts) / static_cast<double>(top_k));
    sum = sum.defined() ? sum + layer : layer;
  }
  return at::stack({sum, at::scalar_tensor(static_cast<double>(router_logits.size()), sum.options())});
}

namespace {

// How many of one layer's (token, choice) rows chose each expert, the pads (mask 0) left out: [num_experts] float64.
at::Tensor routed_counts(const at::Tensor& chosen, int64_t num_experts, const at::Tensor& mask, const SumOverRowShares& over_shares) {
  const int64_t top_k = chosen.size(-1);
  const at::Tensor picks = chosen.reshape({-1});
  const at::Tensor weight = mask.defined() ? mask.reshape({-1}).to(chosen.device(), at::kDouble).repeat_interleave(top_k)
                                           : at::ones({picks.size(0)}, chosen.options().dtype(at::kDouble));
  return over(over_shares, at::zeros({num_experts}, weight.options()).scatter_add(0, picks, weight));
}

}  // namespace

at::Tensor expert_load_max(const std::vector<at::Tensor>& choices, int64_t num_experts, const at::Tensor& mask,
                           const SumOverRowShares& over_shares) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> loads, seen;  // per layer, on the device
  for (const auto& chosen : choices) {
    const at::Tensor counts = routed_counts(chosen, num_experts, mask, over_shares);
    const at::Tensor total = counts.sum();
    seen.push_back(total.gt(0).to(at::kDouble));  // a layer that saw no token (all pads) counts for nothing
    loads.push_back(counts.max() / total.clamp_min(1.0) * static_cast<double>(num_experts) * seen.back());
  }
  if (loads.empty()) return at::zeros({2}, at::TensorOptions().dtype(at::kDouble));
  return at::stack({at::stack(loads).sum(), at::stack(seen).sum()});
}

at::Tensor expert_tokens(const std::vector<at::Tensor>& choices, int64_t num_experts, const at::Tensor& mask) {
  at::NoGradGuard no_grad;
  at::Tensor sum = at::zeros({num_experts}, at::TensorOptions().dtype(at::kDouble));
  for (const auto& chosen : choices) sum = routed_counts(chosen, num_experts, mask, {}) + sum.to(chosen.device());
  return sum;
}

}  // namespace swift::model
