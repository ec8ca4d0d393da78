// swift export: read a model folder (or initialise one from config.json with --init_strategy), optionally cast
// it, and write it as a Hugging Face folder (config.json, safetensors sharded at --max_shard_size, and the
// tokenizer/generation files copied along). --adapters with --merge_lora true folds a LoRA adapter into the
// weights first; --quant_method bnb writes it quantized as transformers does. --to_cached_dataset true tokenises a
// dataset instead (cached_dataset.cpp). --to_hf true joins a model-parallel checkpoint's parts (written with
// --save_safetensors false) into a Hugging Face folder, --to_mcore true cuts a folder into those parts for a layout
// (ms-swift's conversions between Hugging Face and Megatron checkpoints).
#include <ATen/Parallel.h>

#include <filesystem>
#include <optional>

#include "swift/cli/common_setup.h"
#include "swift/cli/problems.h"
#include "swift/core/atomic_write.h"
#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/data/data_options.h"
#include "swift/distributed/model_parallel_parts.h"
#include "swift/hub/hub_flags.h"
#include "swift/hub/hub_resolver.h"
#include "swift/io/hf_config.h"
#include "swift/io/model_parallel_files.h"
#include "swift/io/safetensors_folder.h"
#include "swift/model/checkpoint.h"
#include "swift/model/init_weights.h"
#include "swift/model/model_config.h"
#include "swift/model/tensor_parallel.h"
#include "swift/quant/quant_flags.h"
#include "swift/quant/quantized_linear.h"
#include "swift/quant/quantized_loading.h"
#include "swift/recipes/commands.h"
#include "swift/serve/inference_model.h"
#include "swift/tuners/lora.h"

namespace fs = std::filesystem;

namespace swift::recipes {

std::vector<cli::FlagSpec> export_flags() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"model", FlagType::kString, "", "Hugging Face model folder (config.json + *.safetensors) or hub id (org/name)"},
      {"output_dir", FlagType::kString, "", "where to write the exported folder (default: <model>-export)"},
      {"max_shard_size", FlagType::kString, "5GB", "largest safetensors shard, e.g. 5GB, 500MB, 2GiB"},
      {"init_strategy", FlagType::kString, "",
       "initialise a folder that has no weights: " + model::init_strategies()},
      {"exist_ok", FlagType::kBool, "false", "replace --output_dir if it exists"},
      {"adapters", FlagType::kList, "", "a LoRA adapter folder to merge (its args.json supplies --model when not given)",
       {"ckpt_dir"}},
      {"merge_lora", FlagType::kBool, "false",
       "fold --adapters into the weights and write a plain model folder (--adapters alone implies it)"},
      {"to_cached_dataset", FlagType::kBool, "false",
       "tokenise --dataset once into --output_dir/train (and val/) for swift sft --cached_dataset"},
      {"to_hf", FlagType::kBool, "false",
       "write a model-parallel checkpoint (--save_safetensors false; --mcore_model or --model) as a Hugging Face folder "
       "(default --output_dir <checkpoint>-hf)"},
      {"mcore_model", FlagType::kString, "", "with --to_hf: the model-parallel checkpoint folder (ms-swift's spelling)"},
      {"to_mcore", FlagType::kBool, "false",
       "write --model as a model-parallel checkpoint's parts for --tp_size x --pp_size ranks (default --output_dir "
       "<model>-mcore); swift trains from either form"},
      {"tensor_model_parallel_size", FlagType::kInt, "1", "with --to_mcore: the tensor-parallel ranks", {"tp_size"}},
      {"pipeline_model_parallel_size", FlagType::kInt, "1", "with --to_mcore: the pipeline stages", {"pp_size"}},
  };
  for (auto f : data::dataset_flags(/*pretrain=*/false)) {  // as swift sft reads and encodes them
    f.help = "--to_cached_dataset: " + f.help;
    flags.push_back(f);
  }
  for (auto& f : quant::quant_flags()) {  // as swift sft reads them
    f.help = "--output_dir written quantized (bitsandbytes' format, loads in transformers): " + f.help;
    flags.push_back(f);
  }
  for (auto& f : hub::hub_flags()) flags.push_back(f);  // --model as a hub id (org/name; docs/hub.md)
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

