// --streaming: dataset rows read one at a time, normalised as load_datasets does. .jsonl files are read line by
// line (memory does not grow with the file); .json/.csv/.txt files and built-in datasets are read whole when the
// stream reaches them. A position can be saved and sought back to, and any row re-read from its position.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "swift/data/dataset.h"

namespace swift::data {

// Where a row is: the spec, the file of the spec (a folder holds several), the byte offset of its line
// (.jsonl; the row index otherwise), its line number for messages, and how many rows of the spec came before.
struct StreamPosition {
  size_t spec = 0, file = 0;
  uint64_t offset = 0, line = 0, taken = 0;
  nlohmann::json to_json() const;
  static StreamPosition from_json(const nlohmann::json& j);  // DataError when malformed
  bool operator==(const StreamPosition& o) const {
    return spec == o.spec && file == o.file && offset == o.offset && line == o.line && taken == o.taken;
  }
};

class RowStream {
 public:
  // Specs as --dataset takes them. `path#N` takes the spec's first N rows (sequential, as ms-swift's streaming
  // sampling; fewer when the spec has fewer). UsageError/DataError for a spec that does not exist.
  RowStream(const std::vector<std::string>& specs, DatasetOptions options, std::string flag = "--dataset");
  // The next normalised row and its position; nullopt after the last row of the last spec. DataError naming the
  // file and line for a malformed row, or for a spec without rows.
  std::optional<std::pair<nlohmann::json, StreamPosition>> next();
  const StreamPosition& position() const { return pos_; }  // where next() reads
  void seek(const StreamPosition& position);
  void rewind() { seek({}); }
  // The normalised row at `position` (a position next() returned).
  nlohmann::json read_at(const StreamPosition& position);

 private:
  struct Source {
    DatasetSpec spec;
    bool builtin = false;
    std::vector<std::filesystem::path> files;  // one empty path for a built-in
  };
  bool is_jsonl(const Source& s, size_t file) const;
  const std::vector<nlohmann::json>& whole(size_t spec, size_t file);  // a non-.jsonl file or built-in, cached
  nlohmann::json parse_line(const std::string& line, const std::filesystem::path& file, uint64_t line_no) const;
  nlohmann::json normalise(nlohmann::json row, const Source& s, const std::string& where) const;

  std::vector<Source> sources_;
  DatasetOptions options_;
  std::string flag_;
  StreamPosition pos_;
  std::ifstream in_;  // the .jsonl being read, positioned at pos_ when in_key_ matches
  std::pair<size_t, size_t> in_key_{SIZE_MAX, SIZE_MAX};
  std::ifstream reread_;
  std::filesystem::path reread_path_;
  std::vector<nlohmann::json> whole_;
  std::pair<size_t, size_t> whole_key_{SIZE_MAX, SIZE_MAX};
};

}  // namespace swift::data
