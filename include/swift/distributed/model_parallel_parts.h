// A whole model written as a model-parallel checkpoint's weights (io/model_parallel_files.h) for a layout of
// tp x pp ranks, without running them: what each rank of such a run would write. `swift export --to_mcore true`.
#pragma once

#include <c10/core/ScalarType.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "swift/io/model_parallel_files.h"
#include "swift/model/decoder.h"

namespace swift::distributed {

// This TP rank's slice of a split parameter and where it lies in the whole; nullopt for a parameter kept whole.
using SliceOfParameter =
    std::function<std::optional<std::pair<at::Tensor, io::TensorPart>>(const std::string& name, const at::Tensor& value)>;

// The part file `tp_rank` of pipeline stage `stage` writes (mp_rank_TT_PPP.safetensors in `dir`): of `model`'s
// parameters those `in_stage` keeps, its slice of each split one and, on TP rank 0 only, the ones kept whole,
// cast to `dtype`. The one rule of which rank writes what, for training's parts and for --to_mcore's.
void save_model_part_of_rank(model::CausalLM& model, const std::filesystem::path& dir, int tp_rank, int stage,
                             const std::function<bool(const std::string& name, const at::Tensor& value)>& in_stage,
                             const SliceOfParameter& slice_of, std::optional<c10::ScalarType> dtype);

// Writes the index and one part file per (TP rank, stage) of `model` (whole, unquantized) into `dir`: the split
// and the stages' layers as training at --tp_size `tp` and --pp_size `pp` (a balanced split) lays them out.
// UsageError when the model does not split that way.
void save_model_parallel_parts(model::CausalLM& model, const std::filesystem::path& dir, int tp, int pp,
                               std::optional<c10::ScalarType> dtype);

}  // namespace swift::distributed
