// swift rlhf's flags into RlhfOptions (see rlhf_options.h).
#include "swift/rlhf/rlhf_options.h"

#include <algorithm>

#include "swift/core/logging.h"
#include "swift/hub/hub_flags.h"
#include "swift/hub/hub_resolver.h"

namespace swift::rlhf {

namespace {

// The method's settings with ms-swift's defaults (beta 0.1, simpo 2.0; the loss type by method).
PreferenceConfig preference_config(const cli::Flags& flags) {
  PreferenceConfig c;
  const std::string type = flags.str("rlhf_type");
  if (type == "dpo") {
    c.method = PreferenceMethod::kDpo;
  } else if (type == "cpo" || type == "simpo") {  // ms-swift runs simpo as CPO with the simpo loss
    c.method = PreferenceMethod::kCpo;
  } else if (type == "orpo") {
    c.method = PreferenceMethod::kOrpo;
  } else if (type == "kto") {
    c.method = PreferenceMethod::kKto;
  } else {
    throw UsageError("--rlhf_type " + type + " is not known", "use dpo, cpo, simpo, orpo, kto, rm, grpo or gkd");
  }
  c.loss_type = flags.str("loss_type");
  if (c.loss_type.empty()) c.loss_type = type == "simpo" ? "simpo" : type == "kto" ? "kto" : "sigmoid";
  c.desirable_weight = flags.number("desirable_weight");
  c.undesirable_weight = flags.number("undesirable_weight");
  c.beta = flags.given("beta") ? flags.number("beta") : (type == "simpo" ? 2.0 : 0.1);
  c.label_smoothing = flags.number("label_smoothing");
  if (flags.given("rpo_alpha")) c.rpo_alpha = flags.number("rpo_alpha");
  c.cpo_alpha = flags.number("cpo_alpha");
  c.simpo_gamma = flags.number("simpo_gamma");
  c.discopop_tau = flags.number("discopop_tau");
  validate(c);
  SWIFT_CHECK(!c.rpo_alpha || c.method == PreferenceMethod::kDpo, UsageError,
              "--rpo_alpha applies to --rlhf_type dpo", "cpo/simpo weigh the NLL with --cpo_alpha; orpo always adds it");
  return c;
}

// GRPO's settings with ms-swift 4.6's defaults (beta 0.04, loss_type grpo, temperature 0.9).
GrpoOptions grpo_options(const cli::Flags& flags, cli::Problems& problems) {
  GrpoOptions g;
  g.num_generations = flags.integer("num_generations");
  problems.at_least("num_generations", g.num_generations, 2, "GRPO compares the completions of one prompt: use 2 or more (ms-swift: 8)");
  g.max_completion_length = flags.integer("max_completion_length");
  problems.at_least("max_completion_length", g.max_completion_length, 1, "e.g. 512, ms-swift's default");
  g.temperature = flags.number("temperature");
  problems.in_range("temperature", g.temperature, 1e-5, 100, "GRPO samples its completions: e.g. 0.9, ms-swift's default");
  g.top_p = flags.number("top_p");
  problems.in_range("top_p", g.top_p, 1e-9, 1, "1 keeps every token");
  g.top_k = std::max<int64_t>(flags.integer("top_k"), 0);
  g.min_p = flags.number("min_p");
  g.repetition_penalty = flags.number("repetition_penalty");
  problems.in_range("repetition_penalty", g.repetition_penalty, 1e-9, 100, "1 is off");
  g.reward_funcs = flags.list("reward_funcs");
  const std::vector<std::string> reward_models = flags.list("reward_model"), templates = flags.list("reward_template"),
                                 adapters = flags.list("reward_adapters");
  problems.check(!g.reward_funcs.empty() || !reward_models.empty(), "--rlhf_type grpo needs --reward_funcs or --reward_model",
                 "name the rewards, e.g. --reward_funcs accuracy format, or a reward model (docs/grpo.md)");
  problems.check(templates.empty() || templates.size() == reward_models.size(),
                 "--reward_template gives " + std::to_string(templates.size()) + " templates for " +
                     std::to_string(reward_models.size()) + " --reward_model",
                 "give one per reward model, in their order (or none: each model's own)");
  problems.check(adapters.empty() || reward_models.size() == 1, "--reward_adapters applies to a single --reward_model",
                 "give one --reward_model (the adapters' base)");
  for (size_t i = 0; i < reward_models.size(); ++i) {
    RewardModelSpec spec;
    spec.dir = problems.collect([&] { return hub::resolve_model(reward_models[i], hub::hub_options(flags), "--reward_model"); },
                                std::string(reward_models[i]));
    if (i < templates.size()) spec.template_name = templates[i];
    spec.adapters.assign(adapters.begin(), adapters.end());
    g.reward_models.push_back(std::move(spec));
  }
  if (flags.given("reward_model_type"))
    log_info("--reward_model_type ignored: swift reads each reward model's type from its config.json");
  RewardSettings& r = g.rewards;
  r.cosine_min_len_value_wrong = flags.number("cosine_min_len_value_wrong");
  r.cosine_max_len_value_wrong = flags.number("cosine_max_len_value_wrong");
  r.cosine_min_len_value_correct = flags.number("cosine_min_len_value_correct");
  r.cosine_max_len_value_correct = flags.number("cosine_max_len_value_correct");
  r.cosine_max_len = flags.given("cosine_max_len") ? flags.integer("cosine_max_len") : g.max_completion_length;
  r.repetition_n_grams = flags.integer("repetition_n_grams");
  r.repetition_max_penalty = flags.number("repetition_max_penalty");
  r.soft_max_length = flags.given("soft_max_length") ? flags.integer("soft_max_length") : g.max_completion_length;
  if (flags.given("soft_cache_length")) r.soft_cache_length = flags.integer("soft_cache_length");
  r.reward_timeout = flags.number("reward_timeout");
  for (const auto& name : g.reward_funcs) problems.collect([&] { return reward_function(name, r) != nullptr; }, false);
  try {  // two rewards under one name would share a metric and a completions.jsonl column
    std::vector<std::string> names = reward_names(g);
    std::sort(names.begin(), names.end());
    const auto twice = std::adjacent_find(names.begin(), names.end());
    problems.check(twice == names.end(), "two rewards would be logged as " + (twice == names.end() ? std::string() : *twice) +
                                             " (--reward_funcs names, --reward_model folder names)",
                   "give each reward model a folder of its own name (ms-swift names them by folder, too)");
  } catch (const UserError&) {
    // a bad --reward_funcs name: reported above
  }
  for (const auto& w : flags.list("reward_weights")) {
    char* end = nullptr;
    const double v = std::strtod(w.c_str(), &end);
    problems.check(end && *end == '\0' && !w.empty(), "--reward_weights " + w + " is not a number", "e.g. --reward_weights 1.0 0.5");
    g.reward_weights.push_back(v);
  }
  const size_t rewards = g.reward_funcs.size() + g.reward_models.size();
  if (g.reward_weights.empty()) g.reward_weights.assign(rewards, 1.0);
  problems.check(g.reward_weights.size() == rewards,
                 "--reward_weights gives " + std::to_string(g.reward_weights.size()) + " weights for " +
                     std::to_string(g.reward_funcs.size()) + " --reward_funcs and " + std::to_string(g.reward_models.size()) +
                     " --reward_model",
                 "give one weight per reward function, then one per reward model, in their order (as ms-swift)");
  GrpoLossConfig& l = g.loss;
  l.loss_type = problems.collect([&] { return parse_grpo_loss_type(flags.str("loss_type").empty() ? "grpo" : flags.str("loss_type")); },
                                 GrpoLossType::kGrpo);
  l.importance_sampling = problems.collect([&] { return parse_importance_sampling(flags.str("importance_sampling_level")); },
                                           ImportanceSampling::kToken);
  l.beta = flags.given("beta") ? flags.number("beta") : 0.04;
  problems.in_range("beta", l.beta, 0, 1e6, "0 trains without a reference model (ms-swift's default 0.04)");
  l.epsilon_low = flags.number("epsilon");
  l.epsilon_high = flags.given("epsilon_high") ? flags.number("epsilon_high") : l.epsilon_low;
  problems.in_range("epsilon", l.epsilon_low, 0, 1, "the clip's lower bound is 1 - epsilon: e.g. 0.2");
  problems.in_range("epsilon_high", l.epsilon_high, 0, 1e6, "the clip's upper bound is 1 + epsilon_high: e.g. 0.28 (DAPO)");
  if (flags.given("delta")) {
    l.delta = flags.number("delta");
    problems.check(*l.delta > 1 + l.epsilon_high, "--delta " + std::to_string(*l.delta) + " must exceed 1 + --epsilon_high",
                   "the two-sided clip caps the ratio above the clip range, e.g. --delta 1.5");
  }
  l.max_completion_length = g.max_completion_length;
  g.advantage_estimator = problems.collect([&] { return parse_advantage_estimator(flags.str("advantage_estimator")); },
                                           AdvantageEstimator::kGrpo);
  const std::string scale = flags.str("scale_rewards");
  g.scale_rewards = problems.collect(
      [&] {
        if (!scale.empty()) return parse_scale_rewards(scale);
        return g.advantage_estimator == AdvantageEstimator::kRloo                ? RewardScaling::kNone
               : g.advantage_estimator == AdvantageEstimator::kReinforcePlusPlus ? RewardScaling::kBatch
                                                                                 : RewardScaling::kGroup;
      },
      RewardScaling::kGroup);
  // ms-swift subtracts beta x the KL from the rewards (instead of a KL term in the loss) for rloo and REINFORCE++.
  g.kl_in_reward = flags.given("kl_in_reward") ? flags.boolean("kl_in_reward") : g.advantage_estimator != AdvantageEstimator::kGrpo;
  if (g.kl_in_reward && g.scale_rewards == RewardScaling::kGdpo) {
    log_warn("--scale_rewards gdpo takes no KL in the rewards: --kl_in_reward is off (as ms-swift)");
    g.kl_in_reward = false;
  }
  if (g.loss.beta == 0) g.kl_in_reward = false;  // nothing to take out
  g.num_iterations = flags.integer("num_iterations");
  problems.at_least("num_iterations", g.num_iterations, 1, "1 updates once on each generation batch");
  g.steps_per_generation = flags.given("steps_per_generation") ? flags.integer("steps_per_generation") : 0;
  problems.at_least("steps_per_generation", g.steps_per_generation, 0, "leave it unset: the gradient accumulation steps");
  g.overlong_filter = flags.boolean("overlong_filter");
  g.log_completions = flags.boolean("log_completions");
  g.dynamic_sample = flags.boolean("dynamic_sample");
  g.max_resample_times = flags.integer("max_resample_times");
  problems.at_least("max_resample_times", g.max_resample_times, 0, "e.g. 3, ms-swift's default");
  for (const char* vllm : {"use_vllm", "vllm_mode"})
    if (flags.given(vllm))
      log_info("--", vllm, " ignored: swift generates GRPO's rollouts with its own engine, in the training process, from the "
               "policy's current weights");
  return g;
}

// GKD's settings with ms-swift 4.6's defaults (lmbda 0.5, beta 0.5, temperature 0.9).
GkdOptions gkd_options(const cli::Flags& flags, cli::Problems& problems) {
  GkdOptions g;
  g.lmbda = flags.number("lmbda");
  problems.in_range("lmbda", g.lmbda, 0, 1, "the share of steps on the student's own completions: e.g. 0.5, ms-swift's default");
  g.beta = flags.given("beta") ? flags.number("beta") : 0.5;
  problems.in_range("beta", g.beta, 0, 1, "0: forward KL, 1: reverse KL, between: the generalised JSD (ms-swift's default 0.5)");
  g.temperature = flags.number("temperature");
  problems.in_range("temperature", g.temperature, 1e-5, 100, "e.g. 0.9, ms-swift's default");
  g.sft_alpha = flags.number("sft_alpha");
  problems.in_range("sft_alpha", g.sft_alpha, 0, 1e6, "0 trains on the divergence alone");
  g.max_completion_length = flags.integer("max_completion_length");
  problems.at_least("max_completion_length", g.max_completion_length, 1, "e.g. 512, ms-swift's default");
  g.top_p = flags.number("top_p");
  problems.in_range("top_p", g.top_p, 1e-9, 1, "1 keeps every token");
  g.top_k = std::max<int64_t>(flags.integer("top_k"), 0);
  g.min_p = flags.number("min_p");
  problems.in_range("min_p", g.min_p, 0, 1, "0 is off");
  g.repetition_penalty = flags.number("repetition_penalty");
  problems.in_range("repetition_penalty", g.repetition_penalty, 1e-9, 100, "1 is off");
  g.steps_per_generation = flags.given("steps_per_generation") ? flags.integer("steps_per_generation") : 0;
  problems.at_least("steps_per_generation", g.steps_per_generation, 0, "leave it unset: the gradient accumulation steps");
  g.teacher_model = flags.str("teacher_model");
  problems.check(!g.teacher_model.empty(), "--rlhf_type gkd needs --teacher_model (the model distilled from)",
                 "give the teacher's folder or hub id; ms-swift's self-distillation without a teacher trains on a "
                 "divergence of the model from itself");
  problems.check(!flags.boolean("seq_kd"), "--seq_kd (the teacher's own replies) is not implemented, as in ms-swift 4.6",
                 "drop it; generate the teacher's replies into the dataset with swift infer first");
  problems.check(!flags.given("gkd_logits_topk"), "--gkd_logits_topk is not available yet: the teacher's full distribution is used",
                 "drop it");
  problems.check(flags.str("teacher_model_server").empty(), "--teacher_model_server is not available: the teacher runs in the training process",
                 "give --teacher_model");
  if (flags.boolean("log_completions"))
    log_warn("--log_completions is not written for --rlhf_type gkd yet (grpo writes completions.jsonl)");
  if (flags.boolean("offload_teacher_model"))
    log_info("--offload_teacher_model ignored: the teacher stays on the training device");
  for (const char* vllm : {"use_vllm", "vllm_mode"})
    if (flags.given(vllm))
      log_info("--", vllm, " ignored: swift generates the student's completions with its own engine, in the training process");
  return g;
}

}  // namespace

std::vector<std::string> reward_names(const GrpoOptions& options) {
  std::vector<std::string> names;
  for (const auto& f : options.reward_funcs) names.push_back(reward_function(f, options.rewards)->name());
  for (const auto& m : options.reward_models) names.push_back(reward_model_name(m.dir));
  return names;
}

std::vector<cli::FlagSpec> rlhf_flags() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"rlhf_type", FlagType::kString, "dpo", "dpo, cpo, simpo, orpo, kto, rm (a reward model), grpo (online: the policy's own completions, scored by --reward_funcs) or gkd (distillation from --teacher_model, on the student's own completions too)"},
      {"ref_model", FlagType::kString, "", "dpo/kto: the frozen reference model folder (default: --model; LoRA: the base with the adapter switched off)"},
      {"beta", FlagType::kFloat, "", "how far the policy may move from the reference (default 0.1; simpo 2.0; grpo 0.04, the KL term's weight)"},
      {"loss_type", FlagType::kString, "", "dpo: sigmoid (default), hinge, ipo, robust, exo_pair, sppo_hard, nca_pair, aot, aot_unpaired, apo_zero, apo_down, discopop; cpo: sigmoid (default), hinge, ipo, simpo; kto: kto (default), apo_zero_unpaired; grpo: grpo (default), bnpo, dr_grpo, dapo, cispo, sapo"},
      {"discopop_tau", FlagType::kFloat, "0.05", "dpo --loss_type discopop: temperature of the log-ratio modulation"},
      {"label_smoothing", FlagType::kFloat, "0", "probability that a pair's preference is wrong (sigmoid: cDPO; robust)"},
      {"rpo_alpha", FlagType::kFloat, "", "dpo: add rpo_alpha x the NLL of the chosen replies (RPO)"},
      {"cpo_alpha", FlagType::kFloat, "1.0", "cpo/simpo: weight of the NLL of the chosen replies (0: pure SimPO)"},
      {"simpo_gamma", FlagType::kFloat, "1.0", "simpo: target reward margin"},
      {"desirable_weight", FlagType::kFloat, "1.0", "kto: weight of the desirable (label true) replies' losses"},
      {"undesirable_weight", FlagType::kFloat, "1.0", "kto: weight of the undesirable (label false) replies' losses"},
      {"center_rewards_coefficient", FlagType::kFloat, "", "rm: add this x mean((r_chosen + r_rejected)^2), keeping rewards centred on 0"},
      {"max_completion_length", FlagType::kInt, "512", "grpo: the most tokens a completion may have; the other methods accept it and truncate by --max_length"},
      {"num_generations", FlagType::kInt, "8", "grpo: completions per prompt (a group whose rewards are compared)"},
      {"temperature", FlagType::kFloat, "0.9", "grpo: sampling temperature of the completions (their log-probabilities are taken at it too)"},
      {"top_p", FlagType::kFloat, "1.0", "grpo: nucleus sampling of the completions (1: off)"},
      {"top_k", FlagType::kInt, "-1", "grpo: sample among the k likeliest tokens (-1 or 0: off)"},
      {"min_p", FlagType::kFloat, "0.0", "grpo: drop tokens below min_p x the likeliest one's probability (0: off)"},
      {"repetition_penalty", FlagType::kFloat, "1.0", "grpo: discourage tokens already in the prompt or completion (1: off)"},
      {"reward_funcs", FlagType::kList, "", "grpo: the reward functions: accuracy, format, cosine, repetition, soft_overlong, 'external:COMMAND' (a program scoring JSON lines) or http(s)://HOST/PATH (an endpoint scoring them: docs/grpo.md)"},
      {"reward_timeout", FlagType::kFloat, "300", "grpo: seconds an external reward command or endpoint has to answer a generation batch"},
      {"reward_weights", FlagType::kList, "", "grpo: one weight per reward function (default all 1)"},
      {"reward_model", FlagType::kList, "", "grpo: reward models scoring the completions (sequence-classification folders, e.g. from --rlhf_type rm; scored after --reward_funcs)"},
      {"reward_adapters", FlagType::kList, "", "grpo: LoRA adapters applied to the one --reward_model (an rm adapter carries its score head)"},
      {"reward_template", FlagType::kList, "", "grpo: each reward model's template (default: its args.json's, else its family's)"},
      {"reward_model_type", FlagType::kList, "", "grpo: accepted for ms-swift command lines (the type comes from config.json)"},
      {"epsilon", FlagType::kFloat, "0.2", "grpo: the ratio is clipped below at 1 - epsilon"},
      {"epsilon_high", FlagType::kFloat, "", "grpo: the ratio is clipped above at 1 + epsilon_high (default --epsilon; DAPO's clip-higher: 0.28)"},
      {"delta", FlagType::kFloat, "", "grpo: cap the unclipped ratio at delta too (two-sided clipping; > 1 + epsilon_high)"},
      {"importance_sampling_level", FlagType::kString, "token", "grpo: token (GRPO), sequence (GSPO) or sequence_token (GSPO-token)"},
      {"advantage_estimator", FlagType::kString, "grpo", "grpo, rloo or reinforce_plus_plus"},
      {"scale_rewards", FlagType::kString, "", "grpo: divide the advantages by the group's (group), the batch's (batch) or no (none) standard deviation; gdpo: each reward normalised alone (default group; rloo none; reinforce_plus_plus batch)"},
      {"kl_in_reward", FlagType::kBool, "", "grpo: take beta x each completion's KL to the reference out of its reward instead of a KL term in the loss (default: true for rloo and reinforce_plus_plus, false for grpo, as ms-swift)"},
      {"num_iterations", FlagType::kInt, "1", "grpo: updates on each generation batch"},
      {"steps_per_generation", FlagType::kInt, "", "grpo: micro-batches per rank each generation batch holds (default --gradient_accumulation_steps)"},
      {"overlong_filter", FlagType::kBool, "false", "grpo: completions cut by --max_completion_length train nothing"},
      {"log_completions", FlagType::kBool, "false", "grpo: write prompts, completions, rewards and advantages to completions.jsonl in the run folder"},
      {"dynamic_sample", FlagType::kBool, "false", "grpo: DAPO's dynamic sampling: groups whose rewards are all equal (they train nothing) are replaced by groups of newly drawn prompts"},
      {"max_resample_times", FlagType::kInt, "3", "grpo --dynamic_sample: extra generation batches at most, each generation batch; short of enough varied groups, the first batch trains as it is"},
      {"cosine_min_len_value_wrong", FlagType::kFloat, "-0.5", "grpo cosine reward: a wrong answer's reward at length 0"},
      {"cosine_max_len_value_wrong", FlagType::kFloat, "0.0", "grpo cosine reward: a wrong answer's reward at --cosine_max_len"},
      {"cosine_min_len_value_correct", FlagType::kFloat, "1.0", "grpo cosine reward: a correct answer's reward at length 0"},
      {"cosine_max_len_value_correct", FlagType::kFloat, "0.5", "grpo cosine reward: a correct answer's reward at --cosine_max_len"},
      {"cosine_max_len", FlagType::kInt, "", "grpo cosine reward: the length at which the schedule ends (default --max_completion_length)"},
      {"repetition_n_grams", FlagType::kInt, "3", "grpo repetition reward: the n of the word n-grams"},
      {"repetition_max_penalty", FlagType::kFloat, "-1.0", "grpo repetition reward: the reward when every n-gram repeats"},
      {"soft_max_length", FlagType::kInt, "", "grpo soft_overlong reward: the length where it reaches -1 (default --max_completion_length)"},
      {"soft_cache_length", FlagType::kInt, "", "grpo soft_overlong reward: the band before --soft_max_length over which it falls"},
      {"use_vllm", FlagType::kBool, "false", "grpo: accepted for ms-swift command lines; swift generates with its own engine in the training process"},
      {"teacher_model", FlagType::kString, "", "gkd: the teacher model folder (or hub id) the student is distilled from"},
      {"lmbda", FlagType::kFloat, "0.5", "gkd: the share of generation batches trained on the student's own completions (else the dataset's replies)"},
      {"sft_alpha", FlagType::kFloat, "0", "gkd: add sft_alpha x the cross-entropy on the dataset's replies"},
      {"seq_kd", FlagType::kBool, "false", "gkd: the teacher's own replies (not implemented, as in ms-swift 4.6)"},
      {"gkd_logits_topk", FlagType::kInt, "", "gkd: distil on the teacher's top-k tokens only (not available yet)"},
      {"teacher_model_server", FlagType::kString, "", "gkd: a server giving the teacher's log-probabilities (not available)"},
      {"offload_teacher_model", FlagType::kBool, "false", "gkd: accepted for ms-swift command lines (the teacher stays on the device)"},
      {"vllm_mode", FlagType::kString, "", "grpo: accepted for ms-swift command lines (ignored, as --use_vllm)"},
  };
  // As ms-swift: preference losses score the last reply only, and TRL turns dropout off.
  const train::TrainingFlagDefaults defaults{
      /*pretrain=*/false, /*loss_scale_default=*/"",
      /*loss_scale_help=*/"which tokens are scored: last_round (default; orpo: default), default, all",
      /*lora_dropout_default=*/"0",
      /*lora_dropout_help=*/"accepted for ms-swift command lines; 0 whatever it says: preference training turns "
                            "dropout off (TRL's disable_dropout)"};
  for (auto& f : train::training_flags(defaults)) flags.push_back(f);
  return flags;
}

