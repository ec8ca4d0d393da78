// swift rlhf: preference alignment on pairs (chosen vs rejected reply) or labelled replies (KTO), and reward models,
// with the training job sft runs (LoRA, QLoRA, full, several ranks, ZeRO): only the objective differs
// (recipes/preference_objectives.h). Here: ms-swift's flags and defaults, the reference model (the base with the
// adapter switched off for LoRA, a loaded copy for full fine-tuning; none for CPO, SimPO, ORPO, RM), KTO's KL rows
// and the reward model's score head (docs/rlhf.md).
#include <ATen/ATen.h>
#include <torch/utils.h>

#include <numeric>
#include <random>

#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/model/autocast.h"
#include "swift/model/checkpoint.h"
#include "swift/recipes/commands.h"
#include "swift/recipes/preference_objectives.h"
#include "swift/recipes/trainer.h"
#include "swift/train/preference_loss.h"
#include "swift/tuners/lora.h"

namespace swift::recipes {

namespace {

// rm: the policy becomes a *ForSequenceClassification model with one output (ms-swift's task_type seq_cls,
// num_labels 1); with LoRA the new head is trained in full and saved with the adapter, as PEFT's SEQ_CLS task.
ModelChange make_reward_model(model::CausalLM& policy, const cli::Flags& flags, int64_t pad_id) {
  if (!policy->is_sequence_classifier()) {  // a checkpoint being resumed already is one
    policy->make_sequence_classifier(1, static_cast<uint64_t>(flags.integer("seed")), pad_id);
    log_info("reward model: a score head (1 output) replaces lm_head; saved as ",
             policy->config().raw["architectures"][0].get<std::string>());
  }
  return {{"score"}, "SEQ_CLS"};
}

std::vector<cli::FlagSpec> rlhf_flag_table() {
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
  for (auto& f : train_flags(false)) {
    // As ms-swift: preference losses score the last reply only, and TRL turns dropout off.
    if (f.name == "loss_scale") {
      f.default_value = "";
      f.help = "which tokens are scored: last_round (default; orpo: default), default, all";
    }
    if (f.name == "lora_dropout") {
      f.default_value = "0";
      f.help = "accepted for ms-swift command lines; 0 whatever it says: preference training turns dropout off (TRL's disable_dropout)";
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
  } else if (type == "kto") {
    c.method = train::PreferenceMethod::kKto;
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
  train::validate(c);
  SWIFT_CHECK(!c.rpo_alpha || c.method == train::PreferenceMethod::kDpo, UsageError,
              "--rpo_alpha applies to --rlhf_type dpo", "cpo/simpo weigh the NLL with --cpo_alpha; orpo always adds it");
  return c;
}

// The reply of a conversation: its messages after the last user or tool turn.
nlohmann::json::const_iterator reply_start(const nlohmann::json& messages) {
  auto start = messages.begin();
  for (auto it = messages.begin(); it != messages.end(); ++it)
    if ((*it)["role"] == "user" || (*it)["role"] == "tool") start = it + 1;
  return start;
}

// KTO's KL term compares the policy and the reference on replies that do not answer their prompt: each row gets
// "kl_messages", its own prompt followed by the reply of the row before it in a seeded shuffle (ms-swift pairs
// rows the same way, within each global batch of its shuffled data).
void add_kl_conversations(std::vector<nlohmann::json>& rows, uint64_t seed, const std::string& what) {
  if (rows.empty()) return;
  SWIFT_CHECK(rows.size() >= 2, DataError, "--rlhf_type kto needs at least 2 rows in " + what,
              "its KL term pairs each prompt with another row's reply");
  std::vector<size_t> order(rows.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t j = 0; j < order.size(); ++j) {
    const auto& own = rows[order[j]]["messages"];
    const auto& other = rows[order[(j + order.size() - 1) % order.size()]]["messages"];
    nlohmann::json kl(own.begin(), reply_start(own));
    for (auto it = reply_start(other); it != other.end(); ++it) kl.push_back(*it);
    rows[order[j]]["kl_messages"] = kl;
  }
}

// As ms-swift (TRL's disable_dropout, on by default for every preference trainer): no dropout, LoRA's included.
void turn_dropout_off(const ObjectiveContext& ctx) {
  if (!ctx.lora) return;
  if (ctx.flags.number("lora_dropout") != 0)
    log_info("--lora_dropout ", ctx.flags.number("lora_dropout"),
             " has no effect in swift rlhf: preference training turns dropout off, as ms-swift");
  model::CausalLM policy = ctx.policy;  // a handle: the same module
  tuners::set_lora_dropout(policy, 0.0);
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
  turn_dropout_off(ctx);
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
      // As the policy was loaded (--init_strategy: the same weights), but full fine-tuning's fp32 masters are not
      // needed for a frozen model: it keeps --torch_dtype (as ms-swift loads it).
      model::LoadOptions load = ctx.load;
      if (!ctx.lora && !ctx.flags.str("torch_dtype").empty()) load.dtype = parse_dtype(ctx.flags.str("torch_dtype"));
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
  return config.method == train::PreferenceMethod::kKto ? kto_objective(config, std::move(reference))
                                                        : pair_objective(config, std::move(reference));
}

}  // namespace

std::vector<cli::FlagSpec> rlhf_flags() { return rlhf_flag_table(); }

int run_rlhf(const std::vector<std::string>& args) {
  const auto flags = cli::parse_flags("rlhf", rlhf_flag_table(), args);
  const bool reward_model = flags.str("rlhf_type") == "rm";
  {  // bad values before minutes of loading
    if (!reward_model) preference_config(flags);
    SWIFT_CHECK(!reward_model || flags.str("ref_model").empty(), UsageError,
                "--rlhf_type rm trains a reward model: --ref_model is not used", "drop --ref_model");
    SWIFT_CHECK(!flags.boolean("packing"), UsageError, "--packing does not apply to swift rlhf",
                "chosen and rejected replies are batched as pairs; drop --packing");
    SWIFT_CHECK(flags.str("rlhf_type") != "kto" || !flags.boolean("streaming"), UsageError,
                "--rlhf_type kto does not read --streaming data",
                "its KL term pairs rows before training: drop --streaming (--lazy_tokenize keeps memory low)");
    SWIFT_CHECK(flags.list("cached_dataset").empty() && flags.list("cached_val_dataset").empty(), UsageError,
                "swift rlhf does not read cached datasets (they hold no rejected replies)",
                "give the preference data with --dataset");
  }
  TrainingHooks hooks;
  if (reward_model) {
    std::optional<double> center;
    if (flags.given("center_rewards_coefficient")) center = flags.number("center_rewards_coefficient");
    hooks.make_objective = [center](const ObjectiveContext& ctx) {
      turn_dropout_off(ctx);
      return reward_model_objective(center);
    };
    hooks.prepare_model = make_reward_model;
    hooks.removed_parameters = {"lm_head.weight"};
  } else {
    hooks.make_objective = make_preference_objective;
    if (preference_config(flags).needs_kl_rows()) hooks.prepare_rows = add_kl_conversations;
  }
  return run_training("rlhf", rlhf_flag_table(), args, false, hooks);
}

}  // namespace swift::recipes
