// Writing and reading tokenised datasets (--to_cached_dataset / --cached_dataset).
#include "swift/data/dataset_cache.h"

#include <ATen/ATen.h>

#include <cstdio>

#include "swift/core/error.h"
#include "swift/io/hf_config.h"
#include "swift/io/safetensors.h"
#include "swift/tokenizer/tokenizer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::data {

namespace {
constexpr const char* kFormat = "swift.cached_dataset";
const std::string kHint = "re-create it with swift export --to_cached_dataset true --dataset ... --output_dir DIR";

uint64_t fnv1a(uint64_t h, int64_t v) {
  for (int b = 0; b < 8; ++b) {
    h ^= static_cast<uint64_t>(v >> (8 * b)) & 0xffu;
    h *= 0x100000001b3ULL;
  }
  return h;
}
}  // namespace

json CacheInfo::to_json() const {
  return {{"format", kFormat},
          {"version", version},
          {"split", split},
          {"template", template_name},
          {"model", model},
          {"tokenizer_fingerprint", tokenizer_fingerprint},
          {"loss_scale", loss_scale},
          {"system", system ? json(*system) : json(nullptr)},
          {"agent_template", agent_template},
          {"max_length", max_length},
          {"truncation_strategy", truncation_strategy},
          {"datasets", datasets},
          {"examples", examples},
          {"tokens", tokens},
          {"label_tokens", label_tokens},
          {"encode_report", encode_report}};
}

CacheInfo CacheInfo::from_json(const json& j, const std::string& source) {
  SWIFT_CHECK(j.is_object() && j.value("format", "") == kFormat, DataError,
              source + " is not a swift cached dataset (no \"format\": \"" + kFormat + "\")", kHint);
  CacheInfo c;
  try {
    c.version = j.at("version").get<int>();
    SWIFT_CHECK(c.version == kCachedDatasetVersion, DataError,
                source + " has cached-dataset format version " + std::to_string(c.version) + "; this swift reads version " +
                    std::to_string(kCachedDatasetVersion),
                kHint);
    c.split = j.at("split").get<std::string>();
    c.template_name = j.at("template").get<std::string>();
    c.model = j.at("model").get<std::string>();
    c.tokenizer_fingerprint = j.at("tokenizer_fingerprint").get<std::string>();
    c.loss_scale = j.at("loss_scale").get<std::string>();
    if (!j.at("system").is_null()) c.system = j.at("system").get<std::string>();
    c.agent_template = j.value("agent_template", "");  // caches written before tools: the template's own
    c.max_length = j.at("max_length").get<int64_t>();
    c.truncation_strategy = j.at("truncation_strategy").get<std::string>();
    c.datasets = j.at("datasets").get<std::vector<std::string>>();
    c.examples = j.at("examples").get<uint64_t>();
    c.tokens = j.at("tokens").get<uint64_t>();
    c.label_tokens = j.at("label_tokens").get<uint64_t>();
    c.encode_report = j.value("encode_report", "");
  } catch (const json::exception& e) {
    throw DataError(source + " is malformed: " + e.what(), kHint);
  }
  return c;
}

std::string tokenizer_fingerprint(const tokenizer::Tokenizer& tok) {
  static const std::string probe =
      "Hello, World! The quick brown fox jumps over 13 lazy dogs.\n\tdef f(x): return x**2  # code\n"
      "你好，世界。こんにちは 안녕하세요 Привет мир 😀👍 café naïve <|im_start|><|im_end|><|endoftext|></s><s>[INST]";
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int64_t id : tok.encode(probe, false)) h = fnv1a(h, id);
  h = fnv1a(h, tok.vocab_size());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void write_dataset_cache(const fs::path& dir, const std::vector<Example>& examples, CacheInfo info) {
  fs::create_directories(dir);
  std::vector<int32_t> ids, labels;
  std::vector<int64_t> offsets{0};
  info.tokens = info.label_tokens = 0;
  for (const auto& e : examples) {
    SWIFT_ASSERT(e.segments.empty(), "packed rows are not cached");
    SWIFT_ASSERT(e.input_ids.size() == e.labels.size(), "input_ids and labels differ in length");
    for (size_t t = 0; t < e.input_ids.size(); ++t) {
      ids.push_back(static_cast<int32_t>(e.input_ids[t]));
      labels.push_back(static_cast<int32_t>(e.labels[t]));
      info.label_tokens += t > 0 && e.labels[t] != -100;
    }
    offsets.push_back(static_cast<int64_t>(ids.size()));
  }
  info.examples = examples.size();
  info.tokens = ids.size();
  const auto n = static_cast<int64_t>(ids.size());
  io::NamedTensors tensors = {
      {"input_ids", at::from_blob(ids.data(), {n}, at::kInt).clone()},
      {"labels", at::from_blob(labels.data(), {n}, at::kInt).clone()},
      {"offsets", at::from_blob(offsets.data(), {static_cast<int64_t>(offsets.size())}, at::kLong).clone()}};
  io::save_safetensors(dir / "tokens.safetensors", tensors, {{"format", kFormat}, {"version", std::to_string(info.version)}});
  io::write_json_file(dir / "cache_info.json", info.to_json());
}

