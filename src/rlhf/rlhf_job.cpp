// swift rlhf's part of the training job (see rlhf_job.h): the reference model (the base with the adapter switched
// off for LoRA, a loaded copy for full fine-tuning; none for CPO, SimPO, ORPO, RM), KTO's KL rows and the reward
// model's score head.
#include "swift/rlhf/rlhf_job.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/model/context_parallel.h"
#include "swift/quant/quantized_loading.h"
#include "swift/io/hf_config.h"
#include "swift/rlhf/gkd_objective.h"
#include "swift/rlhf/grpo_objective.h"
#include "swift/rlhf/preference_objectives.h"
#include "swift/train/megatron_flags.h"
#include "swift/tuners/lora.h"

namespace swift::rlhf {

namespace {

// rm: the policy becomes a *ForSequenceClassification model with one output (ms-swift's task_type seq_cls,
// num_labels 1); with LoRA the new head is trained in full and saved with the adapter, as PEFT's SEQ_CLS task.
train::ModelChange make_reward_model(model::CausalLM& policy, uint64_t seed, int64_t pad_id) {
  if (!policy->is_sequence_classifier()) {  // a checkpoint being resumed already is one
    policy->make_sequence_classifier(1, seed, pad_id);
    log_info("reward model: a score head (1 output) replaces lm_head; saved as ",
             policy->config().raw["architectures"][0].get<std::string>());
  }
  return {{"score"}, "SEQ_CLS"};
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
void turn_dropout_off(const train::ObjectiveContext& ctx) {
  if (!ctx.options.tuner.adapter()) return;
  if (ctx.options.tuner.lora.lora_dropout != 0)
    log_info("--lora_dropout ", ctx.options.tuner.lora.lora_dropout,
             " has no effect in swift rlhf: preference training turns dropout off, as ms-swift");
  model::CausalLM policy = ctx.policy;  // a handle: the same module
  tuners::set_lora_dropout(policy, 0.0);
}

// The preference losses do not add a mixture-of-experts model's load-balancing loss (nor drop tokens over the
// experts' capacity) yet: said, not skipped.
void refuse_router_aux_loss(const train::ObjectiveContext& ctx) {
  if (!ctx.policy->config().is_moe()) return;
  const std::vector<std::string> given = train::router_flags_given(ctx.options);
  const std::string flag = given.empty() ? std::string() : given.front();
  SWIFT_CHECK(given.empty(), UsageError,
              "swift rlhf with " + flag + " is not available yet (the routers' load balancing is trained in swift sft/pt)",
              "leave " + flag + " unset, ms-swift's default");
}

// The frozen reference of DPO and KTO: null for the policy with its adapter switched off (LoRA), else --ref_model
// (default --model) loaded as the policy was.
model::CausalLM reference_model(const train::ObjectiveContext& ctx, const RlhfOptions& options) {
  const train::TrainingOptions& t = ctx.options;
  const bool lora = t.tuner.adapter();
  const bool adapters_trained_in_full = lora && !t.tuner.lora.modules_to_save.empty();
  if (lora && options.ref_model.empty() && !adapters_trained_in_full) {
    log_info("reference model: the base model (the LoRA adapter switched off for the reference pass)");
    return model::CausalLM{nullptr};
  }
  const std::filesystem::path dir = options.ref_model.empty() ? t.model.dir : options.ref_model;
  SWIFT_CHECK(!ctx.parameters_sharded, UsageError,
              "ZeRO-3 shards the policy; a separate reference model (" + dir.string() + ") is not supported with it",
              "use --train_type lora (the reference is the base with the adapter off) or --deepspeed zero2");
  // As the policy was loaded (--init_strategy: the same weights), but full fine-tuning's fp32 masters are not
  // needed for a frozen model: it keeps --torch_dtype (as ms-swift loads it; auto: the checkpoint's).
  model::LoadOptions load = ctx.load;
  if (!lora) load.dtype = t.model.torch_dtype;
  if (adapters_trained_in_full)
    log_info("reference model: ", dir.string(), " (--modules_to_save trains base weights, so the adapter-off "
             "policy is not the base)");
  else
    log_info("reference model: ", dir.string(), " (frozen)");
  auto reference = with_context("loading the reference model " + dir.string(),
                                [&] { return quant::load_model(dir, load, ctx.quantization); });
  reference->eval();
  for (auto& p : reference->parameters()) p.set_requires_grad(false);
  if (ctx.split_like_policy) ctx.split_like_policy(reference);  // this rank's stage, slices and experts, as the policy
  return reference;
}

// The ranks sharing each row (context parallelism).
int row_shares(const train::ObjectiveContext& ctx) {
  const model::ContextParallel* cp = ctx.policy->context_parallel();
  return cp ? cp->comm->size() : 1;
}

// The stop tokens of generation: the template's end of turn, then generation_config's EOS tokens.
std::vector<int64_t> generation_stop_ids(const train::RolloutContext& c) {
  std::vector<int64_t> ids = c.chat.stop_token_ids();
  for (const auto id : io::load_generation_config(c.options.model.dir).eos_token_ids)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

// GRPO: the loop trains on rollouts (grpo_rollout.h) that share their figures with the objective that logs them.
train::TrainingHooks grpo_hooks(const RlhfOptions& options) {
  train::TrainingHooks hooks;
  auto figures = std::make_shared<RolloutFigures>();
  auto kl_reference = std::make_shared<model::CausalLM>(nullptr);  // --kl_in_reward: the rollouts score with it
  hooks.make_train_data = [&options, figures, kl_reference](std::unique_ptr<data::TrainData> prompts,
                                                            const train::RolloutContext& c) {
    RolloutSetup setup;
    setup.options = options.grpo;
    setup.policy = c.policy;
    setup.chat = &c.chat;
    setup.tokenizer = &c.tokenizer;
    setup.parallel = &c.parallel;
    setup.stop_token_ids = generation_stop_ids(c);
    setup.per_device_batch = c.options.loop.per_device_train_batch_size;
    setup.accumulation = std::max<int64_t>(c.options.loop.gradient_accumulation_steps, 1);
    setup.seed = c.options.seed;
    setup.autocast = c.options.model.autocast;
    setup.save_steps = c.options.loop.save_steps;
    setup.figures = figures;
    setup.run_dir = c.run_dir;
    if (options.grpo.kl_in_reward) setup.reference = kl_reference;
    setup.reward_model_load.device = c.policy->device();  // --reward_model: beside the policy, in its --torch_dtype
    setup.reward_model_load.dtype = c.options.model.torch_dtype;
    return rollout_data(std::move(prompts), std::move(setup));
  };
  hooks.make_objective = [&options, figures, kl_reference](const train::ObjectiveContext& ctx) {
    refuse_router_aux_loss(ctx);
    turn_dropout_off(ctx);
    SWIFT_CHECK(!ctx.parameters_sharded, UsageError,
                "swift rlhf --rlhf_type grpo with ZeRO-3 is not available yet (its rollouts generate with the whole "
                "model on each rank)",
                "use --deepspeed zero2 or plain data parallelism");
    model::CausalLM reference = options.grpo.loss.beta != 0 ? reference_model(ctx, options) : model::CausalLM{nullptr};
    if (options.grpo.loss.beta == 0) log_info("reference model: none (--beta 0)");
    const std::vector<std::string> names = reward_names(options.grpo);
    if (!options.grpo.kl_in_reward) return grpo_objective(options.grpo, std::move(reference), figures, names);
    // The KL comes out of the rewards at generation (the rollouts score the reference), not the loss.
    log_info("grpo --kl_in_reward: beta x each completion's KL to the reference is taken out of its reward; the loss has no KL term");
    *kl_reference = std::move(reference);
    GrpoOptions in_loss = options.grpo;
    in_loss.loss.beta = 0;
    return grpo_objective(in_loss, *kl_reference, figures, names);  // the reference counted in its memory, not scored
  };
  return hooks;
}

// GKD's teacher: the base with the LoRA adapter off when --teacher_model is --model (ms-swift's disable_adapter),
// else the folder loaded frozen, as a reference model is.
model::CausalLM teacher_model(const train::ObjectiveContext& ctx, const GkdOptions& options) {
  const train::TrainingOptions& t = ctx.options;
  SWIFT_CHECK(!ctx.parameters_sharded, UsageError,
              "swift rlhf --rlhf_type gkd with ZeRO-3 is not available yet (the student generates with the whole model "
              "on each rank)",
              "use --deepspeed zero2 or plain data parallelism");
  const bool same = std::filesystem::weakly_canonical(options.teacher_model) == std::filesystem::weakly_canonical(t.model.dir);
  if (same && t.tuner.adapter() && t.tuner.lora.modules_to_save.empty()) {
    log_info("teacher model: the base model (the LoRA adapter switched off; --teacher_model is --model)");
    return model::CausalLM{nullptr};
  }
  model::LoadOptions load = ctx.load;
  load.dtype = t.model.torch_dtype;  // frozen: no fp32 masters (auto: the checkpoint's dtype)
  log_info("teacher model: ", options.teacher_model.string(), " (frozen)");
  auto teacher = with_context("loading the teacher model " + options.teacher_model.string(),
                              [&] { return quant::load_model(options.teacher_model, load, std::nullopt); });
  teacher->eval();
  for (auto& p : teacher->parameters()) p.set_requires_grad(false);
  return teacher;
}

// GKD: the loop trains on the dataset's replies or the student's own (gkd_rollout.h), against the teacher.
train::TrainingHooks gkd_hooks(const RlhfOptions& options) {
  train::TrainingHooks hooks;
  auto sources = std::make_shared<GkdSources>();
  hooks.make_train_data = [&options, sources](std::unique_ptr<data::TrainData> rows, const train::RolloutContext& c) {
    GkdSetup setup;
    setup.options = options.gkd;
    setup.policy = c.policy;
    setup.parallel = &c.parallel;
    setup.stop_token_ids = generation_stop_ids(c);
    setup.accumulation = std::max<int64_t>(c.options.loop.gradient_accumulation_steps, 1);
    setup.seed = c.options.seed;
    setup.autocast = c.options.model.autocast;
    setup.sources = sources;
    return gkd_data(std::move(rows), std::move(setup));
  };
  hooks.make_objective = [&options, sources](const train::ObjectiveContext& ctx) {
    refuse_router_aux_loss(ctx);
    turn_dropout_off(ctx);
    return gkd_objective(options.gkd, teacher_model(ctx, options.gkd), sources);
  };
  return hooks;
}

}  // namespace

train::TrainingHooks rlhf_hooks(const RlhfOptions& options) {
  if (options.online()) return grpo_hooks(options);
  if (options.distillation()) return gkd_hooks(options);
  train::TrainingHooks hooks;
  if (options.reward_model()) {
    hooks.make_objective = [&options](const train::ObjectiveContext& ctx) {
      refuse_router_aux_loss(ctx);
      turn_dropout_off(ctx);
      return reward_model_objective(options.center_rewards_coefficient, row_shares(ctx));
    };
    const uint64_t seed = options.training.seed;
    hooks.prepare_model = [seed](model::CausalLM& policy, int64_t pad_id) { return make_reward_model(policy, seed, pad_id); };
    hooks.removed_parameters = {model::kLmHeadWeight, "output.weight"};  // the head's name, InternLM2's too
    return hooks;
  }
  hooks.make_objective = [&options](const train::ObjectiveContext& ctx) {
    refuse_router_aux_loss(ctx);
    turn_dropout_off(ctx);
    model::CausalLM reference = options.preference.needs_reference() ? reference_model(ctx, options) : model::CausalLM{nullptr};
    return options.preference.method == PreferenceMethod::kKto
               ? kto_objective(options.preference, std::move(reference), row_shares(ctx))
               : pair_objective(options.preference, std::move(reference), row_shares(ctx));
  };
  if (options.preference.needs_kl_rows()) hooks.prepare_rows = add_kl_conversations;
  return hooks;
}

}  // namespace swift::rlhf
