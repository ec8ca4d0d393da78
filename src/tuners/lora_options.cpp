// The LoRA flags into a LoraConfig (see lora_options.h).
#include "swift/tuners/lora_options.h"

#include "swift/core/device.h"

namespace swift::tuners {

std::vector<cli::FlagSpec> lora_flags(const std::string& dropout_default, const std::string& dropout_help) {
  using cli::FlagType;
  return {
      {"lora_rank", FlagType::kInt, "8", "LoRA rank r"},
      {"lora_alpha", FlagType::kFloat, "32", "LoRA alpha (scaling alpha / r)"},
      {"lora_dropout", FlagType::kFloat, dropout_default, dropout_help.empty() ? "dropout on the LoRA input" : dropout_help},
      {"target_modules", FlagType::kList, "all-linear", "modules to adapt: all-linear or names (q_proj v_proj ...)",
       {"lora_target_modules"}},
      {"target_regex", FlagType::kString, "", "regex over module names (instead of --target_modules)"},
      {"target_parameters", FlagType::kList, "",
       "mixture-of-experts weights to adapt as PEFT's target_parameters: mlp.experts.gate_up_proj mlp.experts.down_proj "
       "(needs --lora_dropout 0)"},
      {"modules_to_save", FlagType::kList, "", "modules trained in full next to LoRA (embed_tokens, lm_head)"},
      {"lora_dtype", FlagType::kString, "", "dtype of the trainable LoRA weights: float32 (default), bfloat16, float16"},
      {"use_rslora", FlagType::kBool, "false", "rank-stabilised scaling alpha / sqrt(r)"},
      {"use_dora", FlagType::kBool, "false", "DoRA: a trainable magnitude per output feature rescales W + scaling * B A (PEFT's use_dora)", {}},
      {"init_weights", FlagType::kString, "true", "LoRA init: true (B = 0), gaussian, false"},
  };
}

LoraConfig lora_config(const cli::Flags& flags, cli::Problems& problems) {
  LoraConfig c;
  c.r = flags.integer("lora_rank");
  c.lora_alpha = flags.number("lora_alpha");
  c.lora_dropout = flags.number("lora_dropout");
  c.target_modules = flags.list("target_modules");
  if (!flags.str("target_regex").empty()) c.target_regex = flags.str("target_regex");
  c.target_parameters = flags.list("target_parameters");
  c.modules_to_save = flags.list("modules_to_save");
  c.use_rslora = flags.boolean("use_rslora");
  c.use_dora = flags.boolean("use_dora");
  const std::string init = flags.str("init_weights");
  problems.check(init == "true" || init == "gaussian" || init == "false", "--init_weights " + init + " is not supported",
                 "use true (B = 0), gaussian or false");
  c.init_weights = init == "gaussian" ? LoraInit::kGaussian : init == "false" ? LoraInit::kRandom : LoraInit::kDefault;
  // Trainable weights stay fp32 whatever the base (as PEFT's autocast), unless --lora_dtype says otherwise.
  c.lora_dtype = problems.collect([&] { return parse_dtype(flags.str("lora_dtype"), "--lora_dtype"); },
                                  std::optional<c10::ScalarType>{})
                     .value_or(c10::kFloat);
  return c;
}

}  // namespace swift::tuners
