// swift rlhf's flags into RlhfOptions (see rlhf_options.h).
#include "swift/rlhf/rlhf_options.h"

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
    throw UsageError("--rlhf_type " + type + " is not known", "use dpo, cpo, simpo, orpo, kto or rm");
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

}  // namespace

std::vector<cli::FlagSpec> rlhf_flags() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"rlhf_type", FlagType::kString, "dpo", "dpo, cpo, simpo, orpo, kto or rm (a reward model)"},
      {"ref_model", FlagType::kString, "", "dpo/kto: the frozen reference model folder (default: --model; LoRA: the base with the adapter switched off)"},
      {"beta", FlagType::kFloat, "", "how far the policy may move from the reference (default 0.1; simpo 2.0)"},
      {"loss_type", FlagType::kString, "", "dpo: sigmoid (default), hinge, ipo, robust, exo_pair, sppo_hard, nca_pair, aot, aot_unpaired, apo_zero, apo_down, discopop; cpo: sigmoid (default), hinge, ipo, simpo; kto: kto (default), apo_zero_unpaired"},
      {"discopop_tau", FlagType::kFloat, "0.05", "dpo --loss_type discopop: temperature of the log-ratio modulation"},
      {"label_smoothing", FlagType::kFloat, "0", "probability that a pair's preference is wrong (sigmoid: cDPO; robust)"},
      {"rpo_alpha", FlagType::kFloat, "", "dpo: add rpo_alpha x the NLL of the chosen replies (RPO)"},
      {"cpo_alpha", FlagType::kFloat, "1.0", "cpo/simpo: weight of the NLL of the chosen replies (0: pure SimPO)"},
      {"simpo_gamma", FlagType::kFloat, "1.0", "simpo: target reward margin"},
      {"desirable_weight", FlagType::kFloat, "1.0", "kto: weight of the desirable (label true) replies' losses"},
      {"undesirable_weight", FlagType::kFloat, "1.0", "kto: weight of the undesirable (label false) replies' losses"},
      {"center_rewards_coefficient", FlagType::kFloat, "", "rm: add this x mean((r_chosen + r_rejected)^2), keeping rewards centred on 0"},
      {"max_completion_length", FlagType::kInt, "512", "accepted for ms-swift command lines; these methods truncate by --max_length"},
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
  if (o.reward_model()) {
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
  problems.check(parallel.cp_size == 1 || o.reward_model() || !o.preference.needs_position_logit_means(),
                 "swift rlhf --rlhf_type " + o.rlhf_type + " with context parallelism (--cp_size/--sequence_parallel_size: " +
                     std::to_string(parallel.cp_size) + " ranks) is not available yet (its logits metrics average every position, pads masked; DPO, KTO and "
                     "reward models split rows over ranks)",
                 "split the model with --tp_size or --pp_size, or use data parallelism (--deepspeed zero3)");
  problems.raise();
  o.ref_model = hub::resolve_model(o.ref_model.string(), hub::hub_options(flags), "--ref_model");  // org/name: a hub id
  // Pairs (labelled replies for kto), scored on the last reply unless said otherwise (orpo: every reply).
  data.row_kind = o.rlhf_type == "kto" ? templates::TemplateOptions::RowKind::kLabelledReply
                                       : templates::TemplateOptions::RowKind::kPreferencePair;
  if (data.loss_scale.empty()) data.loss_scale = o.rlhf_type == "orpo" ? "default" : "last_round";
  if (!o.reward_model()) {
    if (o.preference.method == PreferenceMethod::kDpo && o.preference.loss_type == "hinge" && o.preference.label_smoothing > 0)
      log_warn("--label_smoothing has no effect with --loss_type hinge (as ms-swift)");
    if (o.rlhf_type == "simpo" && o.preference.cpo_alpha > 0)
      log_info("--rlhf_type simpo trains CPO-SimPO (the SimPO loss plus ", o.preference.cpo_alpha,
               " x the NLL of the chosen replies, as ms-swift); --cpo_alpha 0 gives pure SimPO");
  }
  return o;
}

}  // namespace swift::rlhf
