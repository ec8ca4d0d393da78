// The training job (see trainer.h), top to bottom: set up the ranks -> build the model -> build the data -> the
// optimizer -> resume -> loop { step; log; evaluate; save }. The step is train_step (training_step.h); everything
// that depends on how the ranks share the work is the ParallelStrategy's.
#include "swift/train/trainer.h"

#include <torch/utils.h>

#include <cmath>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/core/progress.h"
#include "swift/data/dataset.h"
#include "swift/data/training_rows.h"
#include "swift/model/model_config.h"
#include "swift/distributed/pipeline_schedule.h"
#include "swift/model/parameter_layout.h"
#include "swift/model/expert_parallel.h"
#include "swift/model/tensor_parallel.h"
#include "swift/train/layout_plan.h"
#include "swift/quant/quant_config.h"
#include "swift/train/checkpoints.h"
#include "swift/train/evaluation.h"
#include "swift/train/galore_adamw.h"
#include "swift/train/memory_report.h"
#include "swift/train/training_log.h"
#include "swift/train/training_model.h"
#include "swift/train/training_step.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::train {

namespace {

// How many optimizer steps the run has and how many micro-batches each takes.
struct StepPlan {
  int64_t accumulation = 1;     // micro-batches per step (fewer in an epoch's last step)
  int64_t steps_per_epoch = 1;
  int64_t total_steps = 1;
  std::optional<int64_t> batches_per_epoch;  // micro-batches in one pass; unknown when streaming
  // As transformers 5's Trainer: an epoch has ceil(micro-batches / accumulation) steps and its last step takes the
  // micro-batches that are left, so no optimizer step spans two epochs.
  int64_t micro_batches_in(int64_t step) const {
    if (!batches_per_epoch) return accumulation;
    return std::min(accumulation, *batches_per_epoch - (step % steps_per_epoch) * accumulation);
  }
};

StepPlan plan_steps(const TrainingOptions& options, const data::TrainData& data, int world_size) {
  StepPlan plan;
  const int64_t batch = options.loop.per_device_train_batch_size;
  plan.accumulation = options.loop.gradient_accumulation_steps;
  if (plan.accumulation <= 0) {  // as ms-swift: a global batch of about 16 samples
    const int64_t per_step = batch * world_size;
    plan.accumulation = std::max<int64_t>(1, (16 + per_step - 1) / per_step);
  }
  // A stream has no known length: as transformers with an iterable dataset, an epoch is then --max_steps.
  plan.batches_per_epoch = data.batches_per_epoch();
  const int64_t max_steps = options.schedule.max_steps;
  plan.steps_per_epoch = std::max<int64_t>(
      1, plan.batches_per_epoch ? (*plan.batches_per_epoch + plan.accumulation - 1) / plan.accumulation : max_steps);
  plan.total_steps = max_steps > 0 ? max_steps
                                   : std::max<int64_t>(1, std::llround(options.schedule.num_train_epochs * plan.steps_per_epoch));
  return plan;
}

LrScheduleOptions schedule_options(const TrainingOptions& options, int64_t total_steps) {
  LrScheduleOptions s;
  s.type = options.schedule.type;
  s.learning_rate = options.optimizer.learning_rate;
  s.total_steps = total_steps;
  s.warmup_steps = resolve_warmup_steps(options.schedule.warmup_steps, options.schedule.warmup_ratio, total_steps);
  s.min_lr_rate = options.schedule.min_lr_rate;
  return s;
}

// GaLore's AdamW (--use_galore): the targeted matrices projected, decayed (ms-swift's GaLore group); the others
// as AdamW groups them.
std::unique_ptr<Optimizer> make_galore_optimizer(const OptimizerOptions& o, model::CausalLM& model,
                                                 const distributed::ParallelStrategy& parallel) {
  SWIFT_CHECK(!parallel.offloads_optimizer(), UsageError,
              o.galore->source + " with an optimizer offload (--deepspeed *_offload) is not available",
              "drop the offload: GaLore's optimizer state is low-rank already");
  const auto exempt = model::no_weight_decay(model);
  GaLoreGroup low_rank{{}, o.weight_decay, true}, decay{{}, o.weight_decay, false}, no_decay{{}, 0.0, false};
  for (const auto& [name, p] : parallel.optimizer_parameters()) {
    if (galore_projects(*o.galore, name, p)) low_rank.params.emplace_back(name, p);
    else (exempt.count(name) ? no_decay : decay).params.emplace_back(name, p);
  }
  auto optimizer = std::make_unique<GaLoreAdamW>(std::vector<GaLoreGroup>{low_rank, decay, no_decay},
                                                 AdamWHyper{o.beta1, o.beta2, o.epsilon}, o.galore->settings);
  optimizer->set_lr(o.learning_rate);
  log_info(o.galore->source, ": ", optimizer->describe());
  return optimizer;
}

// AdamW over the trainable parameters this rank updates, with weight decay on all but biases and norm weights (as
// transformers' Trainer); GaLore's when asked.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& o, model::CausalLM& model,
                                          const distributed::ParallelStrategy& parallel) {
  SWIFT_CHECK(!parallel.trainable().empty(), UsageError, "nothing to train: no parameter requires a gradient",
              "check --train_type and --target_modules");
  if (o.galore) return make_galore_optimizer(o, model, parallel);
  const auto exempt = model::no_weight_decay(model);
  AdamWGroup decay{{}, o.weight_decay}, no_decay{{}, 0.0};
  for (const auto& [name, p] : parallel.optimizer_parameters()) (exempt.count(name) ? no_decay : decay).params.emplace_back(name, p);
  auto optimizer = std::make_unique<AdamW>(std::vector<AdamWGroup>{decay, no_decay}, AdamWHyper{o.beta1, o.beta2, o.epsilon});
  optimizer->set_lr(o.learning_rate);
  if (parallel.offloads_optimizer()) {
    optimizer->offload_to(c10::Device(c10::kCPU));
    log_info("optimizer offload: AdamW state and fp32 master weights in CPU RAM, updated there each step");
  }
  return optimizer;
}

