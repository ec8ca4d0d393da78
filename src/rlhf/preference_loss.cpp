// DPO (ms-swift's DPOTrainer), CPO/SimPO and ORPO (TRL's trainers) on pairs scored in one forward pass.
#include "swift/rlhf/preference_loss.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>

#include "swift/core/error.h"
#include "swift/model/tensor_parallel.h"

namespace swift::rlhf {

SequenceLogps sequence_logps_from_hidden(const at::Tensor& hidden, const at::Tensor& labels,
                                         const std::function<at::Tensor(const at::Tensor&)>& lm_head,
                                         bool with_logit_means, train::VocabSplit split, bool labels_shifted) {
  const int64_t R = hidden.size(0), T = hidden.size(1);
  const int64_t P = labels_shifted ? T : T - 1;  // the positions that predict a label
  auto shift_labels = (labels_shifted ? labels : labels.narrow(1, 1, T - 1)).to(hidden.device());
  auto mask = shift_labels.ne(-100);                                         // [R, P]
  auto selected = hidden.narrow(1, 0, P).index({mask});                     // [N, C]
  auto targets = shift_labels.index({mask});                                // [N]
  auto logits = lm_head(selected).to(at::kFloat);                           // [N, V]
  auto token_logps = split.comm ? -model::vocab_parallel_cross_entropy(logits, targets, split.vocab_start, *split.comm)
                                : -at::cross_entropy_loss(logits, targets, /*weight=*/{}, at::Reduction::None, -100);
  const int64_t vocab = logits.size(-1) * (split.comm ? split.comm->size() : 1);
  auto rows = at::arange(R, mask.options().dtype(at::kLong)).unsqueeze(1).expand({R, P}).index({mask});
  SequenceLogps out;
  out.logps = at::zeros({R}, token_logps.options()).index_add(0, rows, token_logps);
  torch::NoGradGuard no_grad;
  out.tokens = mask.sum(1).to(at::kFloat);
  if (with_logit_means) {  // another pass over the [N, V] logits: only where a metric reads it
    at::Tensor means = logits.sum(-1);
    if (split.comm) split.comm->all_reduce_sum(means);  // every rank's slice of the vocabulary
    out.logit_means = at::zeros({R}, token_logps.options()).index_add(0, rows, means / static_cast<double>(vocab));
  }
  out.vocab_size = vocab;
  return out;
}

namespace {

// A metric's value stays on the device: the trainer reads them all in one copy, after the backward has been
// queued (an .item() each would stall the device once per metric before it).
at::Tensor value(const at::Tensor& t) { return t.detach().to(at::kDouble).reshape({}); }

// -log σ(βx)(1-ε) - log σ(-βx)ε: the sigmoid loss with label smoothing (cDPO), as DPO and CPO write it.
at::Tensor smoothed_sigmoid(const at::Tensor& x, double beta, double eps) {
  return -at::log_sigmoid(beta * x) * (1 - eps) - at::log_sigmoid(-beta * x) * eps;
}

// log(1 - e^x) for x < 0, branching at -ln 2 to avoid cancellation (TRL's log1mexp).
at::Tensor log1mexp(const at::Tensor& x) {
  return at::where(x < -0.6931471805599453, at::log1p(-at::exp(x)), at::log(-at::expm1(x)));
}

struct Split {
  at::Tensor chosen, rejected;
};
Split split(const at::Tensor& rows) {
  const int64_t B = rows.size(0) / 2;
  return {rows.narrow(0, 0, B), rows.narrow(0, B, B)};
}

// The reward metrics every method logs, from detached per-pair rewards.
void add_reward_metrics(std::vector<PreferenceMetric>& m, const at::Tensor& chosen,
                        const at::Tensor& rejected) {
  m.emplace_back("rewards/chosen", value(chosen.mean()));
  m.emplace_back("rewards/rejected", value(rejected.mean()));
  m.emplace_back("rewards/accuracies", value(chosen.gt(rejected).to(at::kFloat).mean()));
  m.emplace_back("rewards/margins", value((chosen - rejected).mean()));
}

// The NLL of the chosen replies: their summed log-probability over their label tokens, negated (a token mean
// over the micro-batch's chosen replies, as CrossEntropyLoss with ignore_index).
at::Tensor chosen_nll(const SequenceLogps& policy) {
  const auto logps = split(policy.logps).chosen, tokens = split(policy.tokens).chosen;
  return -logps.sum() / tokens.sum().clamp_min(1);
}

PreferenceOutput dpo(const PreferenceConfig& c, const SequenceLogps& policy, const SequenceLogps& reference) {
  auto [pc, pr] = split(policy.logps);
  auto [rc, rr] = split(reference.logps.detach());
  const auto [tc, tr] = split(policy.tokens);
  const bool ipo = c.loss_type == "ipo";
  if (ipo) {  // ms-swift length-normalises all four before the loss (and so the rewards)
    pc = pc / tc.clamp_min(1);
    pr = pr / tr.clamp_min(1);
    rc = rc / tc.clamp_min(1);
    rr = rr / tr.clamp_min(1);
  }
  const at::Tensor logits = (pc - pr) - (rc - rr);
  const double b = c.beta, eps = c.label_smoothing;
  at::Tensor losses;
  if (c.loss_type == "sigmoid") {
    losses = smoothed_sigmoid(logits, b, eps);
  } else if (c.loss_type == "hinge") {
    losses = at::relu(1 - b * logits);
  } else if (ipo) {
    losses = (logits - 1 / (2 * b)).pow(2);
  } else if (c.loss_type == "robust") {
    losses = (-at::log_sigmoid(b * logits) * (1 - eps) + at::log_sigmoid(-b * logits) * eps) / (1 - 2 * eps);
  } else if (c.loss_type == "exo_pair") {  // EXO; ms-swift takes label smoothing 0 as 1e-3
    const double e = eps == 0 ? 1e-3 : eps;
    losses = at::sigmoid(b * logits) * (at::log_sigmoid(b * logits) - std::log(1 - e)) +
             at::sigmoid(-b * logits) * (at::log_sigmoid(-b * logits) - std::log(e));
  } else if (c.loss_type == "sppo_hard") {
    losses = (pc - rc - 0.5 / b).pow(2) + (pr - rr + 0.5 / b).pow(2);
  } else if (c.loss_type == "nca_pair") {
    const at::Tensor chosen = (pc - rc) * b, rejected = (pr - rr) * b;
    losses = -at::log_sigmoid(chosen) - 0.5 * at::log_sigmoid(-chosen) - 0.5 * at::log_sigmoid(-rejected);
  } else if (c.loss_type == "aot" || c.loss_type == "aot_unpaired") {  // sorted over the micro-batch's pairs
    const at::Tensor delta = c.loss_type == "aot"
                                 ? std::get<0>(at::sort(pc - pr, 0)) - std::get<0>(at::sort(rc - rr, 0))
                                 : std::get<0>(at::sort(pc - rc, 0)) - std::get<0>(at::sort(pr - rr, 0));
    losses = smoothed_sigmoid(delta, b, eps);
  } else if (c.loss_type == "apo_zero") {
    losses = 1 - at::sigmoid(b * (pc - rc)) + at::sigmoid(b * (pr - rr));
  } else if (c.loss_type == "apo_down") {
    losses = at::sigmoid(b * (pc - rc)) + 1 - at::sigmoid(b * ((pc - rc) - (pr - rr)));
  } else {  // discopop
    const at::Tensor scaled = logits * b, modulation = at::sigmoid(scaled / c.discopop_tau);
    losses = -at::log_sigmoid(scaled) * (1 - modulation) + at::exp(-scaled) * modulation;
  }
  const at::Tensor chosen_rewards = b * (pc - rc).detach(), rejected_rewards = b * (pr - rr).detach();
  PreferenceOutput out;
  out.loss = losses.mean();
  at::Tensor nll;
  if (c.rpo_alpha) {
    nll = chosen_nll(policy);
    out.loss = out.loss + *c.rpo_alpha * nll;
  }
  add_reward_metrics(out.metrics, chosen_rewards, rejected_rewards);
  const auto [sc, sr] = split(policy.logps.detach());
  out.metrics.emplace_back("logps/chosen", value(sc.mean()));
  out.metrics.emplace_back("logps/rejected", value(sr.mean()));
  if (ipo) {
    out.metrics.emplace_back("logps_mean/chosen", value((sc / tc.clamp_min(1)).mean()));
    out.metrics.emplace_back("logps_mean/rejected", value((sr / tr.clamp_min(1)).mean()));
  }
  // The logits' vocabulary mean averaged over each side's label positions.
  TORCH_CHECK(policy.logit_means.defined(), "DPO's policy log-probabilities need with_logit_means");
  const auto [lc, lr] = split(policy.logit_means);
  out.metrics.emplace_back("logits/chosen", value(lc.sum() / tc.sum().clamp_min(1)));
  out.metrics.emplace_back("logits/rejected", value(lr.sum() / tr.sum().clamp_min(1)));
  if (nll.defined()) out.metrics.emplace_back("nll_loss", value(nll));
  return out;
}

// TRL logs all_logits[:B].mean() over every position ([B, T, V]; ORPO leaves out the last position).
void add_position_logit_metrics(std::vector<PreferenceMetric>& m, const at::Tensor& position_means,
                                bool drop_last) {
  at::Tensor means = position_means;
  if (drop_last) means = means.narrow(1, 0, means.size(1) - 1);
  const auto [c, r] = split(means);
  m.emplace_back("logits/chosen", value(c.mean()));
  m.emplace_back("logits/rejected", value(r.mean()));
}

PreferenceOutput cpo(const PreferenceConfig& c, const SequenceLogps& policy, const at::Tensor& position_means) {
  at::Tensor logps = policy.logps;
  if (c.loss_type == "ipo" || c.loss_type == "simpo") logps = logps / policy.tokens.clamp_min(1);
  const auto [pc, pr] = split(logps);
  at::Tensor logits = pc - pr;
  const double b = c.beta;
  at::Tensor losses;
  if (c.loss_type == "simpo") {
    losses = smoothed_sigmoid(logits - c.simpo_gamma / b, b, c.label_smoothing);
  } else if (c.loss_type == "sigmoid") {
    losses = smoothed_sigmoid(logits, b, c.label_smoothing);
  } else if (c.loss_type == "hinge") {
    losses = at::relu(1 - b * logits);
  } else {  // ipo
    losses = (logits - 1 / (2 * b)).pow(2);
  }
  const at::Tensor nll = c.cpo_alpha == 0 ? at::zeros({}, logits.options()) : chosen_nll(policy);
  PreferenceOutput out;
  out.loss = losses.mean() + c.cpo_alpha * nll;
  add_reward_metrics(out.metrics, b * pc.detach(), b * pr.detach());
  out.metrics.emplace_back("logps/chosen", value(pc.mean()));
  out.metrics.emplace_back("logps/rejected", value(pr.mean()));
  add_position_logit_metrics(out.metrics, position_means, false);
  out.metrics.emplace_back("nll_loss", value(nll));
  return out;
}

PreferenceOutput orpo(const PreferenceConfig& c, const SequenceLogps& policy, const at::Tensor& position_means) {
  const auto [ac, ar] = split(policy.logps / policy.tokens.clamp_min(1));
  const at::Tensor log_odds = (ac - ar) - (log1mexp(ac) - log1mexp(ar));
  const at::Tensor ratio = at::log_sigmoid(log_odds);
  const at::Tensor nll = chosen_nll(policy);
  PreferenceOutput out;
  out.loss = nll - (c.beta * ratio).mean();
  add_reward_metrics(out.metrics, c.beta * ac.detach(), c.beta * ar.detach());
  out.metrics.emplace_back("logps/chosen", value(ac.mean()));
  out.metrics.emplace_back("logps/rejected", value(ar.mean()));
  add_position_logit_metrics(out.metrics, position_means, true);
  out.metrics.emplace_back("nll_loss", value(nll));
  out.metrics.emplace_back("log_odds_ratio", value(ratio.mean()));
  out.metrics.emplace_back("log_odds_chosen", value(log_odds.mean()));
  return out;
}

}  // namespace

at::Tensor PreferenceOutput::stacked() const {
  std::vector<at::Tensor> rows;
  for (const auto& m : metrics) rows.push_back(at::stack({m.sum, m.count.to(m.sum.device())}));
  return at::stack(rows);
}

std::vector<HostMetric> PreferenceOutput::read() const {
  const at::Tensor host = stacked().cpu().contiguous();
  const double* v = host.data_ptr<double>();
  std::vector<HostMetric> out;
  for (size_t i = 0; i < metrics.size(); ++i) out.push_back({metrics[i].name, v[2 * i], v[2 * i + 1]});
  return out;
}

PreferenceOutput kto_loss(const PreferenceConfig& c, const SequenceLogps& policy, const SequenceLogps& reference,
                          const SequenceLogps* policy_kl, const SequenceLogps* reference_kl, const at::Tensor& desirable) {
  const at::Tensor chosen = desirable.to(policy.logps.device()).to(at::kBool), rejected = chosen.logical_not();
  at::Tensor kl = at::zeros({}, policy.logps.options());
  if (c.needs_kl_rows()) {  // the batch's mean log ratio on mismatched replies, at least 0 (TRL's estimate)
    TORCH_CHECK(policy_kl && reference_kl, "KTO needs the KL rows' log-probabilities");
    kl = (policy_kl->logps - reference_kl->logps).mean().detach().clamp_min(0);
  }
  const at::Tensor logratios = policy.logps - reference.logps.detach();
  const double b = c.beta;
  at::Tensor losses;
  if (c.loss_type == "kto") {
    losses = at::where(chosen, 1 - at::sigmoid(b * (logratios - kl)), 1 - at::sigmoid(b * (kl - logratios)));
  } else {  // apo_zero_unpaired
    losses = at::where(chosen, 1 - at::sigmoid(b * logratios), at::sigmoid(b * logratios));
  }
  losses = losses * at::where(chosen, c.desirable_weight, c.undesirable_weight).to(losses.dtype());
  PreferenceOutput out;
  out.loss = losses.mean();
  const at::Tensor rewards = b * logratios.detach();
  const at::Tensor n_chosen = value(chosen.sum()), n_rejected = value(rejected.sum());
  const auto sum_where = [](const at::Tensor& v, const at::Tensor& mask) { return value((v.detach() * mask).sum()); };
  // ms-swift's logits per reply: the vocabulary sum of the logits, summed over its scored positions.
  TORCH_CHECK(policy.logit_means.defined(), "KTO's policy log-probabilities need with_logit_means");
  const at::Tensor logits = policy.logit_means * static_cast<double>(policy.vocab_size);
  out.metrics.emplace_back("kl", value(kl));
  out.metrics.emplace_back("rewards/chosen", sum_where(rewards, chosen), n_chosen);
  out.metrics.emplace_back("rewards/rejected", sum_where(rewards, rejected), n_rejected);
  out.metrics.emplace_back("logps/chosen", sum_where(policy.logps, chosen), n_chosen);
  out.metrics.emplace_back("logps/rejected", sum_where(policy.logps, rejected), n_rejected);
  out.metrics.emplace_back("logits/chosen", sum_where(logits, chosen), n_chosen);
  out.metrics.emplace_back("logits/rejected", sum_where(logits, rejected), n_rejected);
  return out;
}

PreferenceOutput reward_model_loss(const at::Tensor& rewards, const at::Tensor& margins,
                                   std::optional<double> center_rewards_coefficient) {
  const auto [chosen, rejected] = split(rewards.to(at::kFloat));
  at::Tensor difference = chosen - rejected;
  if (margins.defined()) difference = difference - margins.to(difference.device()).to(at::kFloat);
  PreferenceOutput out;
  out.loss = -at::log_sigmoid(difference).mean();
  at::Tensor center;
  if (center_rewards_coefficient) {
    center = *center_rewards_coefficient * (chosen + rejected).pow(2).mean();
    out.loss = out.loss + center;
  }
  add_reward_metrics(out.metrics, chosen.detach(), rejected.detach());
  if (center.defined()) out.metrics.emplace_back("center_rewards_loss", value(center));
  return out;
}

void validate(const PreferenceConfig& c) {
  std::vector<std::string> types;
  if (c.method == PreferenceMethod::kDpo)
    types = {"sigmoid", "hinge", "ipo", "robust", "exo_pair", "sppo_hard", "nca_pair", "aot", "aot_unpaired",
             "apo_zero", "apo_down", "discopop"};
  if (c.method == PreferenceMethod::kCpo) types = {"sigmoid", "hinge", "ipo", "simpo"};
  if (c.method == PreferenceMethod::kKto) types = {"kto", "apo_zero_unpaired"};
  if (c.method != PreferenceMethod::kOrpo) {
    std::string known;
    for (const auto& t : types) known += (known.empty() ? "" : ", ") + t;
    SWIFT_CHECK(std::find(types.begin(), types.end(), c.loss_type) != types.end(), UsageError,
                "--loss_type " + c.loss_type + " is not available for this --rlhf_type", "use one of " + known);
  }
  SWIFT_CHECK(c.loss_type != "discopop" || c.discopop_tau > 0, UsageError, "--discopop_tau must be > 0",
              "e.g. --discopop_tau 0.05 (ms-swift's default)");
  SWIFT_CHECK(c.beta > 0, UsageError, "--beta must be > 0", "e.g. --beta 0.1 (ms-swift's default; 2.0 for simpo)");
  SWIFT_CHECK(c.label_smoothing >= 0 && c.label_smoothing < 0.5, UsageError, "--label_smoothing must be in [0, 0.5)",
              "it is the probability that a pair's preference is flipped; e.g. 0.1");
}

PreferenceOutput preference_loss(const PreferenceConfig& config, const SequenceLogps& policy,
                                 const SequenceLogps* reference, const at::Tensor& position_logit_means) {
  TORCH_CHECK(policy.logps.size(0) % 2 == 0 && policy.logps.size(0) > 0,
              "a preference batch needs chosen and rejected rows in equal numbers");
  switch (config.method) {
    case PreferenceMethod::kDpo:
      TORCH_CHECK(reference != nullptr, "DPO needs the reference model's log-probabilities");
      return dpo(config, policy, *reference);
    case PreferenceMethod::kCpo:
      return cpo(config, policy, position_logit_means);
    case PreferenceMethod::kOrpo:
      return orpo(config, policy, position_logit_means);
    case PreferenceMethod::kKto:
      break;
  }
  TORCH_CHECK(false, "preference_loss does not compute KTO: use kto_loss");
}

}  // namespace swift::rlhf
