// Before the first step: what each rank will need against what its device has, and what to change if it will not
// fit (train/memory_estimate.h), logged as a warning when it does not.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>

#include "swift/distributed/parallel_strategy.h"
#include "swift/train/objective.h"
#include "swift/train/optimizer.h"

namespace swift::train {

struct MemoryReportInputs {
  model::CausalLM model;
  const TrainingObjective& objective;
  distributed::ParallelStrategy& parallel;
  bool adapter = false;                      // LoRA: only the adapter trains
  bool quantized = false;                    // the frozen base is quantized already (QLoRA)
  std::optional<c10::ScalarType> autocast;   // the compute dtype, when mixed
  int64_t per_device_batch = 1;
  int64_t longest_example = 0;               // tokens; 0: not known (then max_length)
  int64_t max_length = 0;                    // --max_length resolved against the model
  bool gradient_checkpointing = true;
  const Optimizer* optimizer = nullptr;      // its planned state against AdamW's; nullptr: AdamW
  int64_t micro_batches = 1;                 // per optimizer step (a pipeline keeps several in flight)
};

void log_memory_estimate(const MemoryReportInputs& in);

}  // namespace swift::train
