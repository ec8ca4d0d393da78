// safetensors files: a validated, memory-mapped reader whose tensors alias the mapping, and a writer that
// lays files out as Hugging Face's safetensors library does. Format:
// https://github.com/huggingface/safetensors#format (8-byte little-endian header length, JSON header,
// then the byte buffer).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace swift::io {

// One tensor entry of a header.
struct TensorEntry {
  std::string name;
  std::string dtype;              // as written in the file: "F32", "BF16", ...
  c10::ScalarType scalar_type;    // the LibTorch dtype it maps to
  std::vector<int64_t> shape;
  uint64_t begin = 0;             // byte offsets inside the data buffer
  uint64_t end = 0;
};

// Ordered (name, tensor) list: order is kept where it matters (state dicts, shards).
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class SafetensorsFile {
 public:
  // Maps and validates the whole header (size limit, JSON, dtypes, shapes, offsets in bounds, contiguous,
  // no overlap, no duplicates, byte length = numel * element size). Throws DataError naming the file and,
  // where one is at fault, the tensor.
  static std::shared_ptr<SafetensorsFile> open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const std::vector<TensorEntry>& entries() const { return entries_; }  // in header order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  const TensorEntry& entry(const std::string& name) const;  // throws DataError if absent

  // The tensor on CPU. Aliases the mapping (copy-on-write, so in-place edits never reach the file) when the
  // data is aligned for its dtype; else a copy. The mapping lives as long as any tensor from it. Two get()
  // calls for one name alias the same private pages: an in-place edit through one shows through the other.
  at::Tensor get(const std::string& name) const;

  // Gives the resident pages of `name`'s bytes back to the kernel (they count in the process's memory once
  // read): after loading a tensor whose get() result is no longer used, reading many large tensors one by one
  // then holds one at a time. Whole pages inside the tensor only; a later get() reads the file again. Only once
  // no tensor from get(name) is alive: the mapping is private, and edits made through such a tensor would be lost.
  void release(const std::string& name) const;

  // The data buffer (after the header) inside the mapping; tensors that alias the file point into it.
  const uint8_t* buffer_data() const { return data_; }
  uint64_t buffer_size() const { return data_size_; }

  ~SafetensorsFile();

 private:
  SafetensorsFile() = default;
  std::filesystem::path path_;
  std::shared_ptr<void> mapping_;  // the whole file, MAP_PRIVATE
  const uint8_t* data_ = nullptr;  // start of the byte buffer inside the mapping
  uint64_t data_size_ = 0;
  std::vector<TensorEntry> entries_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (any device; contiguous copies are made on CPU) with the optional `__metadata__`, as the
// safetensors library lays them out: entries ordered by dtype alignment (largest first) then name, header
// padded with spaces to a multiple of 8 bytes; empty `metadata` writes no `__metadata__` key. Atomic
// (temporary sibling + rename). Throws UsageError for what safetensors cannot hold (an undefined or sparse
// tensor, an unsupported dtype, a repeated name, the name `__metadata__`).
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Serialises to bytes (the same layout as save_safetensors).
std::string serialize_safetensors(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata = {});

// Conversions between the file's dtype names and LibTorch's. An unknown name throws DataError, or, when
// `known` is given, sets *known = false and returns ScalarType::Undefined. A LibTorch dtype safetensors cannot
// hold (quantized, complex128, ...) throws UsageError.
c10::ScalarType safetensors_dtype_to_scalar(const std::string& dtype, bool* known = nullptr);
std::string scalar_to_safetensors_dtype(c10::ScalarType type);

}  // namespace swift::io
