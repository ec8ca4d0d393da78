// --deepspeed presets and files, and the parameter partition (see the header).
#include "swift/distributed/zero.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "swift/core/error.h"

namespace swift::distributed {

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

std::string sharding_spec(const std::string& deepspeed, const std::string& fsdp) {
  if (fsdp.empty()) return deepspeed;
  SWIFT_CHECK(deepspeed.empty(), UsageError, "--deepspeed and --fsdp are both given", "choose one");
  if (fsdp.find("shard_grad_op") != std::string::npos) return "zero2";
  if (fsdp.find("no_shard") != std::string::npos) return "zero0";
  if (fsdp.find("full_shard") != std::string::npos || fsdp.find("hybrid_shard") != std::string::npos) return "zero3";
  throw UsageError("--fsdp '" + fsdp + "' does not map to a sharding swift has",
                   "use --fsdp full_shard (= --deepspeed zero3), shard_grad_op (= zero2) or no_shard; "
                   "FSDP config files are not read");
}

std::string optimizer_shard_name(int rank, int world_size) {
  char name[64];
  std::snprintf(name, sizeof(name), "optimizer-rank%05d-of-%05d.safetensors", rank, world_size);
  return name;
}

std::vector<std::filesystem::path> optimizer_state_files(const std::filesystem::path& checkpoint) {
  if (std::filesystem::exists(checkpoint / "optimizer.safetensors")) return {checkpoint / "optimizer.safetensors"};
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(checkpoint)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoint)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("optimizer-rank", 0) == 0 && entry.path().extension() == ".safetensors")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return files;
  int rank = 0, world = 0;
  const bool named = std::sscanf(files.front().filename().string().c_str(), "optimizer-rank%d-of-%d", &rank, &world) == 2;
  const bool complete = named && static_cast<int>(files.size()) == world &&
                        std::all_of(files.begin(), files.end(), [&, r = 0](const std::filesystem::path& f) mutable {
                          return f.filename() == optimizer_shard_name(r++, world);
                        });
  SWIFT_CHECK(complete, DataError,
              checkpoint.string() + " has " + std::to_string(files.size()) + " optimizer shard(s), not the full set of " +
                  (named ? std::to_string(world) : std::string("its ranks")),
              "copy every optimizer-rank*-of-*.safetensors of that checkpoint, or resume with --resume_only_model true");
  return files;
}

ParameterPartition::ParameterPartition(const std::vector<int64_t>& bytes, int world_size)
    : owner_(bytes.size(), 0), load_(static_cast<size_t>(std::max(1, world_size)), 0) {
  // Largest first (LPT): a large parameter that comes last in model order (an untied head) cannot then tip the
  // balance; ties keep model order, so every rank computes the same assignment.
  std::vector<size_t> order(bytes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  for (const size_t i : order) owner_[i] = take(bytes[i]);
}

int ParameterPartition::take(int64_t bytes) {
  const auto lightest = std::min_element(load_.begin(), load_.end());  // first of the least loaded: deterministic
  *lightest += bytes;
  return static_cast<int>(lightest - load_.begin());
}

int ParameterPartition::assign(int64_t bytes) {
  owner_.push_back(take(bytes));
  return owner_.back();
}

}  // namespace swift::distributed
