// Hub repository ids as ms-swift writes them on the command line: `org/name` for a model; a dataset may add the
// hub (`hf::org/name`, `ms::org/name`) and subsets (`org/name:subset1/subset2`); `#N` (rows) is data's business
// (data::parse_dataset_spec). Whether a string is an id is decided only after it turned out not to be a local path.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace swift::hub {

enum class Hub { kModelScope, kHuggingFace };
enum class RepoType { kModel, kDataset };

std::string hub_name(Hub hub);             // "ModelScope", "Hugging Face"
std::string repo_type_name(RepoType type);  // "model", "dataset"

// "org/name": exactly two non-empty parts of letters, digits, '_', '-', '.', neither starting with '.' (so "./x",
// "../x", "~/x" and absolute paths are never ids) nor containing "..".
bool is_repo_id(const std::string& text);

struct DatasetId {
  std::string repo_id;               // org/name
  std::vector<std::string> subsets;  // after ':', split on '/'; empty: the default subset
  std::optional<Hub> hub;            // from an "hf::" / "ms::" prefix; unset: --use_hf / USE_HF decide
};

// A --dataset entry without its "#N" as a hub dataset id; nullopt when it is not of that form, or names a data file
// ("data/train.jsonl": a local file that is missing).
std::optional<DatasetId> parse_dataset_id(const std::string& text);

}  // namespace swift::hub
