// Which optimizer a training command uses, as ms-swift and transformers spell it: --optim (adamw_torch and its
// spellings: swift's fused AdamW; galore_adamw: GaLore), ms-swift's --use_galore and --galore_* flags, and
// transformers' --optim_args / --optim_target_modules for GaLore's settings.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/cli/problems.h"
#include "swift/train/galore_projector.h"

namespace swift::train {

struct GaLoreOptions {
  GaLoreSettings settings;
  // Substrings of module names (ms-swift's --galore_target_modules); empty: every linear layer of the decoder
  // (ms-swift's find_all_linears: not the LM head, not the embeddings).
  std::vector<std::string> target_modules;
  bool with_embedding = false;  // --galore_with_embedding: the input embeddings projected too
  std::string source;           // "--use_galore" or "--optim galore_adamw", for the log
};

std::vector<cli::FlagSpec> optimizer_flags();

// GaLore's options when --use_galore or --optim galore_adamw asks for it, else nullopt (plain AdamW). What is
// not available (8-bit state, Adafactor, layer-wise, Q-GaLore, LoRA underneath) goes to `problems`.
std::optional<GaLoreOptions> galore_options(const cli::Flags& flags, bool full_training, cli::Problems& problems);

// Whether the parameter `name` (of the decoder: "model.layers.0.self_attn.q_proj.weight") gets GaLore's
// projection: a matrix weight of a targeted linear layer (or the embeddings with with_embedding).
bool galore_projects(const GaLoreOptions& options, const std::string& name, const at::Tensor& param);

}  // namespace swift::train
