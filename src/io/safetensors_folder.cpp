// Hugging Face weight folders: opening a single or sharded checkpoint with its index checked against the
// shards, and saving one split the way huggingface_hub's split_torch_state_dict_into_shards does.
#include "swift/io/safetensors_folder.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "swift/core/atomic_write.h"
#include "swift/core/error.h"
#include "swift/io/model_parallel_files.h"

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;  // ordered: the index lists weights in shard order, as huggingface_hub does

namespace swift::io {

namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";
constexpr uint64_t kMaxIndexBytes = 100'000'000;  // an index is a name -> file map; anything larger is not one
const std::map<std::string, std::string> kPerFileMetadata = {{"format", "pt"}};

std::string shard_name(size_t number, size_t count) {
  char name[64];
  std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", number, count);
  return name;
}

// Unreadable counts as absent; the open that follows reports why.
bool path_exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

bool is_safetensors_name(const std::string& name) {
  const std::string suffix = ".safetensors";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The index's weight_map in file order: (tensor name, shard file name).
std::vector<std::pair<std::string, std::string>> read_weight_map(const fs::path& index_path) {
  const std::string index_hint = "the index is damaged; download or export the model again";
  std::error_code ec;
  const uint64_t size = fs::file_size(index_path, ec);
  if (ec) throw DataError("cannot read " + index_path.string() + ": " + ec.message(), "check permissions");
  if (size > kMaxIndexBytes)
    throw DataError(index_path.string() + " is " + std::to_string(size) + " bytes, too large for an index", index_hint);
  std::ifstream in(index_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw DataError("cannot read " + index_path.string(), "check permissions");

  Json index;
  try {
    index = Json::parse(text.str());
  } catch (const Json::exception& e) {
    throw DataError(index_path.string() + " is not valid JSON (" + e.what() + ")", index_hint);
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw DataError(index_path.string() + " has no \"weight_map\" object", index_hint);

  std::vector<std::pair<std::string, std::string>> weight_map;
  for (const auto& [name, file] : index["weight_map"].items()) {
    if (!file.is_string())
      throw DataError(index_path.string() + ": weight_map maps '" + name + "' to a JSON " + file.type_name() +
                          ", expected a file name",
                      index_hint);
    const std::string shard = file.get<std::string>();
    // Shards are plain names inside the folder; a path would let an index reach files outside it.
    if (!is_safetensors_name(shard) || shard.find('/') != std::string::npos || shard.find('\\') != std::string::npos)
      throw DataError(index_path.string() + ": weight_map maps '" + name + "' to '" + shard +
                          "', expected a .safetensors file name in the same folder",
                      index_hint);
    weight_map.emplace_back(name, shard);
  }
  return weight_map;
}

// Mirrors huggingface_hub's split_state_dict_into_shards_factory: walk tensors in order, start a new shard
// when the next tensor would overflow the current one; a tensor over the limit becomes a shard of its own,
// appended at once, while the shard being filled stays open (so it comes after the big one).
std::vector<std::vector<size_t>> plan_shards(const NamedTensors& tensors, uint64_t max_shard_bytes) {
  std::vector<std::vector<size_t>> shards;
  std::vector<size_t> current;
  uint64_t current_bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& tensor = tensors[i].second;
    const uint64_t bytes = uint64_t(tensor.numel()) * tensor.element_size();
    if (bytes > max_shard_bytes) {
      shards.push_back({i});
      continue;
    }
    if (current_bytes + bytes > max_shard_bytes) {
      shards.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
    current.push_back(i);
    current_bytes += bytes;
  }
  if (!current.empty()) shards.push_back(std::move(current));
  return shards;
}

// A previous save may have left a different split behind; its index would point open() at stale shards.
// Same pattern huggingface_hub deletes before saving.
void remove_previous_weights(const fs::path& dir) {
  static const std::regex previous(R"(model(-\d{5}-of-\d{5})?\.safetensors(\.index\.json)?)");
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(dir, ec)) {
    if (!std::regex_match(item.path().filename().string(), previous)) continue;
    std::error_code remove_ec;
    fs::remove(item.path(), remove_ec);
    if (remove_ec)
      throw DataError("cannot remove the old " + item.path().string() + ": " + remove_ec.message(),
                      "check permissions, or save into an empty folder");
  }
}

}  // namespace

SafetensorsFolder SafetensorsFolder::open(const fs::path& dir) {
  SafetensorsFolder folder;
  folder.dir_ = dir;
  const fs::path index_path = dir / kIndexName;

  if (path_exists(index_path)) {
    const auto weight_map = read_weight_map(index_path);
    std::map<std::string, std::string> shard_of;
    std::map<std::string, std::vector<std::string>> names_in_shard;  // sorted, so shards load in file order
    for (const auto& [name, shard] : weight_map) {
      shard_of[name] = shard;
      names_in_shard[shard].push_back(name);
    }
    size_t number = 0;
    for (const auto& [shard, names] : names_in_shard) {
      ++number;
      const fs::path shard_path = dir / shard;
      if (!path_exists(shard_path))
        throw DataError(
            index_path.string() + " lists shard " + shard + " (holding '" + names.front() +
                "'), which is missing from " + dir.string(),
            "the download is incomplete; download all " + std::to_string(names_in_shard.size()) + " shards again");
      auto file = with_context(
          "loading shard " + std::to_string(number) + "/" + std::to_string(names_in_shard.size()) + " " + shard,
          [&] { return SafetensorsFile::open(shard_path); });
      for (const auto& name : names)
        if (!file->contains(name))
          throw DataError(index_path.string() + " maps tensor '" + name + "' to " + shard + ", which does not hold it",
                          "the index and shards come from different exports; download the model again");
      for (const auto& entry : file->entries()) {
        const auto it = shard_of.find(entry.name);
        if (it == shard_of.end() || it->second != shard)
          throw DataError(shard_path.string() + " holds tensor '" + entry.name + "', which " + index_path.string() +
                              (it == shard_of.end() ? " does not list" : " maps to " + it->second),
                          "the index and shards come from different exports; download the model again");
      }
      folder.add(std::move(file));
    }
  } else if (path_exists(dir / kModelParallelIndex)) {
    folder.add_model_parallel_parts(dir);
  } else if (path_exists(dir / kSingleName)) {
    folder.add(SafetensorsFile::open(dir / kSingleName));
  } else {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& item : fs::directory_iterator(dir, ec))
      if (item.is_regular_file(ec) && is_safetensors_name(item.path().filename().string()))
        files.push_back(item.path());
    if (files.empty())
      throw DataError("no safetensors weights in " + dir.string(),
                      "expected " + std::string(kSingleName) + ", or " + kIndexName + " with its shards");
    std::sort(files.begin(), files.end());
    for (const auto& path : files) folder.add(SafetensorsFile::open(path));
  }
  return folder;
}

void SafetensorsFolder::add(std::shared_ptr<SafetensorsFile> file) {
  for (const auto& entry : file->entries()) {
    const auto [it, inserted] = where_.emplace(entry.name, files_.size());
    if (!inserted)
      throw DataError("tensor '" + entry.name + "' is in both " + files_[it->second]->path().string() + " and " +
                          file->path().string(),
                      "remove the stray .safetensors file from " + dir_.string());
  }
  files_.push_back(std::move(file));
}

void SafetensorsFolder::add_model_parallel_parts(const fs::path& dir) {
  const std::string index_path = (dir / kModelParallelIndex).string();
  const std::string hint = "copy every mp_rank_*.safetensors of that checkpoint, or use another one";
  struct Piece {
    size_t file;
    TensorPart part;
  };
  std::map<std::string, std::vector<Piece>> pieces;
  for (const auto& name : read_model_parallel_index(dir)) {
    const fs::path path = dir / name;
    SWIFT_CHECK(path_exists(path), DataError, index_path + " lists " + name + ", which is missing from " + dir.string(), hint);
    auto file = SafetensorsFile::open(path);
    const auto parts = read_tensor_parts(*file);
    for (const auto& [tensor, part] : parts) pieces[tensor].push_back({files_.size(), part});
    std::vector<TensorEntry> whole;
    for (const auto& entry : file->entries())
      if (!parts.count(entry.name)) whole.push_back(entry);
    for (const auto& entry : whole) {
      const auto [it, inserted] = where_.emplace(entry.name, files_.size());
      SWIFT_CHECK(inserted, DataError,
                  "tensor '" + entry.name + "' is in both " + files_[it->second]->path().string() + " and " + path.string(),
                  "the checkpoint is damaged (parts of different saves?); use another one");
    }
    files_.push_back(std::move(file));
  }
  for (auto& [name, list] : pieces) {
    SWIFT_CHECK(!where_.count(name), DataError,
                "tensor '" + name + "' is both whole in " + files_[where_.at(name)]->path().string() + " and split in " +
                    files_[list.front().file]->path().string(),
                "the checkpoint is damaged (parts of different saves?); use another one");
    std::sort(list.begin(), list.end(), [](const Piece& a, const Piece& b) { return a.part.start < b.part.start; });
    Split split;
    split.dim = list.front().part.dim;
    split.whole = files_[list.front().file]->entry(name);
    const auto d = static_cast<size_t>(split.dim);
    int64_t covered = 0;
    for (const auto& piece : list) {
      const TensorEntry& e = files_[piece.file]->entry(name);
      auto expected = split.whole.shape;
      expected[d] = e.shape.size() > d ? e.shape[d] : -1;
      SWIFT_CHECK(piece.part.dim == split.dim && piece.part.whole == list.front().part.whole &&
                      e.dtype == split.whole.dtype && e.shape == expected,
                  DataError,
                  files_[piece.file]->path().string() + "'s part of '" + name + "' does not fit " +
                      files_[list.front().file]->path().string() + "'s (another dimension, dtype or shape)",
                  "the checkpoint is damaged (parts of different saves?); use another one");
      SWIFT_CHECK(piece.part.start == covered, DataError,
                  "'" + name + "' along dimension " + std::to_string(split.dim) + ": " +
                      (piece.part.start < covered ? "[" + std::to_string(piece.part.start) + ", ...) is in two part files"
                                                  : "[" + std::to_string(covered) + ", " + std::to_string(piece.part.start) + ") is in no part file") +
                      " of " + dir.string(),
                  hint);
      covered += e.shape[d];
      split.files.push_back(piece.file);
    }
    SWIFT_CHECK(covered == list.front().part.whole, DataError,
                "'" + name + "' along dimension " + std::to_string(split.dim) + ": [" + std::to_string(covered) + ", " +
                    std::to_string(list.front().part.whole) + ") is in no part file of " + dir.string(),
                hint);
    split.whole.shape[d] = covered;
    split.whole.begin = split.whole.end = 0;
    split_.emplace(name, std::move(split));
  }
}

bool SafetensorsFolder::has_weights(const fs::path& dir) {
  if (path_exists(dir / kIndexName) || path_exists(dir / kSingleName)) return true;
  std::error_code ec;
  for (const auto& item : fs::directory_iterator(dir, ec))
    if (is_safetensors_name(item.path().filename().string())) return true;
  return false;
}

std::vector<std::string> SafetensorsFolder::names() const {
  std::vector<std::string> names;
  names.reserve(where_.size() + split_.size());
  for (const auto& [name, file] : where_) names.push_back(name);
  for (const auto& [name, split] : split_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

const SafetensorsFile& SafetensorsFolder::file_holding(const std::string& name) const {
  const auto it = where_.find(name);
  if (it == where_.end())
    throw DataError(
        "no tensor named '" + name + "' in " + dir_.string() + " (" + std::to_string(where_.size()) + " tensors)",
        "check the tensor name; maybe the checkpoint belongs to another model family");
  return *files_[it->second];
}

const TensorEntry& SafetensorsFolder::entry(const std::string& name) const {
  if (const auto it = split_.find(name); it != split_.end()) return it->second.whole;
  return file_holding(name).entry(name);
}

at::Tensor SafetensorsFolder::get(const std::string& name) const {
  const auto it = split_.find(name);
  if (it == split_.end()) return file_holding(name).get(name);
  std::vector<at::Tensor> parts;
  for (const size_t f : it->second.files) parts.push_back(files_[f]->get(name));
  return at::cat(parts, it->second.dim);
}

at::Tensor SafetensorsFolder::get_slice(const std::string& name, int64_t dim, int64_t start, int64_t length) const {
  const TensorEntry& whole = entry(name);
  SWIFT_ASSERT(dim >= 0 && dim < static_cast<int64_t>(whole.shape.size()) && start >= 0 && length > 0 &&
                   start + length <= whole.shape[static_cast<size_t>(dim)],
               "a slice inside the tensor");
  const auto it = split_.find(name);
  if (it == split_.end()) return file_holding(name).get(name).narrow(dim, start, length);
  const Split& split = it->second;
  std::vector<at::Tensor> pieces;
  int64_t offset = 0;  // where the part starts along split.dim
  for (const size_t f : split.files) {
    const at::Tensor part = files_[f]->get(name);
    const int64_t size = part.size(split.dim);
    if (dim != split.dim) {
      pieces.push_back(part.narrow(dim, start, length));
    } else {
      const int64_t begin = std::max(start, offset), end = std::min(start + length, offset + size);
      if (begin < end) pieces.push_back(part.narrow(dim, begin - offset, end - begin));
    }
    offset += size;
  }
  return pieces.size() == 1 ? pieces.front() : at::cat(pieces, split.dim);
}

void SafetensorsFolder::release(const std::string& name) const {
  const auto it = split_.find(name);
  if (it == split_.end()) return file_holding(name).release(name);
  for (const size_t f : it->second.files) files_[f]->release(name);
}

const fs::path& SafetensorsFolder::file_of(const std::string& name) const {
  if (const auto it = split_.find(name); it != split_.end()) return files_[it->second.files.front()]->path();
  return file_holding(name).path();
}

uint64_t parse_byte_size(const std::string& text, const std::string& flag) {
  const auto fail = [&](const std::string& why) {
    throw UsageError(flag + ": cannot read '" + text + "' as a byte size (" + why + ")",
                     "write a number with an optional unit: 5GB, 500MB, 1.5GiB, 100KB or plain bytes "
                     "(1GB = 10^9 bytes, 1GiB = 2^30)");
  };
  static const std::regex pattern(R"(\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*)");
  std::smatch match;
  if (!std::regex_match(text, match, pattern)) fail("expected a number and a unit");
  std::string unit = match[3].str();
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // huggingface_hub's decimal units, plus the binary ones and a bare "B".
  static const std::map<std::string, uint64_t> kMultipliers = {
      {"", 1},
      {"B", 1},
      {"KB", 1000ULL},
      {"MB", 1000ULL * 1000},
      {"GB", 1000ULL * 1000 * 1000},
      {"TB", 1000ULL * 1000 * 1000 * 1000},
      {"KIB", 1ULL << 10},
      {"MIB", 1ULL << 20},
      {"GIB", 1ULL << 30},
      {"TIB", 1ULL << 40},
  };
  const auto multiplier = kMultipliers.find(unit);
  if (multiplier == kMultipliers.end()) fail("unknown unit '" + match[3].str() + "'");

  const std::string number = match[1].str();
  if (number.find('.') == std::string::npos) {
    // Whole numbers stay exact; a double would round sizes above 2^53.
    uint64_t value = 0;
    for (char digit : number)
      if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, uint64_t(digit - '0'), &value))
        fail("too large");
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(value, multiplier->second, &bytes)) fail("too large");
    return bytes;
  }
  // Fractions: float times multiplier, truncated, as huggingface_hub's parse_size_to_int computes it.
  const double bytes = std::strtod(number.c_str(), nullptr) * static_cast<double>(multiplier->second);
  if (!(bytes < 18446744073709551616.0)) fail("too large");
  return static_cast<uint64_t>(bytes);
}

