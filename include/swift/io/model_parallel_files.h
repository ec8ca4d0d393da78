// The weights of a model-parallel checkpoint (`--save_safetensors false` under --tp_size/--pp_size): each rank
// writes the part of the model it holds, so saving sends nothing between ranks (Megatron's per-rank checkpoints,
// in safetensors):
//   model_parallel.json            {"format": "swift-model-parallel", "version": 1, "tensor_parallel_size": T,
//                                   "pipeline_parallel_size": P, "files": ["mp_rank_00_000.safetensors", ...]}
//   mp_rank_TT_PPP.safetensors     what tensor-parallel rank TT of stage PPP holds, under the Hugging Face names; a
//                                  tensor split over the TP group is listed in the file's metadata "swift_splits":
//                                  {"name": [dim, start, whole size]} (its rows or columns [start, start + n)).
//                                  Tensors every TP rank holds whole are written by TP rank 0 only.
// SafetensorsFolder::open reads such a folder as the whole tensors, so every reader of a model folder (training,
// resume at any layout, infer, export) reads it as it reads a Hugging Face one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "swift/io/safetensors.h"

namespace swift::io {

inline constexpr const char* kModelParallelIndex = "model_parallel.json";

// Where one part sits in its whole tensor: rows (dim 0) or columns (dim 1) [start, start + its size) of `whole`.
struct TensorPart {
  int64_t dim = 0;
  int64_t start = 0;
  int64_t whole = 0;
};

// "mp_rank_01_000.safetensors" (Megatron's mp_rank_TT_PPP).
std::string model_part_file_name(int tp_rank, int pp_rank);

// Writes model_parallel.json for tp x pp parts (atomically).
void write_model_parallel_index(const std::filesystem::path& dir, int tp_size, int pp_size);

// The part files model_parallel.json lists, in order. DataError naming the file when it is not such an index.
std::vector<std::string> read_model_parallel_index(const std::filesystem::path& dir);

// Writes one rank's part (atomically): `tensors`, those in `parts` being slices of a split tensor.
void save_model_part(const std::filesystem::path& path, const NamedTensors& tensors,
                     const std::map<std::string, TensorPart>& parts);

// The "swift_splits" of a part file (empty when it has none). DataError naming the file when it is damaged.
std::map<std::string, TensorPart> read_tensor_parts(const SafetensorsFile& file);

}  // namespace swift::io
