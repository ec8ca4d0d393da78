// ms-swift's quantization flags (see the header).
#include "swift/quant/quant_flags.h"

#include "swift/core/error.h"
#include "swift/core/logging.h"

#include <map>
#include <string>
#include <vector>

namespace swift::quant {

std::vector<cli::FlagSpec> quant_flags() {
  using cli::FlagType;
  return {
      {"quant_method", FlagType::kString, "", "quantize the decoder's linear layers on load: bnb (bitsandbytes formats)"},
      {"quant_bits", FlagType::kInt, "0", "with --quant_method bnb: 4 (NF4/FP4, QLoRA) or 8 (LLM.int8)"},
      {"bnb_4bit_quant_type", FlagType::kString, "nf4", "4-bit data type: nf4 or fp4"},
      {"bnb_4bit_use_double_quant", FlagType::kBool, "true", "quantize the 4-bit block maxima again in 8 bits"},
      {"bnb_4bit_compute_dtype", FlagType::kString, "", "dtype quantized weights compute in (default: --torch_dtype)"},
      {"bnb_4bit_quant_storage", FlagType::kString, "uint8", "dtype the packed 4-bit bytes are stored as (uint8, bfloat16, ...)"},
      {"bnb_4bit_blocksize", FlagType::kInt, "64", "values per 4-bit block (a power of two, 32-4096)"},
  };
}

std::optional<quant::QuantConfig> quant_config_from_flags(const cli::Flags& flags, int default_bits) {
  std::string method = flags.str("quant_method");
  int64_t bits = flags.integer("quant_bits");
  if (method.empty() && bits == 0 && default_bits == 0) return std::nullopt;
  if (method.empty() && bits == 0) {
    method = "bnb";
    bits = default_bits;
  } else if (method.empty()) {
    method = "bnb";
    log_info("--quant_bits ", bits, " without --quant_method: using bitsandbytes' formats (--quant_method bnb)");
  }
  SWIFT_CHECK(method == "bnb" || method == "bitsandbytes", UsageError,
              "--quant_method " + method + " is not supported",
              "use --quant_method bnb (bitsandbytes NF4/FP4 and int8); hqq, eetq, awq, gptq and fp8 are not available");
  SWIFT_CHECK(bits == 4 || bits == 8, UsageError,
              "--quant_bits " + std::to_string(bits) + " is not available with --quant_method bnb", "use --quant_bits 4 or 8");
  quant::QuantConfig c;
  c.bits = static_cast<int>(bits);
  c.four_bit.type = quant::parse_four_bit_type(flags.str("bnb_4bit_quant_type"), "--bnb_4bit_quant_type");
  c.four_bit.double_quant = flags.boolean("bnb_4bit_use_double_quant");
  c.four_bit.blocksize = flags.integer("bnb_4bit_blocksize");
  quant::check_four_bit_blocksize(c.four_bit.blocksize, "--bnb_4bit_blocksize");
  const std::string storage = flags.str("bnb_4bit_quant_storage");
  c.four_bit.storage = storage == "uint8" || storage.empty()
                           ? c10::kByte
                           : quant::parse_compute_dtype(storage, "--bnb_4bit_quant_storage");
  const std::string compute = flags.str("bnb_4bit_compute_dtype");
  if (!compute.empty()) c.compute_dtype = quant::parse_compute_dtype(compute, "--bnb_4bit_compute_dtype");
  return c;
}

namespace {

// The quantization flags of a run's args.json as text ("" = not recorded), when the run quantized: ms-swift
// quantizes only with a quant_method (its args.json may hold "quant_bits": 4 without one); swift's own qlora
// records its method too, and an older one only "train_type": "qlora".
std::map<std::string, std::string> recorded_quant_flags(const nlohmann::json& args) {
  std::map<std::string, std::string> out;
  if (!args.is_object()) return out;
  const bool method = args.contains("quant_method") && args["quant_method"].is_string();
  const bool qlora = args.contains("train_type") && args["train_type"] == "qlora";
  if (!method && !qlora) return out;
  for (const auto& spec : quant_flags()) {
    if (!args.contains(spec.name) || args[spec.name].is_null()) continue;
    const auto& v = args[spec.name];
    out[spec.name] = v.is_string() ? v.get<std::string>() : v.is_boolean() ? (v.get<bool>() ? "true" : "false") : v.dump();
  }
  if (!method) out["quant_bits"] = out.count("quant_bits") && out["quant_bits"] != "0" ? out["quant_bits"] : "4";
  return out;
}

std::optional<quant::QuantConfig> config_from_values(const std::map<std::string, std::string>& values) {
  std::vector<std::string> argv;
  for (const auto& [name, value] : values) {
    argv.push_back("--" + name);
    argv.push_back(value);
  }
  return quant_config_from_flags(cli::parse_flags("args.json", quant_flags(), argv));
}

}  // namespace

std::optional<quant::QuantConfig> quant_config_from_args(const nlohmann::json& args) {
  const auto values = recorded_quant_flags(args);
  if (values.empty()) return std::nullopt;
  return config_from_values(values);
}

std::optional<quant::QuantConfig> quant_config_for(const cli::Flags& flags, const nlohmann::json& args) {
  // --quant_method / --quant_bits on the command line decide alone; other --bnb_4bit_* flags refine what the
  // adapter's run recorded (they do not quantize by themselves).
  if (flags.given("quant_method") || flags.given("quant_bits")) return quant_config_from_flags(flags);
  auto values = recorded_quant_flags(args);
  if (values.empty()) return std::nullopt;
  for (const auto& spec : quant_flags())
    if (flags.given(spec.name)) values[spec.name] = flags.str(spec.name);
  return config_from_values(values);
}

}  // namespace swift::quant
