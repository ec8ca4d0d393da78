// A tokenised dataset on disk (`swift export --to_cached_dataset true`, read by `swift sft --cached_dataset`).
// One split per folder:
//   tokens.safetensors   input_ids I32 [N], labels I32 [N] (-100 = no loss), offsets I64 [E + 1]: example e is
//                        [offsets[e], offsets[e+1]); __metadata__ {"format": "swift.cached_dataset", "version": "1"}
//   cache_info.json      the format and version, split, template, model, tokenizer fingerprint, --max_length,
//                        --truncation_strategy, --loss_scale, --system, counts (docs/datasets.md)
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "swift/data/example.h"

namespace swift::tokenizer {
class Tokenizer;
}

namespace swift::data {

inline constexpr int kCachedDatasetVersion = 1;

// What a cache was made with, so a run can tell whether it fits.
struct CacheInfo {
  int version = kCachedDatasetVersion;
  std::string split = "train";           // "train" or "val"
  std::string template_name;             // "" for plain text (--use_chat_template false)
  std::string model;                     // the --model folder (for people; the fingerprint is what is checked)
  std::string tokenizer_fingerprint;     // tokenizer_fingerprint() of the tokenizer that encoded it
  std::string loss_scale = "default";
  std::optional<std::string> system;     // --system, when given
  std::string agent_template;            // --agent_template as given ("": the template's own)
  int64_t max_length = 0;
  std::string truncation_strategy = "delete";
  std::vector<std::string> datasets;     // the --dataset / --val_dataset specs
  uint64_t examples = 0, tokens = 0, label_tokens = 0;
  std::string encode_report;             // EncodeReport::summary() of the export
  nlohmann::json to_json() const;
  static CacheInfo from_json(const nlohmann::json& j, const std::string& source);  // DataError when malformed
};

// A hex digest of how `tok` encodes a fixed probe text (letters, digits, CJK, emoji, special tokens) and its
// vocabulary size: two tokenizers with the same digest encode alike for all practical purposes.
std::string tokenizer_fingerprint(const tokenizer::Tokenizer& tok);

// Writes one split into `dir` (created; the caller makes the whole export atomic with AtomicDir). Fills the
// counts of `info`. Plain examples only (not packed rows).
void write_dataset_cache(const std::filesystem::path& dir, const std::vector<Example>& examples, CacheInfo info);

struct CachedDataset {
  std::filesystem::path dir;  // the split folder read
  CacheInfo info;
  std::vector<Example> examples;
};
// Reads `path`: a split folder, or an export folder holding `split`/ ("train" or "val"). Validates everything
// (files present, format and version, dtypes, shapes, offsets, counts); DataError naming the path and what is
// wrong otherwise, with the hint to re-export. `flag` names the flag in messages.
CachedDataset read_dataset_cache(const std::filesystem::path& path, const std::string& split, const std::string& flag);

// Refuses (UsageError naming the cache) a cache made with another template, --loss_scale, --system,
// --use_chat_template or tokenizer than `expected`.
void check_cache_fits(const CachedDataset& cache, const CacheInfo& expected, const std::string& flag);

}  // namespace swift::data
