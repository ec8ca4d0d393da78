// Megatron-LM's training flags onto swift's options (see megatron_flags.h).
#include "swift/train/megatron_flags.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "swift/train/training_options.h"

namespace swift::train {

namespace {

// Flags that tune how Megatron-Core runs on GPUs (fused kernels, overlapped communication, memory layouts) without
// changing the numbers: accepted so that a pasted command line runs, and logged with what swift does instead.
struct KernelFlag {
  cli::FlagSpec spec;
  std::vector<std::string> values;  // a string flag's accepted values (a typo stays an error)
  std::string why;
};

const std::vector<KernelFlag>& kernel_flags() {
  using cli::FlagType;
  static const std::vector<KernelFlag> kFlags = {
      {{"moe_grouped_gemm", FlagType::kBool, "true", "accepted for Megatron command lines: the experts always run as grouped products"},
       {}, "each sparse layer's experts run as two grouped matrix products (at::_grouped_mm where the device has it)"},
      {{"moe_permute_fusion", FlagType::kBool, "false", "accepted for Megatron command lines; no effect"},
       {}, "the tokens are sorted by expert with one argsort per layer (no fused permute kernel)"},
      {{"moe_shared_expert_overlap", FlagType::kBool, "false", "accepted for Megatron command lines; no effect"},
       {}, "the shared expert runs after the routed experts on the same stream"},
      {{"moe_token_dispatcher_type", FlagType::kString, "alltoall", "accepted for Megatron command lines: tokens reach their experts by all-to-all under --ep_size"},
       {"alltoall", "allgather", "flex"}, "under --ep_size the tokens travel by one uneven all-to-all per layer (Megatron's alltoall dispatcher), whatever the choice"},
      {{"moe_router_dtype", FlagType::kString, "fp32", "accepted for Megatron command lines: the router's softmax is computed in float32"},
       {"none", "fp32", "fp64"}, "the router's softmax and top-k run in float32 (as transformers and Megatron's default)"},
      {{"cross_entropy_loss_fusion", FlagType::kBool, "false", "accepted for Megatron command lines; no effect"},
       {}, "the loss is computed only at the labelled positions, in chunks, without a fused kernel"},
      {{"cross_entropy_fusion_impl", FlagType::kString, "native", "accepted for Megatron command lines; no effect"},
       {"native", "te"}, "the loss is computed only at the labelled positions, in chunks, without a fused kernel"},
      {{"attention_backend", FlagType::kString, "flash", "accepted for Megatron command lines: attention is LibTorch's scaled_dot_product_attention, which picks its kernel"},
       {"flash", "fused", "unfused", "local", "auto", "flash_2", "flash_3", "flash_4"},
       "attention runs through LibTorch's scaled_dot_product_attention (flash or memory-efficient kernels where the device has them)"},
      {{"masked_softmax_fusion", FlagType::kBool, "true", "accepted for Megatron command lines; no effect"}, {}, "attention's softmax is inside scaled_dot_product_attention"},
      {{"bias_dropout_fusion", FlagType::kBool, "true", "accepted for Megatron command lines; no effect"}, {}, "there is no fused bias-dropout kernel"},
      {{"bias_activation_fusion", FlagType::kBool, "true", "accepted for Megatron command lines; no effect"}, {}, "there is no fused bias-activation kernel"},
      {{"apply_rope_fusion", FlagType::kBool, "false", "accepted for Megatron command lines; no effect"}, {}, "rotary embeddings are applied without a fused kernel"},
      {{"gradient_accumulation_fusion", FlagType::kBool, "true", "accepted for Megatron command lines; no effect"},
       {}, "gradients accumulate in the parameters' .grad across micro-batches"},
      {{"overlap_grad_reduce", FlagType::kBool, "false", "accepted for Megatron command lines: gradient reduction always overlaps the backward"},
       {}, "gradients are reduced in buckets as the backward produces them, always"},
      {{"overlap_param_gather", FlagType::kBool, "false", "accepted for Megatron command lines; no effect"},
       {}, "the distributed optimizer gathers the updated parameters after the step"},
      {{"optimizer_offload_fraction", FlagType::kFloat, "1.0", "accepted for Megatron command lines; no effect (--optimizer_cpu_offload is not available)"},
       {}, "the optimizer state stays with its rank's device (--optimizer_cpu_offload true is refused)"},
      {{"use_precision_aware_optimizer", FlagType::kBool, "false", "accepted for Megatron command lines; no effect"},
       {}, "AdamW keeps float32 master weights and moments (Megatron's defaults for --exp_avg_dtype/--main_params_dtype)"},
  };
  return kFlags;
}

// --lr_decay_style into --lr_scheduler_type; --min_lr into cosine_with_min_lr's floor.
void apply_schedule(const cli::Flags& flags, TrainingOptions& o, cli::Problems& problems) {
  ScheduleOptions& s = o.schedule;
  if (flags.given("lr_decay_style")) {
    const std::string style = flags.str("lr_decay_style");
    const bool warmup = s.warmup_ratio > 0 || s.warmup_steps > 0;
    std::optional<LrSchedulerType> type;
    if (style == "cosine") type = LrSchedulerType::kCosine;
    if (style == "linear") type = LrSchedulerType::kLinear;
    if (style == "constant") type = warmup ? LrSchedulerType::kConstantWithWarmup : LrSchedulerType::kConstant;
    problems.check(type.has_value(), "--lr_decay_style " + style + " is not available",
                   "use cosine (Megatron's default), linear or constant");
    problems.check(!type || !flags.given("lr_scheduler_type") || s.type == *type ||
                       (s.type == LrSchedulerType::kCosineWithMinLr && *type == LrSchedulerType::kCosine),
                   "--lr_decay_style " + style + " contradicts --lr_scheduler_type " + s.type_name, "give one of them");
    if (type && !flags.given("lr_scheduler_type")) {
      s.type = *type;
      s.type_name = std::string(lr_scheduler_type_name(*type));
    }
  }
  const double min_lr = flags.number("min_lr");
  problems.in_range("min_lr", min_lr, 0, o.optimizer.learning_rate, "at most --lr (" + std::to_string(o.optimizer.learning_rate) + "), e.g. a tenth of it");
  if (min_lr <= 0) return;
  // Megatron's cosine decay to an absolute floor is transformers' cosine_with_min_lr at the rate min_lr / lr (the
  // same curve: min + (max - min) x (1 + cos(pi x progress)) / 2 after a linear warm-up from 0).
  if (s.type == LrSchedulerType::kCosine || s.type == LrSchedulerType::kCosineWithMinLr) {
    problems.check(!flags.given("min_lr_rate"), "--min_lr and --min_lr_rate both set the cosine's floor", "give one of them");
    s.type = LrSchedulerType::kCosineWithMinLr;
    s.type_name = "cosine_with_min_lr";
    s.min_lr_rate = min_lr / o.optimizer.learning_rate;
  } else {
    problems.check(s.type == LrSchedulerType::kConstant || s.type == LrSchedulerType::kConstantWithWarmup,
                   "--min_lr with a " + s.type_name + " schedule is not available (swift's linear decay ends at 0)",
                   "use the cosine schedule (Megatron's default) with --min_lr, or drop --min_lr");
    if (s.type != LrSchedulerType::kLinear) o.notes.push_back("--min_lr has no effect on a constant learning rate (as in Megatron)");
  }
}

// --recompute_granularity into --gradient_checkpointing; the finer choices recompute whole layers here.
void apply_recompute(const cli::Flags& flags, TrainingOptions& o, cli::Problems& problems) {
  const std::string granularity = flags.str("recompute_granularity");
  const std::string method = flags.str("recompute_method");
  problems.check(method.empty() || method == "uniform" || method == "block",
                 "--recompute_method " + method + " is not Megatron's", "use uniform or block");
  problems.at_least("recompute_num_layers", flags.integer("recompute_num_layers"), 0, "layers, e.g. 1");
  if (flags.given("recompute_granularity")) {
    problems.check(granularity == "full" || granularity == "selective" || granularity == "none",
                   "--recompute_granularity " + granularity + " is not Megatron's", "use full, selective or none");
    const bool recompute = granularity != "none";
    problems.check(!flags.given("gradient_checkpointing") || flags.boolean("gradient_checkpointing") == recompute,
                   "--recompute_granularity " + granularity + " contradicts --gradient_checkpointing " +
                       (flags.boolean("gradient_checkpointing") ? "true" : "false"),
                   "give one of them");
    o.model.gradient_checkpointing = recompute;
    if (granularity == "selective")
      o.notes.push_back("--recompute_granularity selective: swift recomputes whole decoder layers in backward (Megatron's "
                        "full granularity), which keeps less and recomputes more than attention alone; the numbers are the same");
  }
  if (!method.empty() || flags.given("recompute_num_layers"))
    o.notes.push_back("--recompute_method / --recompute_num_layers: swift recomputes every decoder layer on its own (Megatron's "
                      "uniform method over 1 layer), whatever they say; the numbers are the same");
}

// Checkpoint contents, and --finetune (how a run starts).
void apply_checkpointing(const cli::Flags& flags, TrainingOptions& o, cli::Problems& problems) {
  if (flags.boolean("no_save_optim")) {
    o.loop.save_only_model = true;
    o.notes.push_back("--no_save_optim true: checkpoints hold the weights only (as --save_only_model true), so a run "
                      "cannot resume exactly from them");
  } else if (flags.boolean("no_save_rng")) {
    o.notes.push_back("--no_save_rng true has no effect: the random state is a few bytes of trainer_state.json, kept so "
                      "that a resume is exact (--no_save_optim true leaves out the optimizer and trainer state)");
  }
  if (flags.boolean("merge_lora")) {
    if (o.tuner.adapter()) {
      o.loop.merge_lora = true;
      problems.check(o.model.init_strategy.empty(), "--merge_lora true with --init_strategy " + o.model.init_strategy +
                         ": the merged copy reads the base from --model's files, and this base has none",
                     "drop --merge_lora true, or save the initialised model first (swift export --init_strategy)");
    } else {
      o.notes.push_back("--merge_lora true has no effect with --train_type full: the checkpoints are whole models");
    }
  }
  if (flags.given("finetune") && !flags.boolean("finetune"))
    o.notes.push_back("--finetune false has no effect: every run starts from --model's weights at step 0 (Megatron's "
                      "--finetune true); continue a run with --resume_from_checkpoint <checkpoint-N>");
}

void apply_mixture_of_experts(const cli::Flags& flags, TrainingOptions& o, cli::Problems& problems) {
  const double kHuge = std::numeric_limits<double>::max();
  o.moe_aux_loss_coeff = flags.number("moe_aux_loss_coeff");
  problems.in_range("moe_aux_loss_coeff", o.moe_aux_loss_coeff, 0, kHuge, "e.g. 1e-3");
  problems.check(o.moe_aux_loss_coeff == 0 || o.router_aux_loss_coef == 0,
                 "--moe_aux_loss_coeff (Megatron's load-balancing loss, layer by layer) and --router_aux_loss_coef "
                 "(transformers', over the layers together) are both set",
                 "give one of them");
  if (flags.given("moe_expert_capacity_factor")) {
    // Megatron-Core reads a negative factor as none (dropless); 0 would drop every row.
    const double factor = flags.number("moe_expert_capacity_factor");
    problems.check(std::isfinite(factor) && factor != 0, "--moe_expert_capacity_factor " + flags.str("moe_expert_capacity_factor") +
                       (factor == 0 ? " keeps no token" : " is not a factor"),
                   "e.g. 1.0 or 2.0; leave it out (or give -1, as Megatron) for dropless experts");
    o.moe_expert_capacity_factor = std::max(0.0, factor);
  }
  const std::string policy = flags.str("moe_token_drop_policy");
  problems.check(policy == "probs" || policy == "position", "--moe_token_drop_policy " + policy + " is not Megatron's",
                 "use probs (keep each expert's most probable tokens) or position (its earliest)");
  o.moe_drop_by_position = policy == "position";
  problems.check(!flags.boolean("moe_pad_expert_input_to_capacity"),
                 "--moe_pad_expert_input_to_capacity true is not available (the experts run on the tokens they keep, "
                 "as grouped products of uneven sizes)",
                 "leave it false");
  const int64_t etp = flags.integer("expert_tensor_parallel_size");
  problems.check(etp == 1, "--expert_tensor_parallel_size " + std::to_string(etp) + " is not available yet",
                 "leave it at 1 (ms-swift's default: each expert whole on its rank of --ep_size)");
}

}  // namespace

std::vector<cli::FlagSpec> megatron_flags() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"min_lr", FlagType::kFloat, "0", "Megatron's floor of the cosine decay, absolute: the schedule becomes cosine_with_min_lr at --min_lr / --lr"},
      {"lr_decay_style", FlagType::kString, "", "Megatron's schedule: cosine (its default), linear or constant; sets --lr_scheduler_type"},
      {"recompute_granularity", FlagType::kString, "", "Megatron's activation recomputation: full or selective (--gradient_checkpointing true: whole decoder layers recomputed in backward) or none (false)"},
      {"recompute_method", FlagType::kString, "", "uniform or block: accepted; every decoder layer is recomputed on its own (uniform over 1 layer)"},
      {"recompute_num_layers", FlagType::kInt, "0", "accepted with --recompute_method; every decoder layer is recomputed on its own"},
      {"no_save_optim", FlagType::kBool, "false", "checkpoints without the optimizer and trainer state (as --save_only_model)"},
      {"no_save_rng", FlagType::kBool, "false", "accepted; the random state stays in trainer_state.json (a few bytes) so a resume is exact"},
      {"finetune", FlagType::kBool, "true", "accepted: a run starts from --model's weights at step 0 (continue one with --resume_from_checkpoint)"},
      {"eval_iters", FlagType::kInt, "-1", "Megatron's evaluation batches: -1 (ms-swift's default), the whole validation split, is what swift evaluates"},
      {"moe_aux_loss_coeff", FlagType::kFloat, "0", "mixture-of-experts models: weight of Megatron-Core's load-balancing loss, computed layer by layer over each micro-batch's tokens and weighted by them (logged as load_balancing_loss); 0: none"},
      {"moe_expert_capacity_factor", FlagType::kFloat, "", "mixture-of-experts models: each expert takes at most factor x k x tokens / experts of a layer's (token, choice) rows on a rank, the rest dropped (logged as expert_drop_rate); unset or negative: dropless"},
      {"moe_token_drop_policy", FlagType::kString, "probs", "with --moe_expert_capacity_factor: probs keeps each expert's most probable tokens, position its earliest"},
      {"moe_pad_expert_input_to_capacity", FlagType::kBool, "false", "not available (false): the experts run on the rows they keep"},
      {"expert_tensor_parallel_size", FlagType::kInt, "1", "tensor parallelism inside each expert: 1 (ms-swift's default, each expert whole on its rank) is what swift does"},
      {"merge_lora", FlagType::kBool, "false", "LoRA: true also writes checkpoint-N-merged beside each checkpoint, the base with the adapter merged (a Hugging Face folder, as ms-swift's Megatron trainer; rank 0 reads the base again for it); false: the PEFT adapter only"},
      {"optimizer_cpu_offload", FlagType::kBool, "false", "not available under Megatron's flags (false); with data parallelism, --deepspeed zero2_offload / zero3_offload offload the optimizer"},
  };
  for (const auto& k : kernel_flags()) flags.push_back(k.spec);
  return flags;
}

