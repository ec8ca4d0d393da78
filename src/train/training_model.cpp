// The policy of a training job (see training_model.h).
#include "swift/train/training_model.h"

#include <ATen/ATen.h>

#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/core/memory.h"
#include "swift/data/training_rows.h"
#include "swift/model/family_registry.h"
#include "swift/quant/quantized_loading.h"

namespace fs = std::filesystem;

namespace swift::train {

namespace {

double memory_high_water_bytes(const c10::Device& device) {
  return peak_memory_gib(device.is_cuda() ? device.index() : -1) * (1 << 30);
}

// LoRA on the policy: the options' adapter with what the command's change asks of it (modules trained in full and
// saved with it, PEFT's task_type), fresh, or the checkpoint's when resuming.
tuners::LoraConfig add_adapter(TrainingModel& m, const TrainingOptions& options, const ModelChange& change) {
  tuners::LoraConfig lora = options.tuner.lora;
  for (const auto& name : change.modules_to_save)
    if (std::find(lora.modules_to_save.begin(), lora.modules_to_save.end(), name) == lora.modules_to_save.end())
      lora.modules_to_save.push_back(name);
  if (!change.task_type.empty()) lora.task_type = change.task_type;
  lora.base_model_name_or_path = fs::absolute(options.model.dir).string();
  const fs::path& resume = options.loop.resume_from_checkpoint;
  if (resume.empty()) {
    lora = tuners::convert_expert_targets(m.model, lora);  // as ms-swift's PEFT does on mixture-of-experts models
    const auto wrapped = tuners::apply_lora(m.model, lora, options.seed);
    log_info(lora.use_dora ? "DoRA" : "LoRA", " r=", lora.r, " alpha=", lora.lora_alpha, " on ", wrapped.size(), " modules",
             lora.target_parameters.empty() ? "" : " and the experts' stacked weights");
    return lora;
  }
  const auto dtype = lora.lora_dtype.value_or(c10::kFloat);
  lora = tuners::load_adapter(m.model, resume, dtype);
  lora.lora_dtype = dtype;
  log_info(lora.use_dora ? "DoRA" : "LoRA", " from ", resume.string(), ": r=", lora.r, " on ",
           tuners::lora_modules(m.model).size(), " modules");
  return lora;
}

}  // namespace

TrainingModel build_training_model(const TrainingOptions& options, const TrainingHooks& hooks,
                                   distributed::ParallelStrategy& parallel) {
  TrainingModel m;
  const ModelOptions& mo = options.model;
  const bool adapter = options.tuner.adapter();
  model::LoadOptions load;
  load.device = parse_device(parallel.device());
  load.init_strategy = mo.init_strategy;
  load.seed = options.seed;
  load.dtype = mo.load_dtype;
  // DoRA's magnitudes start from the whole base weights: with it every rank loads the whole model.
  if (!options.tuner.lora.use_dora) load.placement = parallel.placement_plan(hooks.removed_parameters);
  // A full checkpoint is a complete model folder: its weights replace --model's.
  const fs::path& resume = options.loop.resume_from_checkpoint;
  const double memory_before = memory_high_water_bytes(load.device);
  m.model = quant::load_model(!resume.empty() && !adapter ? resume : mo.dir, load, options.tuner.quantization);
  m.load = load;
  m.load.placement = parallel.frozen_placement_plan();  // for a model loaded besides (a reference)
  parallel.log_loaded(m.model, memory_before);
  m.quantization = options.tuner.quantization;
  if (!m.quantization && model::quantized_bytes(m.model).second > 0) {  // a folder saved quantized (*-bnb-4bit)
    SWIFT_CHECK(adapter, UsageError,
                mo.dir.string() + " is saved quantized (bitsandbytes): its quantized weights cannot be trained",
                "use --train_type lora (QLoRA on it), or the model's unquantized folder for full fine-tuning");
    m.quantization = quant::read_quantization_config(m.model->config().raw, mo.dir.string() + "/config.json");
  }

  m.tokenizer = with_context("loading the tokenizer of " + mo.dir.string(), [&] { return tokenizer::Tokenizer::load(mo.dir); });
  const auto& config = m.model->config();
  const auto* family = model::find_model_family(config.model_type, {});
  const auto has_token = [&](const std::string& t) { return m.tokenizer->token_to_id(t).has_value(); };
  auto chat = data::training_template(options.data, *m.tokenizer, mo.dir, family ? family->template_for(has_token) : "",
                                      config.model_type);
  m.template_name = chat.name;
  m.chat = std::move(chat.chat);
  m.pad_id = m.tokenizer->pad_id().value_or(m.tokenizer->eos_id().value_or(0));

  const ModelChange change = hooks.prepare_model ? hooks.prepare_model(m.model, m.pad_id) : ModelChange{};
  if (adapter) m.lora = add_adapter(m, options, change);
  int64_t n_trainable = 0, n_total = 0;
  for (auto& p : m.model->parameters()) {
    n_total += p.numel();
    if (p.requires_grad()) n_trainable += p.numel();
  }
  log_info("parameters: ", n_trainable, " trainable of ", n_total, " (", 100.0 * n_trainable / n_total, "%)");
  return m;
}

}  // namespace swift::train