// args.json of the run and its checkpoints: the flags as given, and what they resolved to where infer / deploy /
// export need it (the template, the base model, how a QLoRA base is quantized: as ms-swift records them).
json run_args(const TrainingOptions& options, const TrainingModel& policy) {
  json args = options.args;
  args["template"] = policy.template_name.empty() ? json(nullptr) : json(policy.template_name);
  args["loss_scale"] = data::resolved_loss_scale(options.data, policy.template_name);
  args["model"] = fs::absolute(options.model.dir).string();
  if (const auto& q = policy.quantization) {
    args["quant_method"] = "bnb";
    args["quant_bits"] = q->bits;
    args["bnb_4bit_quant_type"] = quant::four_bit_type_name(q->four_bit.type);
    args["bnb_4bit_use_double_quant"] = q->four_bit.double_quant;
    args["bnb_4bit_blocksize"] = q->four_bit.blocksize;
  }
  return args;
}

// After `in_a_row` skipped steps in a row (gradients not finite): training has diverged or its data is broken.
// Stops with the last checkpoint as it was (every skipped step left the weights unchanged).
void stop_if_diverged(int64_t in_a_row, int64_t limit, int64_t step, const std::optional<fs::path>& last_checkpoint) {
  SWIFT_CHECK(in_a_row < limit, DataError,
              "step " + std::to_string(step) + ": the gradients were not finite (NaN or inf) in " +
                  std::to_string(in_a_row) + " steps in a row, each skipped; training stopped (last checkpoint: " +
                  (last_checkpoint ? last_checkpoint->string() : std::string("none")) + ")",
              "lower --learning_rate, look for broken rows in the data, or raise --max_nonfinite_steps");
}

}  // namespace

