// A training command's flags as typed options, parsed and validated once (every problem reported together) before
// anything is loaded: the model and its precision, the tuner, the data, the optimizer, the schedule, the loop and
// the parallelism. The trainer and its components take these structs, never the flag table.
#pragma once

#include <c10/core/ScalarType.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/cli/problems.h"
#include "swift/data/data_options.h"
#include "swift/distributed/parallel_options.h"
#include "swift/quant/quant_config.h"
#include "swift/train/lr_schedule.h"
#include "swift/train/optimizer_options.h"
#include "swift/tuners/lora.h"

namespace swift::train {

// The model to train and how its weights are held and computed.
struct ModelOptions {
  std::filesystem::path dir;      // --model (required)
  std::string init_strategy;      // --init_strategy: a folder with config.json only starts from random weights
  // The dtype the weights load in: full fine-tuning keeps fp32 master weights; LoRA keeps the frozen base in
  // --torch_dtype (or the mixed dtype). Unset: the checkpoint's torch_dtype.
  std::optional<c10::ScalarType> load_dtype;
  // The dtype the layers compute in over the loaded weights (--bf16/--fp16, or bf16/fp16 full fine-tuning).
  std::optional<c10::ScalarType> autocast;
  std::optional<c10::ScalarType> save_dtype;  // full checkpoints (--torch_dtype bf16/fp16)
  bool loss_scaling = false;                   // float16: dynamic loss scaling
  std::optional<c10::ScalarType> torch_dtype;  // --torch_dtype as given (a frozen reference model loads in it)
  bool gradient_checkpointing = true;          // --gradient_checkpointing
};

enum class TrainType { kFull, kLora, kQLora };

// What is trained: every weight, or a LoRA adapter (over a quantized base for QLoRA).
struct TunerOptions {
  TrainType type = TrainType::kLora;            // --train_type
  tuners::LoraConfig lora;                      // --lora_* (base_model_name_or_path filled by the trainer)
  std::optional<quant::QuantConfig> quantization;  // QLoRA: how the frozen base is quantized
  bool adapter() const { return type != TrainType::kFull; }
};

struct OptimizerOptions {
  double learning_rate = 1e-4;  // --learning_rate. Default: 1e-4 for LoRA, 1e-5 for full.
  double weight_decay = 0.1;    // not on biases and norms (model::no_weight_decay)
  double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8;
  double max_grad_norm = 1.0;   // 0: no clipping (the norm is still logged)
  std::optional<GaLoreOptions> galore;  // --use_galore / --optim galore_adamw; unset: AdamW
};

struct ScheduleOptions {
  LrSchedulerType type = LrSchedulerType::kCosine;  // --lr_scheduler_type
  std::string type_name = "cosine";                 // as given, for the log
  std::optional<double> min_lr_rate;                // cosine_with_min_lr's floor (default 0.1)
  double warmup_ratio = 0, warmup_steps = 0;
  double num_train_epochs = 1;
  int64_t max_steps = -1;                           // > 0: overrides --num_train_epochs
};

struct LoopOptions {
  int64_t per_device_train_batch_size = 1, per_device_eval_batch_size = 1;
  int64_t gradient_accumulation_steps = 0;  // 0: enough for a global batch of 16 samples, as ms-swift
  int64_t logging_steps = 5, eval_steps = 0, save_steps = 500, save_total_limit = 0;
  bool save_only_model = false;
  // --merge_lora true with LoRA (Megatron-SWIFT's): beside each checkpoint-N, checkpoint-N-merged holds the base with
  // the adapter folded in (train/merged_checkpoint.h).
  bool merge_lora = false;
  bool save_model_parts = false;  // --save_safetensors false: each model-parallel rank writes its part of the weights
  std::filesystem::path output_dir;  // default: output/<model name>
  bool add_version = true;
  std::filesystem::path resume_from_checkpoint;
  bool resume_only_model = false, ignore_data_skip = false;
  // Steps in a row whose gradients are not finite (each skipped, no update) before training stops with exit 3, the
  // last checkpoint kept. float16's loss-scale overflows count too. Default: 20.
  int64_t max_nonfinite_steps = 20;
};

// --plan_layout: a dry run that recommends a --tp_size/--pp_size/--cp_size layout (train/layout_plan.h).
struct LayoutPlanOptions {
  bool enabled = false;        // --plan_layout
  int64_t gpus = 0;            // --plan_gpus (0: this machine's GPUs)
  int64_t gpus_per_node = 0;   // --plan_gpus_per_node (0: --plan_gpus, or this machine's GPUs)
  double gpu_gib = 0;          // --plan_gpu_memory (0: this machine's first GPU)
};

struct TrainingOptions {
  std::string command;  // sft, pt or rlhf: for messages ("swift sft needs --model")
  LayoutPlanOptions plan;
  ModelOptions model;
  TunerOptions tuner;
  data::DataOptions data;
  OptimizerOptions optimizer;
  ScheduleOptions schedule;
  LoopOptions loop;
  distributed::ParallelOptions parallel;
  uint64_t seed = 42;     // --seed
  // --router_aux_loss_coef: mixture-of-experts models' load-balancing loss weight (ms-swift's default 0: none).
  double router_aux_loss_coef = 0.0;
  // Megatron's mixture-of-experts flags (megatron_flags.h): --moe_aux_loss_coeff, its layer-by-layer load-balancing
  // loss (0: none), and --moe_expert_capacity_factor (0: dropless) with --moe_token_drop_policy.
  double moe_aux_loss_coeff = 0.0;
  double moe_expert_capacity_factor = 0.0;
  bool moe_drop_by_position = false;
  std::string device;     // --device
  std::string log_level;  // --log_level
  nlohmann::json args;    // the flags as given (Flags::to_json), the base of a run's args.json
  // ms-swift flags given that change nothing here, each with what swift does instead: logged once the ranks are up.
  std::vector<std::string> notes;
};

// What differs between the training commands' flag tables.
struct TrainingFlagDefaults {
  bool pretrain = false;  // pt: plain text, loss on every token, full fine-tuning
  // rlhf: --loss_scale's default depends on the method, and dropout is off.
  std::string loss_scale_default, loss_scale_help;
  std::string lora_dropout_default = "0.05", lora_dropout_help;
};

// A training command's flag table (the common flags included).
std::vector<cli::FlagSpec> training_flags(const TrainingFlagDefaults& defaults);

// The options the flags give; what is wrong goes to `problems` (raise them with problems.raise()).
TrainingOptions training_options(const cli::Flags& flags, cli::Problems& problems);

}  // namespace swift::train
