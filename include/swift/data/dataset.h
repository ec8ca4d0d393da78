// Datasets as ms-swift reads them: local .jsonl/.json/.csv files, `path#N` sampling, and every row normalised
// to the standard {"messages": [{"role", "content"}...]} form from the common layouts (messages / ShareGPT
// conversations, alpaca instruction/input/output, query/response/history/system and their aliases).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "swift/data/builtin_datasets.h"
#include "swift/hub/hub_settings.h"

namespace swift::data {

// One --dataset / --val_dataset entry: "data.jsonl" or "data.jsonl#500" (use 500 rows: a random subset, or
// the whole file repeated plus a random remainder when 500 exceeds it, as ms-swift's sample_dataset).
struct DatasetSpec {
  std::filesystem::path path;
  std::optional<int64_t> sample;
  std::string text;  // as the user wrote it, for messages
};
DatasetSpec parse_dataset_spec(const std::string& text, const std::string& flag = "--dataset");

// The rows of a file as JSON objects: .jsonl (one object a line; blank lines skipped), .json (an array of
// objects, or one object), .csv (a header row; RFC 4180 quoting). DataError naming the file and line.
std::vector<nlohmann::json> read_rows(const std::filesystem::path& path);

// A row in standard form: "messages" (system first when present, roles system|user|assistant|tool, contents
// strings, optional per-message "loss"), other columns kept. `where` ("data.jsonl:12") names the row in
// errors. Throws DataError for a row no layout fits, with the columns it saw.
nlohmann::json normalise_row(const nlohmann::json& row, const std::string& where);

// How load_datasets reads rows.
struct DatasetOptions {
  BuiltinOptions builtin;  // configures built-in datasets (builtin_datasets.h)
  // --columns: renames columns before normalisation, e.g. {"src": "query", "tgt": "response"}.
  std::map<std::string, std::string> columns;
  hub::HubOptions hub;  // --use_hf, --hub_token: how a hub dataset id (org/name) is fetched (docs/hub.md)
};

// --columns JSON ('{"src": "query"}'); UsageError naming the flag when it is not an object of strings.
std::map<std::string, std::string> parse_columns(const std::string& text);

// The files a spec's path names: the file itself, or a folder's .jsonl/.json/.csv/.txt files in name order.
std::vector<std::filesystem::path> dataset_files(const std::filesystem::path& path);

// The files a spec reads: none for a built-in, a local file or folder's (dataset_files), else a hub dataset id's
// (`org/name`, `hf::org/name:subset`) training files in the hub cache, downloaded when needed. DataError naming
// `flag` when it is none of these.
std::vector<std::filesystem::path> spec_files(const DatasetSpec& spec, const DatasetOptions& options, const std::string& flag);

// Before anything heavy is loaded: every local file of `specs` exists and holds something (a DataError naming it
// otherwise, as reading it would give minutes later, after the model). Built-ins and hub ids pass (they are read
// or downloaded when the rows are loaded).
void check_local_datasets(const std::vector<std::string>& specs, const std::string& flag);

// Applies --columns renames to a raw row (before normalise_row).
nlohmann::json rename_columns(nlohmann::json row, const std::map<std::string, std::string>& columns);

// Reads, normalises and samples every spec, in order. `seed` drives #N sampling. A spec may name a built-in
// dataset, a file (.jsonl, .json, .csv, .txt: one row {"text": line} per non-empty line) or a folder (its
// supported files in name order).
std::vector<nlohmann::json> load_datasets(const std::vector<std::string>& specs, uint64_t seed,
                                          const std::string& flag = "--dataset", const DatasetOptions& options = {});

}  // namespace swift::data