CachedDataset read_dataset_cache(const fs::path& path, const std::string& split, const std::string& flag) {
  SWIFT_CHECK(fs::is_directory(path), DataError, flag + " " + path.string() + " is not a folder", kHint);
  CachedDataset out;
  out.dir = fs::exists(path / "cache_info.json") || !fs::exists(path / split / "cache_info.json") ? path : path / split;
  const fs::path info_path = out.dir / "cache_info.json", tokens_path = out.dir / "tokens.safetensors";
  SWIFT_CHECK(fs::exists(info_path), DataError,
              flag + " " + path.string() + " is not a cached dataset (no cache_info.json there or in " + split + "/)", kHint);
  SWIFT_CHECK(fs::exists(tokens_path), DataError, flag + " " + out.dir.string() + " has no tokens.safetensors", kHint);
  out.info = CacheInfo::from_json(io::read_json_file(info_path), info_path.string());
  SWIFT_CHECK(out.info.split == split || out.dir == path, DataError,
              flag + " " + out.dir.string() + " holds the " + out.info.split + " split", "point " + flag + " at the " + split + " split");

  auto file = io::SafetensorsFile::open(tokens_path);  // validates the header and offsets
  auto tensor = [&](const std::string& name, c10::ScalarType dtype) {
    SWIFT_CHECK(file->contains(name), DataError, tokens_path.string() + " has no tensor '" + name + "'", kHint);
    at::Tensor t = file->get(name);
    SWIFT_CHECK(t.scalar_type() == dtype && t.dim() == 1, DataError,
                tokens_path.string() + ": '" + name + "' must be a 1-D " + std::string(c10::toString(dtype)) + " tensor", kHint);
    return t.contiguous();
  };
  const at::Tensor ids = tensor("input_ids", at::kInt), labels = tensor("labels", at::kInt), offsets = tensor("offsets", at::kLong);
  const int64_t n = ids.numel(), examples = offsets.numel() - 1;
  SWIFT_CHECK(labels.numel() == n && examples >= 0, DataError,
              tokens_path.string() + ": input_ids, labels and offsets do not fit together", kHint);
  SWIFT_CHECK(static_cast<uint64_t>(examples) == out.info.examples && static_cast<uint64_t>(n) == out.info.tokens, DataError,
              tokens_path.string() + " holds " + std::to_string(examples) + " examples of " + std::to_string(n) +
                  " tokens but cache_info.json says " + std::to_string(out.info.examples) + " and " +
                  std::to_string(out.info.tokens),
              kHint);
  const int32_t* id = ids.data_ptr<int32_t>();
  const int32_t* label = labels.data_ptr<int32_t>();
  const int64_t* off = offsets.data_ptr<int64_t>();
  SWIFT_CHECK(off[0] == 0 && off[examples] == n, DataError, tokens_path.string() + ": offsets must run from 0 to the token count", kHint);
  out.examples.reserve(static_cast<size_t>(examples));
  for (int64_t e = 0; e < examples; ++e) {
    SWIFT_CHECK(off[e] < off[e + 1], DataError,
                tokens_path.string() + ": offsets are not increasing at example " + std::to_string(e), kHint);
    Example ex;
    ex.input_ids.assign(id + off[e], id + off[e + 1]);
    ex.labels.assign(label + off[e], label + off[e + 1]);
    out.examples.push_back(std::move(ex));
  }
  return out;
}

void check_cache_fits(const CachedDataset& cache, const CacheInfo& expected, const std::string& flag) {
  const auto& c = cache.info;
  const std::string where = flag + " " + cache.dir.string();
  const std::string hint = "train with the flags it was exported with, or re-export it for this model: " + kHint;
  auto name = [](const std::string& t) { return t.empty() ? std::string("plain text") : "template " + t; };
  SWIFT_CHECK(c.template_name == expected.template_name, UsageError,
              where + " was encoded with " + name(c.template_name) + ", this run uses " + name(expected.template_name), hint);
  SWIFT_CHECK(c.loss_scale == expected.loss_scale, UsageError,
              where + " was encoded with --loss_scale " + c.loss_scale + ", this run uses " + expected.loss_scale, hint);
  SWIFT_CHECK(c.system == expected.system, UsageError,
              where + " was encoded with " + (c.system ? "--system '" + *c.system + "'" : std::string("no --system")) +
                  ", this run has " + (expected.system ? "--system '" + *expected.system + "'" : std::string("none")),
              hint);
  SWIFT_CHECK(c.agent_template == expected.agent_template, UsageError,
              where + " was encoded with --agent_template '" + c.agent_template + "', this run uses '" +
                  expected.agent_template + "'",
              hint);
  SWIFT_CHECK(c.tokenizer_fingerprint == expected.tokenizer_fingerprint, UsageError,
              where + " was encoded by another tokenizer (that of " + c.model + ", fingerprint " + c.tokenizer_fingerprint +
                  "; this model's is " + expected.tokenizer_fingerprint + ")",
              hint);
}

}  // namespace swift::data
