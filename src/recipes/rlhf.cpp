// swift rlhf: preference alignment on pairs (chosen vs rejected reply) with the training job sft runs (LoRA,
// QLoRA, full, several ranks, ZeRO): only the objective differs. DPO scores both replies under the policy and a
// frozen reference (the base with the adapter switched off for LoRA, a loaded copy for full fine-tuning); CPO,
// SimPO and ORPO need no reference. Defaults are ms-swift's (docs/rlhf.md).
#include <ATen/ATen.h>
#include <torch/utils.h>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/model/autocast.h"
#include "swift/model/checkpoint.h"
#include "swift/recipes/commands.h"
#include "swift/recipes/trainer.h"
#include "swift/train/preference_loss.h"
#include "swift/tuners/lora.h"

namespace swift::recipes {

namespace {

// The chosen and rejected rows of a pair batch, scored in one forward pass.
class PreferenceObjective : public TrainingObjective {
 public:
  PreferenceObjective(train::PreferenceConfig config, model::CausalLM reference)
      : config_(std::move(config)), reference_(std::move(reference)) {}

  train::Batch collate(const std::vector<const train::Example*>& items, int64_t pad_id) const override {
    return train::collate_pairs(items, pad_id);
  }
  double units(const train::Batch&) const override { return 1.0; }

  std::vector<std::string> metric_names() const override {
    std::vector<std::string> names = {"loss", "rewards/chosen", "rewards/rejected", "rewards/accuracies",
                                      "rewards/margins", "logps/chosen", "logps/rejected"};
    const bool dpo = config_.method == train::PreferenceMethod::kDpo;
    if (dpo && config_.loss_type == "ipo") names.insert(names.end(), {"logps_mean/chosen", "logps_mean/rejected"});
    names.insert(names.end(), {"logits/chosen", "logits/rejected"});
    if (!dpo || config_.rpo_alpha) names.push_back("nll_loss");
    if (config_.method == train::PreferenceMethod::kOrpo) names.insert(names.end(), {"log_odds_ratio", "log_odds_chosen"});
    return names;
  }

  MicroBatchResult compute(model::CausalLM& policy, const train::Batch& batch) override {
    const c10::Device device = policy->device();
    model::ForwardArgs args;
    args.input_ids = batch.input_ids.to(device);
    // Right padding: causal attention alone keeps real tokens from seeing pads. CPO and ORPO log the logits at
    // every position, pads included, so there the pads attend as in transformers (masked).
    if (config_.needs_position_logit_means()) {
      args.attention_mask = batch.attention_mask.to(device);
      // Positions count on through the pads, as transformers numbers them without position_ids.
      args.position_ids = at::arange(batch.input_ids.size(1), args.input_ids.options()).expand_as(args.input_ids);
    }
    const at::Tensor hidden = policy->forward_hidden(args);
    const auto policy_logps = train::sequence_logps_from_hidden(
        hidden, batch.labels, [&](const at::Tensor& h) { return policy->logits(h); });
    at::Tensor position_means;
    std::optional<train::SequenceLogps> reference_logps;
    {
      torch::NoGradGuard no_grad;
      if (config_.needs_position_logit_means()) position_means = policy->vocab_mean_logits(hidden.detach());
      if (config_.needs_reference()) reference_logps = reference_forward(policy, args, batch.labels);
    }
    auto out = train::preference_loss(config_, policy_logps, reference_logps ? &*reference_logps : nullptr,
                                      position_means);
    MicroBatchResult result;
    result.loss = out.loss;
    result.metrics.push_back({"loss", out.loss.detach().item<double>(), 1.0});
    for (const auto& [name, v] : out.metrics) result.metrics.push_back({name, v, 1.0});
    return result;
  }

 private:
  // The reference's log-probabilities: the loaded reference model, or the policy with its adapters off.
  train::SequenceLogps reference_forward(model::CausalLM& policy, const model::ForwardArgs& args,
                                         const at::Tensor& labels) {
    if (reference_) {
      const at::Tensor hidden = reference_->forward_hidden(args);
      return train::sequence_logps_from_hidden(hidden, labels, [&](const at::Tensor& h) { return reference_->logits(h); });
    }
    tuners::AdaptersDisabled base(policy);
    const at::Tensor hidden = policy->forward_hidden(args);
    return train::sequence_logps_from_hidden(hidden, labels, [&](const at::Tensor& h) { return policy->logits(h); });
  }

  train::PreferenceConfig config_;
  model::CausalLM reference_;
};

std::vector<cli::FlagSpec> rlhf_flag_table() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"rlhf_type", FlagType::kString, "dpo", "dpo, cpo, simpo or orpo"},
      {"ref_model", FlagType::kString, "", "dpo: the frozen reference model folder (default: --model; LoRA: the base with the adapter switched off)"},
      {"beta", FlagType::kFloat, "", "how far the policy may move from the reference (default 0.1; simpo 2.0)"},
      {"loss_type", FlagType::kString, "", "dpo: sigmoid (default), hinge, ipo, robust; cpo: sigmoid (default), hinge, ipo, simpo"},
      {"label_smoothing", FlagType::kFloat, "0", "probability that a pair's preference is wrong (sigmoid: cDPO; robust)"},
      {"rpo_alpha", FlagType::kFloat, "", "dpo: add rpo_alpha x the NLL of the chosen replies (RPO)"},
      {"cpo_alpha", FlagType::kFloat, "1.0", "cpo/simpo: weight of the NLL of the chosen replies (0: pure SimPO)"},
      {"simpo_gamma", FlagType::kFloat, "1.0", "simpo: target reward margin"},
      {"max_completion_length", FlagType::kInt, "512", "accepted for ms-swift command lines; these methods truncate by --max_length"},
  };
  for (auto& f : train_flags(false)) {
    // As ms-swift: preference losses score the last reply only, and TRL turns dropout off.
    if (f.name == "loss_scale") {
      f.default_value = "";
      f.help = "which tokens are scored: last_round (default; orpo: default), default, all";
    }
    if (f.name == "lora_dropout") {
      f.default_value = "0";
      f.help = "dropout on the LoRA input (0: as TRL, which turns dropout off for preference training)";
    }
    flags.push_back(f);
  }
  return flags;
}

