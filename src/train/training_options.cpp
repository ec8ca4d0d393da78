// A training command's flags into TrainingOptions (see training_options.h).
#include "swift/train/training_options.h"

#include <limits>

#include "swift/core/device.h"
#include "swift/core/logging.h"
#include "swift/hub/hub_flags.h"
#include "swift/hub/hub_resolver.h"
#include "swift/quant/quant_flags.h"
#include "swift/train/megatron_flags.h"
#include "swift/tuners/lora_options.h"

namespace fs = std::filesystem;

namespace swift::train {

namespace {

// Flags of ms-swift command lines that swift accepts but that change nothing, and what swift does instead.
const std::vector<std::pair<std::string, std::string>>& flags_without_effect() {
  static const std::vector<std::pair<std::string, std::string>> kWhy = {
      {"dataloader_num_workers", "batches are assembled in-process; --dataset_num_proc sets the tokenising threads"},
      {"report_to", "TensorBoard events are always written under the run folder's runs/"},
      {"model_type", "the architecture is read from the model folder's config.json"},
      {"use_logits_to_keep", "logits are always computed only where a label is (the loss is the same either way)"},
      {"load_from_cache_file", "the rows are encoded in memory each run (swift export --to_cached_dataset keeps a tokenised copy)"},
  };
  return kWhy;
}

// --torch_dtype, --bf16 and --fp16 into the load, compute and save dtypes. Full fine-tuning keeps fp32 master
// weights: --torch_dtype bfloat16 then means bf16 compute (autocast) and bf16 checkpoints. LoRA keeps the frozen
// base in --torch_dtype and the adapter in --lora_dtype (fp32). --bf16/--fp16 (transformers' mixed-precision
// switches) choose the compute dtype over whatever was loaded.
void resolve_precision(const cli::Flags& flags, bool adapter, ModelOptions& m, cli::Problems& problems) {
  auto dtype = problems.collect([&] { return parse_dtype(flags.str("torch_dtype")); }, std::optional<c10::ScalarType>{});
  m.torch_dtype = dtype;
  const bool bf16 = flags.boolean("bf16"), fp16 = flags.boolean("fp16");
  problems.check(!(bf16 && fp16), "--bf16 and --fp16 are both true", "choose one mixed-precision dtype");
  std::optional<c10::ScalarType> mixed;
  if (bf16 || fp16) {
    mixed = bf16 ? c10::kBFloat16 : c10::kHalf;
    problems.check(!dtype || *dtype == *mixed || *dtype == c10::kFloat,
                   std::string("--") + (bf16 ? "bf16" : "fp16") + " true contradicts --torch_dtype " + flags.str("torch_dtype"),
                   "drop one of them, or load float32 weights and compute in the mixed dtype");
    if (!dtype) dtype = mixed;
  }
  m.load_dtype = adapter ? dtype : std::optional<c10::ScalarType>(c10::kFloat);
  if (!adapter && dtype && (*dtype == c10::kBFloat16 || *dtype == c10::kHalf)) {
    m.autocast = *dtype;
    m.save_dtype = *dtype;
  }
  if (mixed) m.autocast = mixed;  // fp32 weights (full, or a LoRA base loaded in float32) computed in bf16/fp16
  // float16's narrow range underflows small gradients: scale the loss (full and LoRA over an fp16 base).
  m.loss_scaling = (dtype && *dtype == c10::kHalf) || fp16;
}

}  // namespace

std::vector<cli::FlagSpec> training_flags(const TrainingFlagDefaults& d) {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"model", FlagType::kString, "", "Hugging Face model folder, or hub id (org/name), to start from (also a --save_safetensors false checkpoint)", {"load"}},
      {"init_strategy", FlagType::kString, "", "train from scratch: initialise a folder that has only config.json"},
      {"train_type", FlagType::kString, d.pretrain ? "full" : "lora",
       "full, lora, or qlora (lora on a 4-bit NF4 base: --quant_method bnb --quant_bits 4)", {"tuner_type", "sft_type"}},
  };
  auto add = [&](const std::vector<cli::FlagSpec>& more) { flags.insert(flags.end(), more.begin(), more.end()); };
  add(data::dataset_flags(d.pretrain, d.loss_scale_default, d.loss_scale_help));
  add(data::training_data_flags());
  add({
      {"num_train_epochs", FlagType::kFloat, "1", "passes over the data (ignored when --max_steps > 0)", {"max_epochs"}},
      {"max_steps", FlagType::kInt, "-1", "optimizer steps (overrides --num_train_epochs when > 0)", {"train_iters"}},
      {"per_device_train_batch_size", FlagType::kInt, "1", "samples per micro-batch", {"batch_size", "micro_batch_size"}},
      {"global_batch_size", FlagType::kInt, "0", "Megatron's samples per optimizer step: sets --gradient_accumulation_steps to it over micro-batch x data-parallel ranks (0: not used)"},
      {"save_safetensors", FlagType::kBool, "true", "true: checkpoints are Hugging Face folders; false (Megatron's mcore checkpoints): under --tp_size/--pp_size/--cp_size each rank writes its own part of the weights (model_parallel.json + mp_rank_TT_PPP.safetensors), which resume at any layout; swift export --to_hf true joins them; the run's last checkpoint is a whole folder"},
      {"per_device_eval_batch_size", FlagType::kInt, "1", "samples per evaluation batch"},
      {"gradient_accumulation_steps", FlagType::kInt, "0", "micro-batches per optimizer step (0: enough for 16 samples)"},
      {"learning_rate", FlagType::kFloat, "", "peak learning rate (default 1e-4 for lora, 1e-5 for full)", {"lr"}},
      {"weight_decay", FlagType::kFloat, "0.1", "AdamW weight decay (not on biases and norms)"},
      {"adam_beta1", FlagType::kFloat, "0.9", "AdamW beta1"},
      {"adam_beta2", FlagType::kFloat, "0.95", "AdamW beta2"},
      {"adam_epsilon", FlagType::kFloat, "1e-8", "AdamW epsilon", {"adam_eps"}},
      {"lr_scheduler_type", FlagType::kString, "cosine", "linear, cosine, constant, constant_with_warmup, cosine_with_min_lr"},
      {"min_lr_rate", FlagType::kFloat, "", "cosine_with_min_lr: the floor as a fraction of --learning_rate"},
      {"warmup_ratio", FlagType::kFloat, "0", "fraction of steps spent warming up (0 as ms-swift)", {"lr_warmup_fraction"}},
      {"warmup_steps", FlagType::kFloat, "0", "warm-up steps (overrides --warmup_ratio when > 0)", {"lr_warmup_iters"}},
      {"max_grad_norm", FlagType::kFloat, "1.0", "clip gradients to this norm (0: off); the logged norm is before clipping", {"clip_grad"}},
      {"router_aux_loss_coef", FlagType::kFloat, "0", "mixture-of-experts models: weight of the router's load-balancing loss added to the loss (0: none, as ms-swift)"},
      {"bf16", FlagType::kBool, "false", "compute in bfloat16 over the loaded weights (mixed precision; fp32 master weights for full)", {"use_bf16"}},
      {"fp16", FlagType::kBool, "false", "compute in float16 with dynamic loss scaling (mixed precision)", {"use_fp16"}},
      {"gradient_checkpointing", FlagType::kBool, "true", "recompute decoder layers in backward instead of keeping activations (less memory, same gradients)"},
  });
  add(optimizer_flags());
  add(tuners::lora_flags(d.lora_dropout_default, d.lora_dropout_help));
  add({
      {"output_dir", FlagType::kString, "", "run folder root (default: output/<model name>)", {"save"}},
      {"add_version", FlagType::kBool, "true", "put the run in <output_dir>/v<N>-<time>/"},
      {"logging_steps", FlagType::kInt, "5", "log every N optimizer steps"},
      {"eval_steps", FlagType::kInt, "0", "evaluate every N steps (0: at --save_steps)", {"eval_interval"}},
      {"save_steps", FlagType::kInt, "500", "save a checkpoint every N steps (and always at the end)", {"save_interval"}},
      {"save_total_limit", FlagType::kInt, "0", "keep only the newest N checkpoints (0: all)"},
      {"save_only_model", FlagType::kBool, "false", "checkpoints without optimizer and trainer state"},
      {"resume_from_checkpoint", FlagType::kString, "", "continue a run exactly from its checkpoint-N folder"},
      {"resume_only_model", FlagType::kBool, "false", "with --resume_from_checkpoint: take only the weights, start at step 0"},
      {"ignore_data_skip", FlagType::kBool, "false", "with --resume_from_checkpoint: restart the data from the beginning"},
      {"max_nonfinite_steps", FlagType::kInt, "20", "steps in a row with NaN/inf gradients (each skipped, no update; fp16 overflows count) before training stops with exit 3"},
  });
  // Several ranks (NPROC_PER_NODE, torchrun, srun; docs/distributed.md).
  add(distributed::parallel_flags());
  add({
      {"plan_layout", FlagType::kBool, "false", "a dry run: read config.json, estimate each rank's memory under every --tp_size/--pp_size/--cp_size layout of the GPUs and recommend one, then stop"},
      {"plan_gpus", FlagType::kInt, "0", "--plan_layout: GPUs in all (0: this machine's)"},
      {"plan_gpus_per_node", FlagType::kInt, "0", "--plan_layout: GPUs per node, the most tensor parallelism spans (0: --plan_gpus, or this machine's)"},
      {"plan_gpu_memory", FlagType::kFloat, "0", "--plan_layout: GiB of memory per GPU (0: this machine's first GPU)"},
  });
  // Accepted so that pasted ms-swift command lines run; they change nothing here (the log says why).
  add({
      {"dataloader_num_workers", FlagType::kInt, "0", "accepted for ms-swift command lines; no effect (batches are built in-process)", {"num_workers"}},
      {"report_to", FlagType::kList, "", "accepted for ms-swift command lines; TensorBoard events are always written"},
      {"model_type", FlagType::kString, "", "accepted for ms-swift command lines; the architecture comes from config.json"},
      {"use_logits_to_keep", FlagType::kString, "", "accepted for ms-swift command lines; logits are computed only where a label is, always"},
      {"load_from_cache_file", FlagType::kString, "", "accepted for ms-swift command lines; rows are encoded in memory each run"},
  });
  // Megatron-LM's spellings with meanings of their own (megatron sft; megatron_flags.h).
  add(megatron_flags());
  add(quant::quant_flags());
  add(hub::hub_flags());  // --use_hf, --hub_token, --revision: --model and --dataset as hub ids (docs/hub.md)
  add(cli::common_flags());
  return flags;
}