RlhfOptions rlhf_options(const cli::Flags& flags) {
  cli::Problems problems;
  RlhfOptions o;
  o.training = train::training_options(flags, problems);
  o.rlhf_type = flags.str("rlhf_type");
  o.ref_model = flags.str("ref_model");
  if (flags.given("center_rewards_coefficient")) o.center_rewards_coefficient = flags.number("center_rewards_coefficient");
  data::DataOptions& data = o.training.data;
  if (o.online()) {
    o.grpo = grpo_options(flags, problems);
    problems.check(data.val_datasets.empty() && data.split_dataset_ratio == 0,
                   "evaluation in swift rlhf --rlhf_type grpo (--val_dataset, --split_dataset_ratio) is not available yet",
                   "drop them; the training log holds the rewards of every generation batch");
    problems.check(!o.training.parallel.splits_model(),
                   "swift rlhf --rlhf_type grpo with --tp_size/--pp_size/--cp_size/--ep_size is not available yet "
                   "(the rollouts generate with the whole model on each rank)",
                   "use data parallelism: NPROC_PER_NODE=2, with --deepspeed zero2 for memory");
  } else if (o.distillation()) {
    o.gkd = gkd_options(flags, problems);
    problems.check(data.val_datasets.empty() && data.split_dataset_ratio == 0,
                   "evaluation in swift rlhf --rlhf_type gkd (--val_dataset, --split_dataset_ratio) is not available yet",
                   "drop them; the training log holds the loss of every step");
    problems.check(!o.training.parallel.splits_model(),
                   "swift rlhf --rlhf_type gkd with --tp_size/--pp_size/--cp_size/--ep_size is not available yet (the student "
                   "generates with the whole model on each rank)",
                   "use data parallelism: NPROC_PER_NODE=2, with --deepspeed zero2 for memory");
    problems.check(!data.streaming && !data.lazy_tokenize, "--rlhf_type gkd encodes its rows up front: --streaming and "
                   "--lazy_tokenize do not apply", "drop them");
    problems.check(o.ref_model.empty(), "--rlhf_type gkd distils from --teacher_model: --ref_model is not used", "drop --ref_model");
  } else if (o.reward_model()) {
    problems.check(o.ref_model.empty(), "--rlhf_type rm trains a reward model: --ref_model is not used", "drop --ref_model");
  } else {
    o.preference = problems.collect([&] { return preference_config(flags); }, PreferenceConfig{});
    problems.check(o.preference.needs_reference() || o.ref_model.empty(),
                   "--rlhf_type " + o.rlhf_type + " is reference-free: --ref_model is not used",
                   "drop --ref_model (as ms-swift: CPO/SimPO/ORPO train without a reference model)");
  }
  problems.check(!data.packing, "--packing does not apply to swift rlhf",
                 "chosen and rejected replies are batched as pairs; drop --packing");
  problems.check(!data.padding_free, "--padding_free does not apply to swift rlhf",
                 "chosen and rejected replies are batched as pairs; drop --padding_free");
  problems.check(!o.online() || (!data.streaming && !data.lazy_tokenize),
                 "--rlhf_type grpo encodes its prompts up front: --streaming and --lazy_tokenize do not apply",
                 "drop them (prompts are small)");
  problems.check(o.rlhf_type != "kto" || !data.streaming, "--rlhf_type kto does not read --streaming data",
                 "its KL term pairs rows before training: drop --streaming (--lazy_tokenize keeps memory low)");
  problems.check(data.cached_dataset.empty() && data.cached_val_dataset.empty(),
                 "swift rlhf does not read cached datasets (they hold no rejected replies)",
                 "give the preference data with --dataset");
  // Tensor, pipeline, expert and context parallelism split the policy and the reference alike (log-probabilities
  // over the split vocabulary, the reference's passes through every stage before the policy's, its experts over the
  // same group, each row's sums over the ranks holding its shares).
  const distributed::ParallelOptions& parallel = o.training.parallel;
  // CPO, SimPO and ORPO log the logits' mean at every position, pads included, where transformers' pads attend to the
  // real tokens only; ring and Ulysses attention have no such mask.
  problems.check(parallel.cp_size == 1 || o.reward_model() || o.online() || !o.preference.needs_position_logit_means(),
                 "swift rlhf --rlhf_type " + o.rlhf_type + " with context parallelism (--cp_size/--sequence_parallel_size: " +
                     std::to_string(parallel.cp_size) + " ranks) is not available yet (its logits metrics average every position, pads masked; DPO, KTO and "
                     "reward models split rows over ranks)",
                 "split the model with --tp_size or --pp_size, or use data parallelism (--deepspeed zero3)");
  problems.raise();
  o.ref_model = hub::resolve_model(o.ref_model.string(), hub::hub_options(flags), "--ref_model");  // org/name: a hub id
  if (o.distillation())
    o.gkd.teacher_model = hub::resolve_model(o.gkd.teacher_model.string(), hub::hub_options(flags), "--teacher_model");
  // Pairs (labelled replies for kto; prompts for grpo), scored on the last reply unless said otherwise (orpo: every
  // reply).
  using RowKind = templates::TemplateOptions::RowKind;
  data.row_kind = o.rlhf_type == "kto"     ? RowKind::kLabelledReply
                  : o.online()            ? RowKind::kPrompt
                  : o.distillation()      ? RowKind::kConversation
                                          : RowKind::kPreferencePair;
  if (o.online()) {  // as ms-swift for GRPO: one micro-batch per step, long prompts cut on the left
    if (!flags.given("gradient_accumulation_steps") && !flags.given("global_batch_size")) o.training.loop.gradient_accumulation_steps = 1;
    if (!flags.given("truncation_strategy")) {
      data.truncation = data::Truncation::kLeft;
      data.truncation_strategy = "left";
    }
  }
  if (data.loss_scale.empty()) data.loss_scale = o.rlhf_type == "orpo" ? "default" : "last_round";
  if (!o.reward_model() && !o.online() && !o.distillation()) {
    if (o.preference.method == PreferenceMethod::kDpo && o.preference.loss_type == "hinge" && o.preference.label_smoothing > 0)
      log_warn("--label_smoothing has no effect with --loss_type hinge (as ms-swift)");
    if (o.rlhf_type == "simpo" && o.preference.cpo_alpha > 0)
      log_info("--rlhf_type simpo trains CPO-SimPO (the SimPO loss plus ", o.preference.cpo_alpha,
               " x the NLL of the chosen replies, as ms-swift); --cpo_alpha 0 gives pure SimPO");
  }
  return o;
}

}  // namespace swift::rlhf
