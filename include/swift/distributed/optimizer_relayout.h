// Optimizer state written at one tensor-parallel layout, read at another: each rank of a TP group saves the state
// of its slices (optimizer-rank*-of-*.safetensors); resuming at another TP size (one rank, DDP, ZeRO, TP=4, ...)
// puts each split state tensor back together from the slices the ranks wrote and cuts this rank's part. The
// saved layout is read off the shapes: a state tensor 1/k of its parameter along one dimension was written by
// the ranks of one TP group (TP is innermost: slice i came from a rank r with r % k == i).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace swift::distributed {

// A trainable parameter as this rank holds it: its whole shape, and the part it keeps (`index` of `count` equal
// parts along `dim`; dim -1: all of it).
struct ParameterSlice {
  std::string name;
  std::vector<int64_t> whole_shape;
  int64_t dim = -1;
  int64_t index = 0, count = 1;
};

// When any state tensor of `parameters` in `files` is not shaped as this rank needs it: a file in `scratch_dir`
// holding every state tensor in this rank's layout (the caller loads it, then removes it). nullopt: the files fit.
// DataError (naming the checkpoint) when the slices do not add up.
std::optional<std::filesystem::path> relayout_optimizer_state(const std::vector<std::filesystem::path>& files,
                                                              const std::vector<ParameterSlice>& parameters,
                                                              const std::filesystem::path& scratch_dir, int rank);

}  // namespace swift::distributed