int run_training(const TrainingOptions& options, const TrainingHooks& hooks) {
  if (options.plan.enabled) {  // a dry run: no ranks, no weights
    run_layout_plan(options);
    return 0;
  }
  // Set up the ranks first: a rendezvous problem shows before minutes of loading.
  auto parallel = distributed::make_parallel_strategy(options.parallel, options.device, options.log_level);
  for (const auto& note : options.notes) log_info(note);
  // LibTorch seeds its default generator from the OS; dropout draws from it, so seed it (as transformers' set_seed
  // does, the same on every rank) or two runs of the same command differ.
  torch::manual_seed(options.seed);

  // The data files are read after the model (they are encoded with its tokenizer); a missing or empty one is
  // reported before minutes of loading.
  data::check_local_datasets(options.data.datasets, "--dataset");
  data::check_local_datasets(options.data.val_datasets, "--val_dataset");
  // A tensor-parallel size the model's heads, MLP width or vocabulary do not divide, or more pipeline stages than
  // layers: said before the weights load.
  if (options.parallel.splits_model() && fs::exists(options.model.dir / "config.json")) {
    const auto config = model::load_model_config(options.model.dir);
    const std::string problem = model::tensor_parallel_problem(config, static_cast<int>(options.parallel.tp_size));
    SWIFT_CHECK(problem.empty(), UsageError, "--tp_size " + std::to_string(options.parallel.tp_size) + ": " + problem,
                "choose a --tp_size that divides it, or another layout");
    SWIFT_CHECK(!config.is_moe() || options.parallel.tp_size == 1 || options.parallel.sequence_parallel, UsageError,
                "--tp_size " + std::to_string(options.parallel.tp_size) + " on a mixture-of-experts model (" +
                    config.model_type + ") needs --sequence_parallel true: each rank routes its own part of the "
                    "sequence through whole experts (as Megatron-Core, which requires it too)",
                "add --sequence_parallel true, or drop --tp_size");
    // Under tensor parallelism each rank would drop over its own part of the sequence, unlike one rank.
    SWIFT_CHECK(!config.is_moe() || options.moe_expert_capacity_factor <= 0 || options.parallel.tp_size == 1, UsageError,
                "--moe_expert_capacity_factor with --tp_size " + std::to_string(options.parallel.tp_size) +
                    " is not available yet",
                "drop --moe_expert_capacity_factor (dropless, ms-swift's default), or train without --tp_size");
    // Context-parallel attention runs blockwise through scaled_dot_product_attention, which has no tanh.
    SWIFT_CHECK(config.attn_logit_softcapping == 0 || options.parallel.cp_size == 1, UsageError,
                "--cp_size " + std::to_string(options.parallel.cp_size) + " on " + config.model_type +
                    ": context parallelism does not soft-cap attention scores (config.json's attn_logit_softcapping) yet",
                "train without --cp_size / --sequence_parallel_size (tensor and pipeline parallelism work)");
    // Each rank would choose longrope's factors from its own share of the positions.
    SWIFT_CHECK(config.rope.type != "longrope" || options.parallel.cp_size == 1, UsageError,
                "--cp_size " + std::to_string(options.parallel.cp_size) + " on " + config.model_type +
                    ": context parallelism does not run longrope (Phi-3's long-context RoPE) yet",
                "train without --cp_size / --sequence_parallel_size (pipeline and data parallelism, ZeRO work)");
    SWIFT_CHECK(!config.latent_attention || options.parallel.cp_size == 1, UsageError,
                "--cp_size " + std::to_string(options.parallel.cp_size) + " on " + config.model_type +
                    ": context parallelism does not run latent attention (DeepSeek's MLA) yet",
                "train without --cp_size / --sequence_parallel_size (pipeline, expert and data parallelism work)");
    // The experts' LoRA branches hold every expert: not split with the experts yet.
    SWIFT_CHECK(options.tuner.lora.target_parameters.empty() || options.parallel.ep_size == 1, UsageError,
                "--target_parameters with --expert_model_parallel_size " + std::to_string(options.parallel.ep_size) +
                    " is not available yet",
                "train the experts' LoRA with --ep_size 1 (tensor, pipeline, context and data parallelism take it)");
    const std::string experts = model::expert_parallel_problem(config, static_cast<int>(options.parallel.ep_size));
    SWIFT_CHECK(experts.empty(), UsageError, "--expert_model_parallel_size " + std::to_string(options.parallel.ep_size) + ": " + experts,
                "choose an --expert_model_parallel_size that divides the experts, or drop it");
    if (options.parallel.pp_size > 1)
      distributed::pipeline_layer_split(config.num_hidden_layers,
                                        static_cast<int>(options.parallel.pp_size * options.parallel.virtual_stages),
                                        options.parallel.first_stage_layers, options.parallel.last_stage_layers);
  }
  // Build the model, then the data it is encoded for, then what the command trains it for.
  TrainingModel policy = build_training_model(options, hooks, *parallel);
  const int64_t batch = options.loop.per_device_train_batch_size;
  const int64_t global_batch = batch * parallel->data_parallel_size();  // every replica's samples of one micro-step
  const int64_t max_length = options.data.max_length_for(policy.model->config().max_position_embeddings);
  data::TrainingData data = data::load_training_data(
      options.data, {*policy.chat, policy.template_name, *policy.tokenizer, max_length}, global_batch, hooks.prepare_rows);
  policy.model->set_gradient_checkpointing(options.model.gradient_checkpointing);
  // This rank's part of the policy before the objective loads any model beside it, which is split alike.
  parallel->assign_ownership(policy.model);
  // Online methods train on what the policy generates for the dataset's rows.
  const auto run_dir = std::make_shared<fs::path>();
  if (hooks.make_train_data)
    data.train = hooks.make_train_data(std::move(data.train),
                                       RolloutContext{options, policy.model, *policy.chat, *policy.tokenizer, *parallel, run_dir});
  const auto objective = hooks.make_objective(
      ObjectiveContext{options, policy.model, policy.load, options.tuner.quantization, parallel->shards_parameters(),
                       [&parallel](model::CausalLM& frozen) { parallel->split_frozen_model(frozen); }});

  // The optimizer over what this rank updates, and the schedule.
  const StepPlan plan = plan_steps(options, *data.train, parallel->data_parallel_size());
  const LrScheduleOptions schedule_settings = schedule_options(options, plan.total_steps);
  const LrSchedule schedule(schedule_settings);
  const auto optimizer = make_optimizer(options.optimizer, policy.model, *parallel);
  log_memory_estimate({policy.model, *objective, *parallel, options.tuner.adapter(), policy.quantization.has_value(),
                       options.model.autocast, batch, data.longest_example, max_length, options.model.gradient_checkpointing,
                       optimizer.get(), plan.accumulation});
  std::optional<GradScaler> scaler;  // float16: dynamic loss scaling
  if (options.model.loss_scaling) scaler.emplace(GradScalerOptions{}, policy.model->device());
  GradScaler* const loss_scaler = scaler ? &*scaler : nullptr;

  // The run folder, then resume: the optimizer state, the RNG and the data position.
  const json args = run_args(options, policy);
  TrainingLog log(options.loop.output_dir, options.loop.add_version, args, *parallel);
  *run_dir = log.run_dir();
  log_info("run folder ", log.run_dir().string(), ": ", plan.total_steps, " steps of ", plan.accumulation, " x ", batch,
           " samples", parallel->data_parallel_size() > 1 ? " x " + std::to_string(parallel->data_parallel_size()) + " data-parallel ranks" : std::string(),
           ", lr ", options.optimizer.learning_rate, " (", options.schedule.type_name, ", ", schedule_settings.warmup_steps,
           " warm-up)");
  const int64_t start_step = resume_training(options.loop, plan.total_steps, global_batch, *optimizer, *data.train,
                                             loss_scaler, *parallel);
  Checkpoints checkpoints(log.run_dir(), options.loop, *parallel);
  const CheckpointSource saved{policy.model, options.tuner.adapter() ? &policy.lora : nullptr, options.model.save_dtype,
                               options.model.dir, policy.quantization, options.model.torch_dtype, args, *optimizer,
                               *data.train, loss_scaler, global_batch};

  // The loop.
  parallel->begin_training(policy.model);
  StepContext context{policy.model, *objective, *parallel, *optimizer, loss_scaler, options.model.autocast,
                      options.optimizer.max_grad_norm, policy.pad_id};
  MetricWindow window(objective->metric_names());
  const LoopOptions& loop = options.loop;
  policy.model->train();
  Progress progress("train", plan.total_steps - start_step, parallel->main_rank());
  log.begin(start_step, plan.total_steps, plan.steps_per_epoch, policy.model->device());
  int64_t nonfinite_in_a_row = 0;
  for (int64_t step = start_step; step < plan.total_steps; ++step) {
    const StepResult result = train_step(context, *data.train, plan.micro_batches_in(step), schedule.lr(step),
                                         step == start_step, window);
    log.add_step(result.grad_norm);
    progress.advance();
    const int64_t done = step + 1;
    nonfinite_in_a_row = result.skipped ? nonfinite_in_a_row + 1 : 0;
    if (result.skipped && !loss_scaler)
      log_warn("step ", done, ": the gradient norm is ", result.grad_norm, ": the update is skipped");
    stop_if_diverged(nonfinite_in_a_row, loop.max_nonfinite_steps, done, checkpoints.last());
    const bool last = done == plan.total_steps;
    // The learning rate logged is the one after this step's scheduler step (the next step's), as the HF Trainer
    // and so ms-swift log it.
    if (done % loop.logging_steps == 0 || last) log.log_train(done, window, *objective, schedule.lr(done));
    if (!data.val.empty() && (done % loop.eval_steps == 0 || last))
      log.log_eval(done, evaluate(policy.model, *objective, *parallel, data.val, loop.per_device_eval_batch_size,
                                  policy.pad_id, options.model.autocast));
    if (done % loop.save_steps == 0 || last) checkpoints.save(done, saved, last);
  }
  progress.finish();
  parallel->end_training();
  log.finish();
  if (const auto dropped = data.train->report(); !dropped.empty()) log_info(dropped);
  log_info("last checkpoint: ", checkpoints.last() ? checkpoints.last()->string() : std::string("none"));
  return 0;
}

}  // namespace swift::train