TrainingOptions training_options(const cli::Flags& flags, cli::Problems& problems) {
  TrainingOptions o;
  o.command = flags.command();
  o.seed = static_cast<uint64_t>(flags.integer("seed"));
  o.device = flags.str("device");
  o.log_level = flags.str("log_level");
  o.args = flags.to_json();
  for (const auto& [name, why] : flags_without_effect())
    if (flags.given(name)) o.notes.push_back("--" + name + " has no effect in swift: " + why);

  // The tuner first: the precision and the learning rate depend on it.
  const std::string train_type = flags.str("train_type");
  problems.check(train_type == "full" || train_type == "lora" || train_type == "qlora",
                 "--train_type " + train_type + " is not available", "use full, lora or qlora");
  TunerOptions& t = o.tuner;
  t.type = train_type == "full" ? TrainType::kFull : train_type == "qlora" ? TrainType::kQLora : TrainType::kLora;
  // QLoRA: the frozen base quantized (bitsandbytes' formats), LoRA on top. --train_type qlora alone means NF4.
  t.quantization = problems.collect(
      [&] { return quant::quant_config_from_flags(flags, t.type == TrainType::kQLora ? 4 : 0); }, std::optional<quant::QuantConfig>{});
  problems.check(!t.quantization || t.adapter(),
                 "--quant_bits " + std::to_string(t.quantization ? t.quantization->bits : 0) +
                     " with --train_type full: quantized weights cannot be trained",
                 "use --train_type lora (QLoRA: LoRA on the quantized base) or drop --quant_method/--quant_bits");
  if (t.adapter()) {
    t.lora = tuners::lora_config(flags, problems);
    problems.collect([&] { tuners::validate(t.lora); return 0; }, 0);
  }

  ModelOptions& m = o.model;
  m.dir = flags.str("model");
  problems.check(!m.dir.empty(), "swift " + o.command + " needs --model", "e.g. --model configs/models/qwen3-tiny --init_strategy normal");
  m.init_strategy = flags.str("init_strategy");
  m.gradient_checkpointing = flags.boolean("gradient_checkpointing");
  resolve_precision(flags, t.adapter(), m, problems);

  o.data = data::data_options(flags, o.seed, problems);
  problems.check(!o.data.datasets.empty() || !o.data.cached_dataset.empty(), "swift " + o.command + " needs --dataset",
                 "e.g. --dataset data.jsonl or --dataset swift/self-cognition --model_name Tiny --model_author Me");

  OptimizerOptions& opt = o.optimizer;
  opt.learning_rate = flags.given("learning_rate") ? flags.number("learning_rate") : (t.adapter() ? 1e-4 : 1e-5);
  opt.weight_decay = flags.number("weight_decay");
  opt.beta1 = flags.number("adam_beta1");
  opt.beta2 = flags.number("adam_beta2");
  opt.epsilon = flags.number("adam_epsilon");
  opt.max_grad_norm = flags.number("max_grad_norm");
  opt.galore = galore_options(flags, t.type == TrainType::kFull, problems);
  const double kHuge = std::numeric_limits<double>::max();
  problems.in_range("learning_rate", opt.learning_rate, 0, kHuge, "e.g. 1e-4 for LoRA, 1e-5 for full fine-tuning");
  problems.in_range("weight_decay", opt.weight_decay, 0, kHuge, "e.g. 0.1");
  problems.in_range("adam_beta1", opt.beta1, 0, 1, "e.g. 0.9", false, /*max_open=*/true);
  problems.in_range("adam_beta2", opt.beta2, 0, 1, "e.g. 0.95", false, /*max_open=*/true);
  problems.in_range("adam_epsilon", opt.epsilon, 0, kHuge, "e.g. 1e-8", /*min_open=*/true);
  problems.in_range("max_grad_norm", opt.max_grad_norm, 0, kHuge, "e.g. 1.0; 0 turns clipping off");
  o.router_aux_loss_coef = flags.number("router_aux_loss_coef");
  problems.in_range("router_aux_loss_coef", o.router_aux_loss_coef, 0, kHuge, "e.g. 0.001 (Qwen3-MoE's config value)");

  ScheduleOptions& s = o.schedule;
  s.type_name = flags.str("lr_scheduler_type");
  s.type = problems.collect([&] { return parse_lr_scheduler_type(s.type_name); }, LrSchedulerType::kCosine);
  if (s.type == LrSchedulerType::kCosineWithMinLr) s.min_lr_rate = flags.given("min_lr_rate") ? flags.number("min_lr_rate") : 0.1;
  s.warmup_ratio = flags.number("warmup_ratio");
  s.warmup_steps = flags.number("warmup_steps");
  s.num_train_epochs = flags.number("num_train_epochs");
  s.max_steps = flags.integer("max_steps");
  problems.in_range("warmup_ratio", s.warmup_ratio, 0, 1, "e.g. 0.05");
  problems.in_range("warmup_steps", s.warmup_steps, 0, kHuge, "e.g. 100");
  if (s.min_lr_rate) problems.in_range("min_lr_rate", *s.min_lr_rate, 0, 1, "e.g. 0.1");
  if (s.max_steps <= 0)
    problems.in_range("num_train_epochs", s.num_train_epochs, 0, kHuge, "e.g. 3, or give --max_steps", /*min_open=*/true);
  problems.check(!o.data.streaming || s.max_steps > 0, "--streaming needs --max_steps",
                 "a stream's length is not known in advance: give e.g. --max_steps 1000");

  LoopOptions& l = o.loop;
  l.per_device_train_batch_size = flags.integer("per_device_train_batch_size");
  l.per_device_eval_batch_size = flags.integer("per_device_eval_batch_size");
  l.gradient_accumulation_steps = flags.integer("gradient_accumulation_steps");
  l.logging_steps = flags.integer("logging_steps");
  l.save_steps = flags.integer("save_steps");
  l.eval_steps = flags.integer("eval_steps") > 0 ? flags.integer("eval_steps") : l.save_steps;
  l.save_total_limit = flags.integer("save_total_limit");
  problems.at_least("per_device_train_batch_size", l.per_device_train_batch_size, 1, "samples per micro-batch, e.g. 1");
  problems.at_least("per_device_eval_batch_size", l.per_device_eval_batch_size, 1, "e.g. 1");
  problems.at_least("gradient_accumulation_steps", l.gradient_accumulation_steps, 0, "0 picks enough for 16 samples");
  problems.at_least("logging_steps", l.logging_steps, 1, "e.g. 5");
  problems.at_least("save_steps", l.save_steps, 1, "e.g. 500 (a checkpoint is always written at the end)");
  problems.at_least("eval_steps", flags.integer("eval_steps"), 0, "0 evaluates at --save_steps");
  problems.at_least("save_total_limit", l.save_total_limit, 0, "0 keeps every checkpoint");
  l.save_only_model = flags.boolean("save_only_model");
  l.output_dir = flags.str("output_dir");
  if (l.output_dir.empty() && !m.dir.empty()) l.output_dir = fs::path("output") / fs::absolute(m.dir).lexically_normal().filename();
  l.add_version = flags.boolean("add_version");
  l.resume_from_checkpoint = flags.str("resume_from_checkpoint");
  l.resume_only_model = flags.boolean("resume_only_model");
  l.ignore_data_skip = flags.boolean("ignore_data_skip");
  l.max_nonfinite_steps = flags.integer("max_nonfinite_steps");
  problems.at_least("max_nonfinite_steps", l.max_nonfinite_steps, 1, "e.g. 20");
  if (const fs::path& resume = l.resume_from_checkpoint; !resume.empty()) {
    if (!fs::is_directory(resume)) {
      problems.add(DataError("--resume_from_checkpoint " + resume.string() + " is not a folder",
                             "give a checkpoint-<step> folder of an earlier run"));
    } else {
      const bool adapter = fs::exists(resume / "adapter_config.json");
      problems.check(adapter == t.adapter(),
                     "--resume_from_checkpoint " + resume.string() + " holds a " + (adapter ? "LoRA adapter" : "full model") +
                         " but --train_type is " + train_type,
                     "resume with the --train_type of the run that wrote it");
    }
  }

  apply_megatron_flags(flags, o, problems);  // before the layout: --recompute_granularity sets gradient checkpointing
  o.parallel = distributed::parallel_options(flags, m.gradient_checkpointing, problems);
  o.plan.enabled = flags.boolean("plan_layout");
  o.plan.gpus = flags.integer("plan_gpus");
  o.plan.gpus_per_node = flags.integer("plan_gpus_per_node");
  o.plan.gpu_gib = flags.number("plan_gpu_memory");
  problems.at_least("plan_gpus", o.plan.gpus, 0, "GPUs, e.g. 32 (0: this machine's)");
  problems.at_least("plan_gpus_per_node", o.plan.gpus_per_node, 0, "GPUs per node, e.g. 8");
  problems.check(o.plan.gpu_gib >= 0, "--plan_gpu_memory " + std::to_string(o.plan.gpu_gib) + " is negative", "give GiB per GPU, e.g. 80");
  problems.check(o.plan.gpus == 0 || o.plan.gpus_per_node == 0 || o.plan.gpus % o.plan.gpus_per_node == 0,
                 "--plan_gpus " + std::to_string(o.plan.gpus) + " is not a whole number of nodes of --plan_gpus_per_node " +
                     std::to_string(o.plan.gpus_per_node),
                 "give a multiple of the GPUs per node");
  problems.check(!o.optimizer.galore || !o.parallel.splits_model(),
                 "GaLore (" + (o.optimizer.galore ? o.optimizer.galore->source : std::string()) + ") with --tp_size " +
                     std::to_string(o.parallel.tp_size) + " / --pp_size " + std::to_string(o.parallel.pp_size) +
                     " / --cp_size " + std::to_string(o.parallel.cp_size) + " / --ep_size " + std::to_string(o.parallel.ep_size) +
                     " is not available yet (its projections need whole gradients)",
                 "use AdamW with --tp_size / --pp_size, or GaLore with data parallelism");
  l.save_model_parts = !flags.boolean("save_safetensors");
  problems.check(!l.save_model_parts || o.parallel.model_parallel_size() > 1,
                 "--save_safetensors false writes each rank's part of a model split by --tp_size / --pp_size / --cp_size, "
                 "and this run keeps the whole model on every rank",
                 "drop it (checkpoints are then Hugging Face folders), or split the model with --tp_size / --pp_size");
  if (l.save_model_parts && t.adapter())
    log_info("--save_safetensors false: the LoRA adapter is small and still written whole (PEFT's files); the "
             "optimizer state is each rank's own, as always under model parallelism");
  if (const int64_t global = flags.integer("global_batch_size"); global > 0) {
    // Megatron: global = micro x data-parallel ranks x accumulation.
    const int64_t per_step = l.per_device_train_batch_size * std::max<int64_t>(1, o.parallel.env.world_size / o.parallel.model_parallel_size());
    problems.check(global % per_step == 0 && (!flags.given("gradient_accumulation_steps") || l.gradient_accumulation_steps == global / per_step),
                   "--global_batch_size " + std::to_string(global) + " is not --micro_batch_size x data-parallel ranks (" +
                       std::to_string(per_step) + ") times a whole number of accumulation steps" +
                       (flags.given("gradient_accumulation_steps") ? " equal to --gradient_accumulation_steps" : ""),
                   "give a multiple of " + std::to_string(per_step) + ", or --gradient_accumulation_steps instead");
    if (global % per_step == 0) l.gradient_accumulation_steps = global / per_step;
  }
  problems.check(o.parallel.virtual_stages == 1 || l.gradient_accumulation_steps % o.parallel.pp_size == 0,
                 "an interleaved pipeline (--virtual_pipeline_model_parallel_size " +
                     std::to_string(o.parallel.virtual_stages) + ") runs " + std::to_string(l.gradient_accumulation_steps) +
                     " micro-batches per step (--gradient_accumulation_steps), not a multiple of --pp_size " +
                     std::to_string(o.parallel.pp_size),
                 "set --gradient_accumulation_steps (or --global_batch_size) to a multiple of --pp_size");
  if (flags.boolean("use_ulysses") && o.parallel.cp_size == 1)
    o.notes.push_back("--use_ulysses true on one rank: no sequence to split, every rank trains whole sequences");
  // A hub id (org/name) becomes its snapshot folder, downloaded only once the rest of the command line is valid.
  if (problems.empty()) m.dir = problems.collect([&] { return hub::resolve_model(m.dir.string(), hub::hub_options(flags)); }, m.dir.string());
  hub::redact_hub_token(o.args);
  return o;
}

}  // namespace swift::train
