// --deepspeed presets and files, and the parameter partition (see the header).
#include "swift/dist/zero.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "swift/core/error.h"

namespace swift::dist {

namespace {

// A DeepSpeed value that may be "auto" (DeepSpeed then derives it from the Trainer): nullopt then.
bool is_auto(const nlohmann::json& v) { return v.is_string() && v.get<std::string>() == "auto"; }

bool offloads_to_cpu(const nlohmann::json& zero, const char* key, const std::string& file) {
  if (!zero.contains(key) || zero[key].is_null()) return false;
  const auto& section = zero[key];
  SWIFT_CHECK(section.is_object(), UsageError, "--deepspeed " + file + ": zero_optimization." + key + " is not an object",
              "write e.g. \"" + std::string(key) + "\": {\"device\": \"cpu\"}");
  const std::string device = section.value("device", std::string("none"));
  SWIFT_CHECK(device == "cpu" || device == "none", UsageError,
              "--deepspeed " + file + ": zero_optimization." + key + ".device '" + device + "' is not supported",
              "use \"cpu\" or \"none\" (NVMe offload is not available)");
  return device == "cpu";
}

ZeroConfig from_file(const std::string& path) {
  std::ifstream in(path);
  SWIFT_CHECK(in.good(), UsageError, "--deepspeed " + path + " is neither a preset nor a readable file",
              "use zero0, zero1, zero2, zero3, zero2_offload, zero3_offload or a DeepSpeed JSON file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("--deepspeed " + path + " is not valid JSON: " + e.what(), "check the file");
  }
  ZeroConfig c;
  c.source = path;
  if (!j.contains("zero_optimization")) return c;  // DeepSpeed's default: stage 0
  const auto& zero = j["zero_optimization"];
  SWIFT_CHECK(zero.is_object(), UsageError, "--deepspeed " + path + ": zero_optimization is not an object",
              "write e.g. \"zero_optimization\": {\"stage\": 2}");
  if (zero.contains("stage") && !is_auto(zero["stage"])) {
    SWIFT_CHECK(zero["stage"].is_number_integer(), UsageError,
                "--deepspeed " + path + ": zero_optimization.stage is not a number", "use 0, 1, 2 or 3");
    c.stage = zero["stage"].get<int>();
  }
  c.offload_optimizer = offloads_to_cpu(zero, "offload_optimizer", path);
  c.offload_param = offloads_to_cpu(zero, "offload_param", path);
  if (zero.contains("reduce_bucket_size") && !is_auto(zero["reduce_bucket_size"])) {
    SWIFT_CHECK(zero["reduce_bucket_size"].is_number() && zero["reduce_bucket_size"].get<double>() > 0, UsageError,
                "--deepspeed " + path + ": zero_optimization.reduce_bucket_size must be a positive number", "or \"auto\"");
    c.reduce_bucket_bytes = static_cast<int64_t>(zero["reduce_bucket_size"].get<double>()) * 4;  // elements, fp32
  }
  return c;
}

}  // namespace

ZeroConfig parse_deepspeed(const std::string& spec) {
  ZeroConfig c;
  c.source = spec.empty() ? "none" : spec;
  if (spec.empty() || spec == "zero0") return c;
  if (spec == "zero1") {
    c.stage = 1;
  } else if (spec == "zero2" || spec == "zero2_offload") {
    c.stage = 2;
    c.offload_optimizer = spec == "zero2_offload";
  } else if (spec == "zero3" || spec == "zero3_offload") {
    c.stage = 3;
    c.offload_optimizer = c.offload_param = spec == "zero3_offload";
  } else {
    c = from_file(spec);
  }
  SWIFT_CHECK(c.stage >= 0 && c.stage <= 3, UsageError,
              "--deepspeed " + spec + ": ZeRO stage " + std::to_string(c.stage) + " does not exist", "use 0, 1, 2 or 3");
  return c;
}

ParameterPartition::ParameterPartition(const std::vector<int64_t>& bytes, int world_size)
    : owner_(bytes.size(), 0), load_(static_cast<size_t>(std::max(1, world_size)), 0) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    const auto lightest = std::min_element(load_.begin(), load_.end());  // first of the least loaded: deterministic
    owner_[i] = static_cast<int>(lightest - load_.begin());
    *lightest += bytes[i];
  }
}

}  // namespace swift::dist