std::vector<std::string> router_flags_given(const TrainingOptions& o) {
  std::vector<std::string> given;
  if (o.router_aux_loss_coef > 0) given.push_back("--router_aux_loss_coef");
  if (o.moe_aux_loss_coeff > 0) given.push_back("--moe_aux_loss_coeff");
  if (o.moe_expert_capacity_factor > 0) given.push_back("--moe_expert_capacity_factor");
  return given;
}

void apply_megatron_flags(const cli::Flags& flags, TrainingOptions& o, cli::Problems& problems) {
  for (const auto& k : kernel_flags()) {
    if (!flags.given(k.spec.name)) continue;
    const std::string value = flags.str(k.spec.name);
    if (!k.values.empty() && std::find(k.values.begin(), k.values.end(), value) == k.values.end()) {
      std::string accepted;
      for (const auto& v : k.values) accepted += (accepted.empty() ? "" : ", ") + v;
      problems.check(false, "--" + k.spec.name + " " + value + " is not Megatron's", "use one of " + accepted);
      continue;
    }
    o.notes.push_back("--" + k.spec.name + " has no effect in swift: " + k.why);
  }
  apply_schedule(flags, o, problems);
  apply_recompute(flags, o, problems);
  apply_checkpointing(flags, o, problems);
  apply_mixture_of_experts(flags, o, problems);
  const int64_t eval_iters = flags.integer("eval_iters");
  problems.check(eval_iters == -1, "--eval_iters " + std::to_string(eval_iters) + " is not available yet",
                 "leave it at -1 (the whole validation split, ms-swift's default); size the split with --split_dataset_ratio");
  problems.check(!flags.boolean("optimizer_cpu_offload"), "--optimizer_cpu_offload true is not available",
                 "with data parallelism only, --deepspeed zero2_offload (or zero3_offload) keeps the optimizer state in CPU memory");
}

}  // namespace swift::train
