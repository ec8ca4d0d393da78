// A model-parallel checkpoint's index and part files (see model_parallel_files.h).
#include "swift/io/model_parallel_files.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "swift/core/error.h"
#include "swift/io/hf_config.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::io {

namespace {

constexpr const char* kFormat = "swift-model-parallel";
constexpr const char* kSplitsKey = "swift_splits";

}  // namespace

std::string model_part_file_name(int tp_rank, int pp_rank) {
  char name[64];
  std::snprintf(name, sizeof(name), "mp_rank_%02d_%03d.safetensors", tp_rank, pp_rank);
  return name;
}

void write_model_parallel_index(const fs::path& dir, int tp_size, int pp_size) {
  json files = json::array();
  for (int p = 0; p < pp_size; ++p)
    for (int t = 0; t < tp_size; ++t) files.push_back(model_part_file_name(t, p));
  write_json_file(dir / kModelParallelIndex, {{"format", kFormat},
                                              {"version", 1},
                                              {"tensor_parallel_size", tp_size},
                                              {"pipeline_parallel_size", pp_size},
                                              {"files", files}});
}

std::vector<std::string> read_model_parallel_index(const fs::path& dir) {
  const fs::path path = dir / kModelParallelIndex;
  const json index = read_json_file(path);
  const std::string hint = "the checkpoint is damaged; resume from another one";
  SWIFT_CHECK(index.is_object() && index.value("format", std::string()) == kFormat && index.contains("files") &&
                  index["files"].is_array() && !index["files"].empty(),
              DataError, path.string() + " is not a swift model-parallel index (format \"" + kFormat + "\" with \"files\")",
              hint);
  std::vector<std::string> files;
  for (const auto& f : index["files"]) {
    // Plain names inside the folder: a path would let an index reach files outside it.
    SWIFT_CHECK(f.is_string() && f.get<std::string>().find('/') == std::string::npos &&
                    f.get<std::string>().find('\\') == std::string::npos,
                DataError, path.string() + ": \"files\" holds " + f.dump() + ", expected a file name in the same folder",
                hint);
    files.push_back(f.get<std::string>());
  }
  return files;
}

void save_model_part(const fs::path& path, const NamedTensors& tensors, const std::map<std::string, TensorPart>& parts) {
  json splits = json::object();
  for (const auto& [name, part] : parts) splits[name] = {part.dim, part.start, part.whole};
  save_safetensors(path, tensors, {{"format", "pt"}, {kSplitsKey, splits.dump()}});
}

std::map<std::string, TensorPart> read_tensor_parts(const SafetensorsFile& file) {
  std::map<std::string, TensorPart> parts;
  const auto it = file.metadata().find(kSplitsKey);
  if (it == file.metadata().end()) return parts;
  const std::string where = file.path().string() + ": metadata \"" + kSplitsKey + "\"";
  const std::string hint = "the checkpoint is damaged; resume from another one";
  json splits;
  try {
    splits = json::parse(it->second);
  } catch (const json::exception& e) {
    throw DataError(where + " is not valid JSON (" + e.what() + ")", hint);
  }
  SWIFT_CHECK(splits.is_object(), DataError, where + " is not an object", hint);
  for (const auto& [name, value] : splits.items()) {
    SWIFT_CHECK(file.contains(name), DataError, where + " lists '" + name + "', which the file does not hold", hint);
    const auto& shape = file.entry(name).shape;
    SWIFT_CHECK(value.is_array() && value.size() == 3 && value[0].is_number_integer() && value[1].is_number_integer() &&
                    value[2].is_number_integer(),
                DataError, where + ": '" + name + "' has " + value.dump() + ", expected [dim, start, whole size]", hint);
    const TensorPart part{value[0].get<int64_t>(), value[1].get<int64_t>(), value[2].get<int64_t>()};
    SWIFT_CHECK(part.dim >= 0 && part.dim < static_cast<int64_t>(shape.size()) && part.start >= 0 &&
                    part.start + shape[static_cast<size_t>(part.dim)] <= part.whole,
                DataError, where + ": '" + name + "' is placed outside its whole tensor (" + value.dump() + ")", hint);
    parts.emplace(name, part);
  }
  return parts;
}

}  // namespace swift::io
