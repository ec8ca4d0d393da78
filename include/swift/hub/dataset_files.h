// Which files of a dataset repository are its training rows, as ms-swift asks the hubs for them (subset, split
// "train"): the subsets ("configs") and their data_files that README.md's YAML header declares, as on the Hugging
// Face Hub; without them the repository's .jsonl/.json/.csv files, those named for the train split when some are
// named for a split (train-00000.jsonl, data/train/..., test.csv), and a subset names a folder.
#pragma once

#include <string>
#include <vector>

namespace swift::hub {

// Data files swift reads as rows: .jsonl, .json, .csv, .parquet (as local datasets). Arrow and compressed files
// are recognised only to say they are not supported.
bool is_readable_data_file(const std::string& path);
bool is_unsupported_data_file(const std::string& path);

// The training files among `repo_files` (paths in the repository) for `subsets` (empty: the default one; "all":
// every one). `readme` is README.md's text ("" when there is none). UsageError for a subset the repository does not
// have (naming those it has); DataError when the rows are only in formats swift does not read (Arrow: convert to
// JSON Lines) or there are none. `repo_id` names the dataset in those messages.
std::vector<std::string> select_dataset_files(const std::vector<std::string>& repo_files, const std::string& readme,
                                              const std::vector<std::string>& subsets, const std::string& repo_id);

// fsspec-style glob, as data_files patterns are written: '*' and '?' within one path part, "**" any number of parts.
bool glob_match(const std::string& pattern, const std::string& path);

}  // namespace swift::hub
