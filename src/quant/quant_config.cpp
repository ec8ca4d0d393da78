// quantization_config <-> QuantConfig (see the header).
#include "swift/quant/quant_config.h"

#include <algorithm>
#include <optional>
#include <regex>

#include "swift/core/error.h"

namespace swift::quant {

c10::ScalarType parse_compute_dtype(const std::string& spelled, const std::string& where) {
  // ms-swift's args.json may spell it as a torch dtype ("torch.bfloat16").
  const std::string name = spelled.rfind("torch.", 0) == 0 ? spelled.substr(6) : spelled;
  if (name == "bfloat16" || name == "bf16") return c10::kBFloat16;
  if (name == "float16" || name == "fp16" || name == "half") return c10::kHalf;
  if (name == "float32" || name == "fp32" || name == "float") return c10::kFloat;
  throw UsageError(where + ": unknown dtype '" + name + "'", "use bfloat16, float16 or float32");
}

const char* dtype_json_name(c10::ScalarType t) {
  switch (t) {
    case c10::kBFloat16: return "bfloat16";
    case c10::kHalf: return "float16";
    case c10::kFloat: return "float32";
    case c10::kByte: return "uint8";
    case c10::kChar: return "int8";
    default: return "float32";
  }
}

namespace {

c10::ScalarType parse_storage(const std::string& name, const std::string& where) {
  if (name == "uint8") return c10::kByte;
  if (name == "int8") return c10::kChar;
  if (name == "float64") return c10::kDouble;
  return parse_compute_dtype(name, where);  // bf16 / fp16 / fp32 storage, as bitsandbytes allows (for FSDP)
}

}  // namespace

std::optional<QuantConfig> read_quantization_config(const nlohmann::json& config, const std::string& source) {
  if (!config.is_object() || !config.contains("quantization_config")) return std::nullopt;
  const nlohmann::json& q = config["quantization_config"];
  const std::string where = source + " quantization_config";
  SWIFT_CHECK(q.is_object(), DataError, where + " is not an object", "re-save the model");
  const std::string method = q.value("quant_method", std::string("bitsandbytes"));
  SWIFT_CHECK(method == "bitsandbytes", DataError,
              where + ": quant_method '" + method + "' is not supported (only bitsandbytes 4-bit and 8-bit)",
              "use the model's unquantized folder (optionally with --quant_method bnb)");
  auto flag = [&](const char* a, const char* b) {
    return (q.contains(a) && q[a].is_boolean() && q[a].get<bool>()) || (q.contains(b) && q[b].is_boolean() && q[b].get<bool>());
  };
  const bool four = flag("load_in_4bit", "_load_in_4bit"), eight = flag("load_in_8bit", "_load_in_8bit");
  SWIFT_CHECK(four != eight, DataError, where + ": exactly one of load_in_4bit and load_in_8bit must be true",
              "fix config.json or re-save the model");
  QuantConfig c;
  c.bits = four ? 4 : 8;
  auto str = [&](const char* key, const std::string& fallback) {
    return q.contains(key) && q[key].is_string() ? q[key].get<std::string>() : fallback;
  };
  try {  // a bad value in the file is the file's problem (DataError), not a flag's
    c.four_bit.type = parse_four_bit_type(str("bnb_4bit_quant_type", "fp4"), where + " bnb_4bit_quant_type");
    c.four_bit.storage = parse_storage(str("bnb_4bit_quant_storage", "uint8"), where + " bnb_4bit_quant_storage");
  } catch (const UsageError& e) {
    throw DataError(e.what(), "fix config.json or re-save the model");
  }
  c.four_bit.double_quant = q.contains("bnb_4bit_use_double_quant") && q["bnb_4bit_use_double_quant"].is_boolean() &&
                            q["bnb_4bit_use_double_quant"].get<bool>();
  // bnb_4bit_compute_dtype is not read: a saved folder computes in its activations' dtype (load_model).
  if (q.contains("llm_int8_threshold") && q["llm_int8_threshold"].is_number())
    c.llm_int8_threshold = q["llm_int8_threshold"].get<double>();
  if (q.contains("llm_int8_skip_modules") && q["llm_int8_skip_modules"].is_array())
    for (const auto& m : q["llm_int8_skip_modules"])
      if (m.is_string()) c.skip_modules.push_back(m.get<std::string>());
  return c;
}

nlohmann::json quantization_config_json(const QuantConfig& c) {
  nlohmann::json skip = nullptr;
  if (!c.skip_modules.empty()) skip = c.skip_modules;
  const bool four = c.bits == 4;
  return nlohmann::json{{"quant_method", "bitsandbytes"},
                                {"_load_in_8bit", !four},
                                {"_load_in_4bit", four},
                                {"llm_int8_threshold", c.llm_int8_threshold},
                                {"llm_int8_skip_modules", skip},
                                {"llm_int8_enable_fp32_cpu_offload", false},
                                {"llm_int8_has_fp16_weight", false},
                                {"bnb_4bit_quant_type", four_bit_type_name(c.four_bit.type)},
                                {"bnb_4bit_use_double_quant", four && c.four_bit.double_quant},
                                {"bnb_4bit_compute_dtype", dtype_json_name(c.compute_dtype.value_or(c10::kFloat))},
                                {"bnb_4bit_quant_storage", dtype_json_name(c.four_bit.storage)},
                                {"load_in_4bit", four},
                                {"load_in_8bit", !four}};
}

// transformers' should_convert_module: a pattern skips a module when it matches the module name from the start up
// to a module boundary (as a regex: "model.layers.1" covers "model.layers.1.mlp.up_proj" but not
// "model.layers.11..."), or when the name ends with it ("o_proj", "mlp.down_proj").
bool skipped(const QuantConfig& config, const std::string& module_name) {
  for (const auto& pattern : config.skip_modules) {
    if (pattern.empty()) continue;
    if (module_name.size() >= pattern.size() &&
        module_name.compare(module_name.size() - pattern.size(), pattern.size(), pattern) == 0)
      return true;
    std::optional<std::regex> re;
    try {
      re.emplace(pattern);
    } catch (const std::regex_error&) {  // not a regex: a literal prefix
    }
    for (size_t end = 1; end <= module_name.size(); ++end) {
      const bool boundary = end == module_name.size() || module_name[end] == '.' || module_name[end - 1] == '.';
      if (!boundary) continue;
      const std::string prefix = module_name.substr(0, end);
      if (re ? std::regex_match(prefix, *re) : prefix == pattern) return true;
    }
  }
  return false;
}

}  // namespace swift::quant
