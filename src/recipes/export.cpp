// swift export: read a model folder (or initialise one from config.json with --init_strategy), optionally cast
// it, and write it as a Hugging Face folder (config.json, safetensors sharded at --max_shard_size, and the
// tokenizer/generation files copied along). --adapters with --merge_lora true folds a LoRA adapter into the
// weights first. --to_cached_dataset true tokenises a dataset instead (cached_dataset.cpp). Quantisation comes
// with its own issue.
#include <ATen/Parallel.h>

#include <filesystem>

#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/io/safetensors_folder.h"
#include "swift/model/checkpoint.h"
#include "swift/model/init_weights.h"
#include "swift/io/hf_config.h"
#include "swift/recipes/commands.h"
#include "swift/recipes/inference_setup.h"
#include "swift/recipes/quant_flags.h"
#include "swift/quant/quantized_linear.h"
#include "swift/recipes/train_rows.h"
#include "swift/tuners/lora.h"

namespace fs = std::filesystem;

namespace swift::recipes {

CommonSetup apply_common_flags(const cli::Flags& flags) {
  init_logging(flags.str("log_level"));
  CommonSetup setup;
  setup.threads = configure_threads(static_cast<int>(flags.integer("num_threads")));
  setup.device = flags.str("device");
  log_debug("intra-op threads: ", setup.threads);
  return setup;
}

std::vector<cli::FlagSpec> export_flags() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"model", FlagType::kString, "", "Hugging Face model folder (config.json + *.safetensors)"},
      {"output_dir", FlagType::kString, "", "where to write the exported folder (default: <model>-export)"},
      {"max_shard_size", FlagType::kString, "5GB", "largest safetensors shard, e.g. 5GB, 500MB, 2GiB"},
      {"init_strategy", FlagType::kString, "",
       "initialise a folder that has no weights: " + model::init_strategies()},
      {"exist_ok", FlagType::kBool, "false", "replace --output_dir if it exists"},
      {"adapters", FlagType::kList, "", "a LoRA adapter folder to merge (its args.json supplies --model when not given)",
       {"ckpt_dir"}},
      {"merge_lora", FlagType::kBool, "false", "fold --adapters into the weights and write a plain model folder"},
      {"to_cached_dataset", FlagType::kBool, "false",
       "tokenise --dataset once into --output_dir/train (and val/) for swift sft --cached_dataset"},
  };
  for (auto f : dataset_flags(/*pretrain=*/false)) {  // as swift sft reads and encodes them
    f.help = "--to_cached_dataset: " + f.help;
    flags.push_back(f);
  }
  for (auto& f : quant_flags()) {  // as swift sft reads them
    f.help = "--output_dir written quantized (bitsandbytes' format, loads in transformers): " + f.help;
    flags.push_back(f);
  }
  for (auto& f : cli::common_flags()) flags.push_back(f);
  for (auto& f : flags)
    if (f.name == "device") f.default_value = "cpu";  // exporting is host work
  return flags;
}

int run_merge_lora(const std::vector<std::string>& args) {
  std::vector<std::string> with_merge = {"--merge_lora", "true"};
  with_merge.insert(with_merge.end(), args.begin(), args.end());
  return run_export(with_merge);
}

int run_export(const std::vector<std::string>& args) {
  const auto flags = cli::parse_flags("export", export_flags(), args);
  const auto setup = apply_common_flags(flags);
  if (flags.boolean("to_cached_dataset")) return export_cached_dataset(flags);
  const auto adapters = flags.list("adapters");
  SWIFT_CHECK(adapters.size() <= 1, UsageError, "--adapters takes one folder", "merge one adapter at a time");
  SWIFT_CHECK(adapters.empty() || flags.boolean("merge_lora"), UsageError,
              "swift export --adapters needs --merge_lora true", "the adapter folder is already a PEFT adapter; "
              "--merge_lora true writes base + adapter as one model");
  const std::string model_dir = arg_or(flags, checkpoint_args(adapters), "model");  // the run recorded its base
  SWIFT_CHECK(!model_dir.empty() || !adapters.empty(), UsageError, "swift export needs --model",
              "e.g. swift export --model configs/models/qwen3-tiny --init_strategy normal --output_dir out/tiny");
  SWIFT_CHECK(!model_dir.empty(), UsageError,
              "--adapters " + (adapters.empty() ? std::string() : adapters.front()) +
                  " does not record its base model (no args.json with \"model\")",
              "pass the base model with --model BASE_DIR");
  fs::path output = flags.str("output_dir");
  if (output.empty() && !adapters.empty()) output = fs::path(adapters.front()).lexically_normal().string() + "-merged";
  if (output.empty()) output = fs::path(model_dir).lexically_normal().string() + "-export";
  SWIFT_CHECK(flags.boolean("exist_ok") || !fs::exists(output), UsageError,
              "--output_dir " + output.string() + " already exists",
              "choose another --output_dir or pass --exist_ok true to replace it");
  SWIFT_CHECK(fs::weakly_canonical(output) != fs::weakly_canonical(model_dir), UsageError,
              "--output_dir is the --model folder itself", "export to a new folder");

  model::LoadOptions load;
  load.dtype = parse_dtype(flags.str("torch_dtype"));
  load.device = parse_device(setup.device);
  load.init_strategy = flags.str("init_strategy");
  load.seed = static_cast<uint64_t>(flags.integer("seed"));
  model::SaveOptions save;
  save.max_shard_bytes = io::parse_byte_size(flags.str("max_shard_size"));

  // Without adapters the flags' quantization is how the folder is written (loaded quantized, saved as
  // transformers saves bitsandbytes models). Merging, the base loads as the adapter was trained (a QLoRA run's
  // args.json), the merged weights come out dense, and --quant_* then quantizes the result.
  const auto wanted = quant_config_from_flags(flags);
  load.quantize = adapters.empty() ? wanted : quant_config_from_args(checkpoint_args(adapters));
  auto model = model::load_model(model_dir, load);
  for (const auto& dir : adapters) {
    with_context("loading adapter " + dir, [&] { return tuners::load_adapter(model, dir); });
    log_info("merged ", tuners::merge_lora(model), " LoRA layers from ", dir);
  }
  if (!adapters.empty()) {
    if (const int64_t n = quant::dequantize_model(model))
      log_info("dequantized the ", n, " other quantized layers of the base: the merged model is dense");
    if (wanted) {
      auto config = *wanted;
      if (!config.compute_dtype) config.compute_dtype = model->dtype();
      quant::quantize_model(model, config);
      save.quantization = config;
    }
  }
  log_info("model ", model_dir, ": ", model->config().model_type, " (", model::count_parameters(model),
           " parameters, ", dtype_name(model->dtype()), ")");
  model::save_model(model, output, save, model_dir);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(output)) files += e.path().extension() == ".safetensors";
  log_info("exported to ", output.string(), " (", files, " safetensors file(s))");
  return 0;
}

}  // namespace swift::recipes
