// --optim, --use_galore and the --galore_* flags (see optimizer_options.h).
#include "swift/train/optimizer_options.h"

#include <cmath>
#include <map>
#include <sstream>

#include "swift/core/error.h"

namespace swift::train {

namespace {

// transformers' --optim_args "rank=64, update_proj_gap=500, scale=0.1, proj_type=std" for its GaLore path.
std::map<std::string, std::string> parse_optim_args(const std::string& text) {
  std::map<std::string, std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::string compact;
    for (const char c : item)
      if (c != ' ') compact += c;
    if (compact.empty()) continue;
    const auto eq = compact.find('=');
    SWIFT_CHECK(eq != std::string::npos && eq > 0, UsageError, "--optim_args '" + text + "': '" + item + "' is not key=value",
                "e.g. --optim_args \"rank=64, update_proj_gap=500, scale=0.1\"");
    out[compact.substr(0, eq)] = compact.substr(eq + 1);
  }
  return out;
}

double parse_number(const std::string& flag, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  SWIFT_CHECK(used == text.size() && !text.empty(), UsageError, flag + " '" + text + "' is not a number", "e.g. 64");
  return v;
}

}  // namespace

std::vector<cli::FlagSpec> optimizer_flags() {
  using cli::FlagType;
  return {
      {"optim", FlagType::kString, "adamw_torch",
       "adamw_torch (also adamw_torch_fused, adamw_hf, adamw: swift's fused AdamW), or galore_adamw (GaLore's "
       "low-rank optimizer state, as --use_galore)"},
      {"optim_args", FlagType::kString, "", "galore_adamw: transformers' \"rank=64, update_proj_gap=500, scale=0.1, proj_type=std\""},
      {"use_galore", FlagType::kBool, "false", "GaLore: full fine-tuning with the optimizer state of the linear layers at low rank"},
      {"galore_rank", FlagType::kInt, "128", "GaLore: the rank of the projected optimizer state"},
      {"galore_update_proj_gap", FlagType::kInt, "50", "GaLore: steps between recomputations of the projection (an SVD of the gradient)",
       {"galore_update_interval"}},
      {"galore_scale", FlagType::kFloat, "1.0", "GaLore: the projected-back update is multiplied by this"},
      {"galore_proj_type", FlagType::kString, "std", "GaLore: std (the smaller side), reverse_std, right, left, full"},
      {"galore_target_modules", FlagType::kList, "",
       "GaLore: module name substrings to project (default: every linear layer of the decoder)", {"optim_target_modules"}},
      {"galore_with_embedding", FlagType::kBool, "false", "GaLore: project the input embeddings too"},
      {"galore_optim_per_parameter", FlagType::kBool, "false", "GaLore layer-wise updates (not available; must be false)"},
      {"galore_quantization", FlagType::kBool, "false", "Q-GaLore (not available; must be false)"},
  };
}

std::optional<GaLoreOptions> galore_options(const cli::Flags& flags, bool full_training, cli::Problems& problems) {
  const std::string optim = flags.str("optim");
  const bool plain = optim == "adamw_torch" || optim == "adamw_torch_fused" || optim == "adamw_hf" || optim == "adamw";
  const bool galore_optim = optim == "galore_adamw";
  const bool galore_elsewhere = optim.rfind("galore_", 0) == 0 && !galore_optim;
  problems.check(!galore_elsewhere, "--optim " + optim + " is not available in swift",
                 "use --optim galore_adamw (GaLore's state is low-rank already; 8-bit, Adafactor and layer-wise variants "
                 "are not built)");
  problems.check(plain || galore_optim || galore_elsewhere, "--optim " + optim + " is not an optimizer swift has",
                 "use adamw_torch (default) or galore_adamw");
  if (!flags.boolean("use_galore") && !galore_optim) return std::nullopt;

  GaLoreOptions o;
  o.source = flags.boolean("use_galore") ? "--use_galore" : "--optim galore_adamw";
  problems.check(full_training, o.source + " is for full fine-tuning (it projects the weights' gradients)",
                 "use --train_type full, or drop GaLore for LoRA");
  problems.check(!flags.boolean("galore_optim_per_parameter"), "--galore_optim_per_parameter true is not available in swift",
                 "drop it: swift's GaLore updates all parameters in one step");
  problems.check(!flags.boolean("galore_quantization"), "--galore_quantization true (Q-GaLore) is not available in swift",
                 "drop it (the GaLore state is kept at the weights' dtype)");
  o.settings.rank = flags.integer("galore_rank");
  o.settings.update_proj_gap = flags.integer("galore_update_proj_gap");
  o.settings.scale = flags.number("galore_scale");
  std::string projection = flags.str("galore_proj_type");
  // transformers' spelling of the same settings, for --optim galore_adamw command lines.
  const auto optim_args = problems.collect([&] { return parse_optim_args(flags.str("optim_args")); },
                                           std::map<std::string, std::string>{});
  for (const auto& [key, value] : optim_args) {
    problems.collect([&, key = key, value = value] {
      if (key == "rank") o.settings.rank = static_cast<int64_t>(parse_number("--optim_args rank", value));
      else if (key == "update_proj_gap") o.settings.update_proj_gap = static_cast<int64_t>(parse_number("--optim_args update_proj_gap", value));
      else if (key == "scale") o.settings.scale = parse_number("--optim_args scale", value);
      else if (key == "proj_type") projection = value;
      else throw UsageError("--optim_args: '" + key + "' is not a GaLore setting", "use rank, update_proj_gap, scale, proj_type");
      return 0;
    }, 0);
  }
  o.settings.projection = problems.collect([&] { return parse_galore_projection(projection); }, GaLoreProjection::kStd);
  problems.at_least("galore_rank", o.settings.rank, 1, "e.g. 128");
  problems.at_least("galore_update_proj_gap", o.settings.update_proj_gap, 1, "e.g. 50 (steps)");
  problems.check(std::isfinite(o.settings.scale) && o.settings.scale > 0,
                 "--galore_scale must be a positive number, got " + std::to_string(o.settings.scale), "e.g. 1.0");
  o.target_modules = flags.list("galore_target_modules");
  o.with_embedding = flags.boolean("galore_with_embedding");
  return o;
}

bool galore_projects(const GaLoreOptions& options, const std::string& name, const at::Tensor& param) {
  constexpr const char* kWeight = ".weight";
  if (param.dim() != 2 || name.size() <= 7 || name.compare(name.size() - 7, 7, kWeight) != 0) return false;
  const std::string module = name.substr(0, name.size() - 7);
  const bool embedding = module.find("embed_tokens") != std::string::npos || module == "model.tok_embeddings";
  if (embedding) return options.with_embedding;
  if (options.target_modules.empty() || (options.target_modules.size() == 1 && options.target_modules[0] == "all-linear"))
    return module.find("lm_head") == std::string::npos && module != "output";  // every decoder linear (InternLM2's
                                                                             // head: output), ms-swift's find_all_linears
  for (const auto& key : options.target_modules)
    if (module.find(key) != std::string::npos) return true;
  return false;
}

}  // namespace swift::train
