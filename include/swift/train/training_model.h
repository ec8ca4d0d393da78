// The policy a training job trains: its weights loaded (quantized for QLoRA; with parameter sharding only this
// rank's share), its tokenizer and chat template, the command's change to it (a reward model's score head), and
// LoRA applied, or the checkpoint's model or adapter when resuming.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "swift/distributed/parallel_strategy.h"
#include "swift/model/checkpoint.h"
#include "swift/quant/quant_config.h"
#include "swift/template/template.h"
#include "swift/tokenizer/tokenizer.h"
#include "swift/train/trainer.h"
#include "swift/tuners/lora.h"

namespace swift::train {

struct TrainingModel {
  model::CausalLM model{nullptr};
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<templates::Template> chat;
  std::string template_name;  // "" for plain text
  int64_t pad_id = 0;
  tuners::LoraConfig lora;    // the adapter trained (LoRA runs)
  std::optional<quant::QuantConfig> quantization;  // how the frozen base is quantized (QLoRA)
  // How the policy was loaded (device, dtype, quantization), without the placement plan: a reference model loads
  // alike.
  model::LoadOptions load;
};

TrainingModel build_training_model(const TrainingOptions& options, const TrainingHooks& hooks,
                                   distributed::ParallelStrategy& parallel);

}  // namespace swift::train