namespace {

// export's flags (writing a model), typed once.
struct ExportOptions {
  std::string model_dir;              // --model, else the adapter checkpoint's base
  std::vector<std::string> adapters;  // at most one, with --merge_lora true
  std::filesystem::path output;       // --output_dir (default: <model>-export, <adapter>-merged)
  bool exist_ok = false;
  model::LoadOptions load;            // dtype, device, --init_strategy, --seed
  uint64_t max_shard_bytes = 5000000000ULL;
  std::optional<quant::QuantConfig> quantization;  // --quant_*: how the output is written
  std::optional<quant::QuantConfig> base_quantization;  // how the base loads (merging: as the adapter was trained)
  bool to_hf = false, to_mcore = false;  // between a Hugging Face folder and a model-parallel checkpoint's parts
  int tp = 1, pp = 1;                    // --to_mcore's layout
};

ExportOptions export_options(const cli::Flags& flags, const std::string& device) {
  cli::Problems problems;
  ExportOptions o;
  o.adapters = flags.list("adapters");
  problems.check(o.adapters.size() <= 1, "--adapters takes one folder", "merge one adapter at a time");
  // An adapter exported is an adapter merged: writing it unmerged would copy the folder it already is. So
  // --adapters alone merges (ms-swift asks for --merge_lora true); only an explicit false is refused.
  problems.check(o.adapters.empty() || !flags.given("merge_lora") || flags.boolean("merge_lora"),
                 "swift export --adapters with --merge_lora false has nothing to write",
                 "the adapter folder is already a PEFT adapter; drop --merge_lora false to write base + adapter as one model");
  if (!o.adapters.empty() && !flags.given("merge_lora"))
    log_info("swift export --adapters: merging the adapter into its base (what --merge_lora true asks; the only "
             "export of an adapter)");
  o.to_hf = flags.boolean("to_hf");
  o.to_mcore = flags.boolean("to_mcore");
  o.tp = static_cast<int>(flags.integer("tensor_model_parallel_size"));
  o.pp = static_cast<int>(flags.integer("pipeline_model_parallel_size"));
  problems.check(!(o.to_hf && o.to_mcore), "--to_hf and --to_mcore convert in opposite directions", "pass one of them");
  problems.check((!o.to_hf && !o.to_mcore) || (o.adapters.empty() && !flags.given("quant_method")),
                 "--to_hf / --to_mcore convert the weights as they are (no --adapters, no --quant_method)",
                 "merge or quantize in a separate swift export");
  problems.check(o.to_mcore || (!flags.given("tensor_model_parallel_size") && !flags.given("pipeline_model_parallel_size")),
                 "--tp_size / --pp_size are the layout --to_mcore writes", "add --to_mcore true, or drop them");
  problems.at_least("tensor_model_parallel_size", o.tp, 1, "ranks, e.g. 2");
  problems.at_least("pipeline_model_parallel_size", o.pp, 1, "stages, e.g. 2");
  problems.check(flags.str("mcore_model").empty() || o.to_hf, "--mcore_model is the checkpoint --to_hf reads",
                 "add --to_hf true, or pass the folder as --model");
  const auto saved = serve::checkpoint_args(o.adapters);
  o.model_dir = serve::arg_or(flags, saved, "model");  // the run recorded its base
  if (o.to_hf && !flags.str("mcore_model").empty()) {
    problems.check(o.model_dir.empty() || !flags.given("model"), "--to_hf reads --mcore_model or --model, not both",
                   "pass the checkpoint once");
    o.model_dir = flags.str("mcore_model");
  }
  if (o.to_hf && !o.model_dir.empty())
    problems.check(fs::exists(fs::path(o.model_dir) / io::kModelParallelIndex),
                   o.model_dir + " is not a model-parallel checkpoint (no " + io::kModelParallelIndex + ")",
                   "--to_hf reads a checkpoint saved with --save_safetensors false; a Hugging Face folder needs no conversion");
  if (o.adapters.empty())
    problems.check(!o.model_dir.empty(), "swift export needs --model",
                   "e.g. swift export --model configs/models/qwen3-tiny --init_strategy normal --output_dir out/tiny");
  else
    problems.check(!o.model_dir.empty(),
                   "--adapters " + o.adapters.front() + " does not record its base model (no args.json with \"model\")",
                   "pass the base model with --model BASE_DIR");
  o.output = flags.str("output_dir");
  if (o.output.empty() && !o.adapters.empty()) o.output = fs::path(o.adapters.front()).lexically_normal().string() + "-merged";
  const std::string suffix = o.to_hf ? "-hf" : o.to_mcore ? "-mcore" : "-export";
  if (o.output.empty()) o.output = fs::path(o.model_dir).lexically_normal().string() + suffix;
  o.exist_ok = flags.boolean("exist_ok");
  o.load.dtype = problems.collect([&] { return parse_dtype(flags.str("torch_dtype")); }, std::optional<c10::ScalarType>{});
  o.load.device = problems.collect([&] { return parse_device(device); }, c10::Device(c10::kCPU));
  o.load.init_strategy = flags.str("init_strategy");
  o.load.seed = static_cast<uint64_t>(flags.integer("seed"));
  o.max_shard_bytes = problems.collect([&] { return io::parse_byte_size(flags.str("max_shard_size")); }, o.max_shard_bytes);
  // Without adapters the flags' quantization is how the folder is written (loaded quantized, saved as
  // transformers saves bitsandbytes models). Merging, the base loads as the adapter was trained (a QLoRA run's
  // args.json), the merged weights come out dense, and --quant_* then quantizes the result.
  o.quantization = problems.collect([&] { return quant::quant_config_from_flags(flags); }, std::optional<quant::QuantConfig>{});
  o.base_quantization = o.adapters.empty() ? o.quantization
                                           : problems.collect([&] { return quant::quant_config_from_args(saved); },
                                                              std::optional<quant::QuantConfig>{});
  // A hub id (org/name) becomes its snapshot folder, downloaded only once the rest of the command line is valid.
  if (problems.empty()) o.model_dir = problems.collect([&] { return hub::resolve_model(o.model_dir, hub::hub_options(flags)); }, o.model_dir);
  problems.raise();
  return o;
}

}  // namespace

