// Hugging Face model folders' weights: a single model.safetensors or a sharded set
// (model.safetensors.index.json + model-0000K-of-0000N.safetensors); also swift's model-parallel checkpoints
// (model_parallel.json + a file per rank, model_parallel_files.h), read as the whole tensors.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "swift/io/safetensors.h"

namespace swift::io {

// The weights of a folder, opened lazily: name -> (file, entry). Tensors alias the mappings.
class SafetensorsFolder {
 public:
  // Opens `dir`/model.safetensors.index.json (every shard it names must exist and hold exactly the tensors
  // the weight_map gives it), else `dir`/model_parallel.json (every part file it lists must exist, and the parts of
  // each split tensor cover it exactly once), else `dir`/model.safetensors, else every *.safetensors in the folder
  // (a name in two files is an error). Throws DataError naming what is missing or inconsistent.
  static SafetensorsFolder open(const std::filesystem::path& dir);
  // True when the folder holds any safetensors weights.
  static bool has_weights(const std::filesystem::path& dir);

  std::vector<std::string> names() const;  // sorted
  bool contains(const std::string& name) const { return where_.count(name) > 0 || split_.count(name) > 0; }
  // A split tensor's entry has its whole shape (and no byte offsets); get() puts its parts together (a copy).
  const TensorEntry& entry(const std::string& name) const;
  at::Tensor get(const std::string& name) const;
  // [start, start + length) of `name` along `dim`: a view of the mapping, or for a split tensor only the parts that
  // slice overlaps, put together (a tensor-parallel rank's rows or columns, never the whole tensor in memory).
  at::Tensor get_slice(const std::string& name, int64_t dim, int64_t start, int64_t length) const;
  void release(const std::string& name) const;  // SafetensorsFile::release
  const std::filesystem::path& file_of(const std::string& name) const;  // a split tensor's: its first part's

 private:
  // A tensor of a model-parallel checkpoint kept in parts: (file index, where the part sits), in order along dim.
  struct Split {
    TensorEntry whole;
    int64_t dim = 0;
    std::vector<size_t> files;
  };
  void add(std::shared_ptr<SafetensorsFile> file);  // throws DataError on a name already held
  void add_model_parallel_parts(const std::filesystem::path& dir);
  const SafetensorsFile& file_holding(const std::string& name) const;  // throws DataError if absent

  std::filesystem::path dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;  // name -> index in files_
  std::map<std::string, Split> split_;
};

// "5GB", "500MB", "1.5GiB", "100000" (bytes). Decimal units as Hugging Face: 1GB = 10^9, 1GiB = 2^30.
// Throws UsageError naming `flag`.
uint64_t parse_byte_size(const std::string& text, const std::string& flag = "--max_shard_size");

// Saves as huggingface_hub's save_torch_state_dict does (split_torch_state_dict_into_shards): tensors are
// walked in the given order and fill the current shard; a tensor that would overflow it closes it and starts
// the next. A tensor larger than max_shard_bytes becomes a shard of its own at once, while the shard being
// filled stays open and continues after it (so [a, BIG, b] gives shards [BIG], [a, b]). One shard is saved
// as model.safetensors, more as model-0000K-of-0000N.safetensors plus model.safetensors.index.json
// {"metadata": {"total_size": bytes}, "weight_map": {name: file}} (indent 2, in shard order). Sizes are the
// tensors' bytes (numel * element size); tensors sharing storage are not grouped. Each file carries
// {"format": "pt"}. Old model*.safetensors files and index in `dir` are removed first, as huggingface_hub
// does. Writes into `dir` (which the caller usually makes atomic with AtomicDir); each file is atomic.
void save_safetensors_folder(const std::filesystem::path& dir, const NamedTensors& tensors,
                             uint64_t max_shard_bytes = 5000000000ULL);

}  // namespace swift::io
