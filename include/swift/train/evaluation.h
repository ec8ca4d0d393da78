// Evaluation over the validation examples: the objective's metrics, summed over every batch of every rank, so the
// result is one process's.
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "swift/data/example.h"
#include "swift/distributed/parallel_strategy.h"
#include "swift/train/objective.h"

namespace swift::train {

// Every rank evaluates every world_size-th batch of `batch_size` examples. Where the strategy needs every rank in
// every forward pass (parameter sharding), a rank past the end re-runs the first batch without counting it.
std::vector<std::pair<std::string, double>> evaluate(model::CausalLM& model, TrainingObjective& objective,
                                                     distributed::ParallelStrategy& parallel,
                                                     const std::vector<data::Example>& examples, int64_t batch_size,
                                                     int64_t pad_id, std::optional<c10::ScalarType> autocast);

}  // namespace swift::train