int run_export(const std::vector<std::string>& args) {
  const auto flags = cli::parse_flags("export", export_flags(), args);
  const auto setup = cli::apply_common_flags(flags);
  if (flags.boolean("to_cached_dataset")) return export_cached_dataset(flags);
  ExportOptions o = export_options(flags, setup.device);  // every problem at once, before loading
  const std::string& model_dir = o.model_dir;
  SWIFT_CHECK(o.exist_ok || !fs::exists(o.output), UsageError, "--output_dir " + o.output.string() + " already exists",
              "choose another --output_dir or pass --exist_ok true to replace it");
  SWIFT_CHECK(fs::weakly_canonical(o.output) != fs::weakly_canonical(model_dir), UsageError,
              "--output_dir is the --model folder itself", "export to a new folder");

  if (o.to_mcore) {  // before the weights load
    const std::string problem = model::tensor_parallel_problem(model::load_model_config(model_dir), o.tp);
    SWIFT_CHECK(problem.empty(), UsageError, "--to_mcore with --tp_size " + std::to_string(o.tp) + ": " + problem,
                "choose a --tp_size that divides it");
  }
  model::SaveOptions save;
  save.max_shard_bytes = o.max_shard_bytes;
  auto model = quant::load_model(model_dir, o.load, o.base_quantization);
  for (const auto& dir : o.adapters) {
    with_context("loading adapter " + dir, [&] { return tuners::load_adapter(model, dir); });
    log_info("merged ", tuners::merge_lora(model), " LoRA layers from ", dir);
  }
  if (!o.adapters.empty()) {
    if (const int64_t n = quant::dequantize_model(model))
      log_info("dequantized the ", n, " other quantized layers of the base: the merged model is dense");
    if (o.quantization) {
      auto config = *o.quantization;
      if (!config.compute_dtype) config.compute_dtype = model->dtype();
      quant::quantize_model(model, config);
      save.quantization_config = quant::quantization_config_json(config);
    }
  }
  log_info("model ", model_dir, ": ", model->config().model_type, " (", model::count_parameters(model),
           " parameters, ", dtype_name(model->dtype()), ")");
  if (o.to_mcore) {
    SWIFT_CHECK(model::quantized_bytes(model).second == 0, UsageError,
                model_dir + " is saved quantized: tensor parallelism splits unquantized weights only",
                "convert the unquantized model");
    AtomicDir out(o.output);
    model::save_model_description(model, out.path(), save, model_dir);
    distributed::save_model_parallel_parts(model, out.path(), o.tp, o.pp, save.dtype);
    out.commit();
    log_info("exported to ", o.output.string(), " as the parts of ", o.tp, " tensor-parallel rank(s) x ", o.pp,
             " stage(s) (", io::kModelParallelIndex, ")");
    return 0;
  }
  model::save_model(model, o.output, save, model_dir);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(o.output)) files += e.path().extension() == ".safetensors";
  log_info("exported to ", o.output.string(), " (", files, " safetensors file(s))");
  return 0;
}

}  // namespace swift::recipes
