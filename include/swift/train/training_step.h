// One optimizer step: `micro_batches` micro-batches forward and backward (the loss of each divided by the units of
// the whole step on all ranks, so k micro-batches of b equal one batch of k*b and 2 ranks equal 1), the strategy's
// exchanges at their points, the gradients unscaled (float16) and clipped, and the update, skipped when the
// gradients are not finite (a float16 overflow, or a NaN/inf loss or gradient in any precision).
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>

#include "swift/data/train_data.h"
#include "swift/distributed/parallel_strategy.h"
#include "swift/train/adamw.h"
#include "swift/train/grad_scaler.h"
#include "swift/train/metric_window.h"
#include "swift/train/objective.h"

namespace swift::train {

// What every step uses.
struct StepContext {
  model::CausalLM model;
  TrainingObjective& objective;
  distributed::ParallelStrategy& parallel;
  Optimizer& optimizer;
  GradScaler* scaler = nullptr;             // float16: dynamic loss scaling; null otherwise
  std::optional<c10::ScalarType> autocast;  // the compute dtype over the weights' (mixed precision)
  double max_grad_norm = 1.0;               // 0: no clipping
  int64_t pad_id = 0;
};

struct StepResult {
  double grad_norm = 0;  // before clipping, over all ranks' gradients
  bool skipped = false;  // the gradients were not finite (a float16 overflow, or NaN/inf): no update
};

// Draws `micro_batches` global micro-batches from `data` (each rank trains on its slice), adds each one's metrics
// to `window`, and updates at learning rate `lr`. `first_step`: the strategy logs what it measured in it.
StepResult train_step(StepContext& context, data::TrainData& data, int64_t micro_batches, double lr, bool first_step,
                      MetricWindow& window);

}  // namespace swift::train