void save_safetensors_folder(const fs::path& dir, const NamedTensors& tensors, uint64_t max_shard_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw DataError("cannot create " + dir.string() + ": " + ec.message(), "check that the parent is writable");
  std::set<std::string> seen;
  for (const auto& [name, tensor] : tensors)
    SWIFT_CHECK(seen.insert(name).second, UsageError,
                "cannot save " + dir.string() + ": two tensors are named '" + name + "'",
                "each tensor name must be unique");
  remove_previous_weights(dir);

  const auto shards = plan_shards(tensors, max_shard_bytes);
  if (shards.size() <= 1) {
    save_safetensors(dir / kSingleName, tensors, kPerFileMetadata);
    return;
  }
  Json weight_map = Json::object();
  uint64_t total_bytes = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    const std::string file = shard_name(k + 1, shards.size());
    NamedTensors shard;
    for (size_t i : shards[k]) {
      shard.push_back(tensors[i]);
      weight_map[tensors[i].first] = file;
      total_bytes += uint64_t(tensors[i].second.numel()) * tensors[i].second.element_size();
    }
    save_safetensors(dir / file, shard, kPerFileMetadata);
  }
  // Written last: an index only ever names shards that are already complete.
  Json index = Json::object();
  index["metadata"] = {{"total_size", total_bytes}};
  index["weight_map"] = std::move(weight_map);
  atomic_write_file(dir / kIndexName, index.dump(2, ' ', /*ensure_ascii=*/true));  // json.dump(indent=2)
}

}  // namespace swift::io
