// A whole model written as a model-parallel checkpoint's weights (io/model_parallel_files.h) for a layout of
// tp x pp ranks, without running them: what each rank of such a run would write. `swift export --to_mcore true`.
#pragma once

#include <c10/core/ScalarType.h>

#include <filesystem>
#include <optional>

#include "swift/model/decoder.h"

namespace swift::distributed {

// Writes the index and one part file per (TP rank, stage) of `model` (whole, unquantized) into `dir`: the split
// and the stages' layers as training at --tp_size `tp` and --pp_size `pp` (a balanced split) lays them out.
// UsageError when the model does not split that way.
void save_model_parallel_parts(model::CausalLM& model, const std::filesystem::path& dir, int tp, int pp,
                               std::optional<c10::ScalarType> dtype);

}  // namespace swift::distributed