train::PreferenceConfig preference_config(const cli::Flags& flags) {
  train::PreferenceConfig c;
  const std::string type = flags.str("rlhf_type");
  if (type == "dpo") {
    c.method = train::PreferenceMethod::kDpo;
  } else if (type == "cpo" || type == "simpo") {  // ms-swift runs simpo as CPO with the simpo loss
    c.method = train::PreferenceMethod::kCpo;
  } else if (type == "orpo") {
    c.method = train::PreferenceMethod::kOrpo;
  } else if (type == "kto" || type == "rm") {
    throw UsageError("--rlhf_type " + type + " is not available in this version of swift",
                     "use dpo, cpo, simpo or orpo (docs/rlhf.md lists what each needs)");
  } else {
    throw UsageError("--rlhf_type " + type + " is not known", "use dpo, cpo, simpo or orpo");
  }
  c.loss_type = flags.str("loss_type");
  if (c.loss_type.empty()) c.loss_type = type == "simpo" ? "simpo" : "sigmoid";
  c.beta = flags.given("beta") ? flags.number("beta") : (type == "simpo" ? 2.0 : 0.1);
  c.label_smoothing = flags.number("label_smoothing");
  if (flags.given("rpo_alpha")) c.rpo_alpha = flags.number("rpo_alpha");
  c.cpo_alpha = flags.number("cpo_alpha");
  c.simpo_gamma = flags.number("simpo_gamma");
  train::validate(c);
  SWIFT_CHECK(!c.rpo_alpha || c.method == train::PreferenceMethod::kDpo, UsageError,
              "--rpo_alpha applies to --rlhf_type dpo", "cpo/simpo weigh the NLL with --cpo_alpha; orpo always adds it");
  return c;
}

std::unique_ptr<TrainingObjective> make_preference_objective(const ObjectiveContext& ctx) {
  train::PreferenceConfig config = preference_config(ctx.flags);
  if (config.method == train::PreferenceMethod::kDpo && config.loss_type == "hinge" && config.label_smoothing > 0)
    log_warn("--label_smoothing has no effect with --loss_type hinge (as ms-swift)");
  if (ctx.flags.str("rlhf_type") == "simpo" && config.cpo_alpha > 0)
    log_info("--rlhf_type simpo trains CPO-SimPO (the SimPO loss plus ", config.cpo_alpha,
             " x the NLL of the chosen replies, as ms-swift); --cpo_alpha 0 gives pure SimPO");
  const std::string ref_flag = ctx.flags.str("ref_model");
  SWIFT_CHECK(config.needs_reference() || ref_flag.empty(), UsageError,
              "--rlhf_type " + ctx.flags.str("rlhf_type") + " is reference-free: --ref_model is not used",
              "drop --ref_model (as ms-swift: CPO/SimPO/ORPO train without a reference model)");
  model::CausalLM policy = ctx.policy;  // a handle: the same module
  if (ctx.lora) tuners::set_lora_dropout(policy, ctx.flags.number("lora_dropout"));
  model::CausalLM reference{nullptr};
  if (config.needs_reference()) {
    const bool adapters_trained_in_full = ctx.lora && !ctx.flags.list("modules_to_save").empty();
    if (ctx.lora && ref_flag.empty() && !adapters_trained_in_full) {
      log_info("reference model: the base model (the LoRA adapter switched off for the reference pass)");
    } else {
      const std::filesystem::path dir = ref_flag.empty() ? ctx.model_dir : std::filesystem::path(ref_flag);
      SWIFT_CHECK(ctx.zero_stage < 3, UsageError,
                  "ZeRO-3 shards the policy; a separate reference model (" + dir.string() + ") is not supported with it",
                  "use --train_type lora (the reference is the base with the adapter off) or --deepspeed zero2");
      const model::LoadOptions& load = ctx.load;  // as the policy was loaded (--init_strategy: the same weights)
      if (adapters_trained_in_full)
        log_info("reference model: ", dir.string(), " (--modules_to_save trains base weights, so the adapter-off "
                 "policy is not the base)");
      else
        log_info("reference model: ", dir.string(), " (frozen)");
      reference = with_context("loading the reference model " + dir.string(), [&] { return model::load_model(dir, load); });
      reference->eval();
      for (auto& p : reference->parameters()) p.set_requires_grad(false);
    }
  }
  return std::make_unique<PreferenceObjective>(std::move(config), std::move(reference));
}

}  // namespace

std::vector<cli::FlagSpec> rlhf_flags() { return rlhf_flag_table(); }

int run_rlhf(const std::vector<std::string>& args) {
  {  // bad values before minutes of loading
    const auto flags = cli::parse_flags("rlhf", rlhf_flag_table(), args);
    preference_config(flags);
    SWIFT_CHECK(!flags.boolean("packing"), UsageError, "--packing does not apply to swift rlhf",
                "chosen and rejected replies are batched as pairs; drop --packing");
    SWIFT_CHECK(flags.list("cached_dataset").empty() && flags.list("cached_val_dataset").empty(), UsageError,
                "swift rlhf does not read cached datasets (they hold no rejected replies)",
                "give the preference data with --dataset");
  }
  return run_training("rlhf", rlhf_flag_table(), args, false, make_preference_objective);
}

}  // namespace swift::recipes
