// --infer_backend and other engines' flags onto the built-in engine (see engine_flags.h).
#include "swift/serve/engine_flags.h"

#include "swift/core/error.h"

namespace swift::serve {

namespace {

// Sizes that split one model over several devices (tensor / pipeline parallel) or copy it (data parallel).
const std::vector<std::string>& parallel_size_flags() {
  static const std::vector<std::string> kNames = {
      "vllm_tensor_parallel_size", "vllm_pipeline_parallel_size", "vllm_data_parallel_size",
      "sglang_tp_size",            "sglang_pp_size",              "sglang_dp_size",
      "lmdeploy_tp"};
  return kNames;
}

// Engine settings with nothing to set in swift's engine, and why.
const std::vector<std::pair<std::string, std::string>>& flags_without_effect() {
  static const std::vector<std::pair<std::string, std::string>> kWhy = {
      {"vllm_gpu_memory_utilization", "the KV cache grows with each sequence instead of a pre-allocated pool"},
      {"vllm_enforce_eager", "the engine runs LibTorch eagerly (no CUDA graphs)"},
      {"vllm_enable_prefix_caching", "prompts are not cached across requests"},
      {"vllm_max_lora_rank", "adapters of any rank load (--adapters name=path)"},
      {"vllm_quantization", "--quant_method / --quant_bits quantize the weights"},
      {"vllm_disable_custom_all_reduce", "one device, no all-reduce"},
      {"vllm_use_async_engine", "the server always batches requests continuously"},
      {"vllm_enable_expert_parallel", "one device, no expert parallelism"},
      {"vllm_engine_kwargs", "there is no vLLM engine to pass them to"},
      {"lmdeploy_cache_max_entry_count", "the KV cache grows with each sequence instead of a pre-allocated pool"},
  };
  return kWhy;
}

}  // namespace

std::vector<cli::FlagSpec> engine_flags() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"infer_backend", FlagType::kString, "transformers",
       "transformers (alias pt), vllm, sglang, lmdeploy: all served by swift's built-in LibTorch engine (continuous "
       "batching); the log says so"},
  };
  for (const auto& name : parallel_size_flags()) {
    cli::FlagSpec f{name, FlagType::kInt, "1", "accepted for ms-swift command lines; above 1 the log says that the "
                                               "model is served on one device (no tensor/pipeline parallel serving yet)"};
    if (name == "vllm_tensor_parallel_size") f.aliases = {"tensor_parallel_size"};  // ms-swift 2's spelling
    if (name == "vllm_pipeline_parallel_size") f.aliases = {"pipeline_parallel_size"};
    flags.push_back(f);
  }
  for (const auto& [name, why] : flags_without_effect()) {
    cli::FlagSpec f{name, FlagType::kString, "", "accepted for ms-swift command lines; no effect: " + why};
    if (name == "vllm_gpu_memory_utilization") f.aliases = {"gpu_memory_utilization"};
    flags.push_back(f);
  }
  return flags;
}

std::vector<std::string> engine_notes(const cli::Flags& flags) {
  std::vector<std::string> notes;
  const std::string backend = flags.str("infer_backend");
  SWIFT_CHECK(backend == "transformers" || backend == "pt" || backend == "vllm" || backend == "sglang" ||
                  backend == "lmdeploy",
              UsageError, "--infer_backend " + backend + " is not a backend ms-swift has",
              "use transformers (or pt), vllm, sglang or lmdeploy; all are served by swift's built-in engine");
  if (backend != "transformers" && backend != "pt")
    notes.push_back("--infer_backend " + backend +
                    ": served by swift's built-in LibTorch engine (continuous batching, the same OpenAI API); " +
                    backend + " itself is not used");
  std::vector<std::string> split;
  for (const auto& name : parallel_size_flags())
    if (flags.given(name) && flags.integer(name) > 1) split.push_back("--" + name + " " + std::to_string(flags.integer(name)));
  if (!split.empty()) {
    std::string joined;
    for (const auto& s : split) joined += (joined.empty() ? "" : ", ") + s;
    notes.push_back(joined + ": swift does not split a served model over several devices yet; it is served whole on "
                             "--device (one GPU must hold it; quantize with --quant_bits 4 or 8 if it does not fit)");
  }
  for (const auto& [name, why] : flags_without_effect())
    if (flags.given(name)) notes.push_back("--" + name + " has no effect in swift: " + why);
  return notes;
}

}  // namespace swift::serve
