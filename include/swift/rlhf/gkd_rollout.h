// GKD's training data (ms-swift 4.6's GKDTrainer._rollout_samples): the loop's micro-batches are the dataset's
// conversations, drawn a generation batch (steps_per_generation micro-batches) at a time. For each generation batch
// ms-swift draws python's random.Random(--seed + global step).random(); at or below --lmbda the student answers the
// batch's prompts itself (the reply is dropped, the policy generates a completion with its current weights, and the
// completion, its stop token kept, becomes the reply that carries loss), else the dataset's replies train as they
// are. Each rank generates its own rows' completions.
#pragma once

#include <c10/core/ScalarType.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "swift/data/train_data.h"
#include "swift/model/decoder.h"
#include "swift/rlhf/rlhf_options.h"

namespace swift::distributed {
class ParallelStrategy;
}

namespace swift::rlhf {

// Which generation batches (data::Example::rollout_round) the student answered: shared with the objective, which
// adds --sft_alpha's cross-entropy to the others only.
struct GkdSources {
  std::map<int64_t, bool> student_by_round;
};

struct GkdSetup {
  GkdOptions options;
  model::CausalLM policy{nullptr};
  distributed::ParallelStrategy* parallel = nullptr;
  std::vector<int64_t> stop_token_ids;
  int64_t accumulation = 1;  // micro-batches per optimizer step
  uint64_t seed = 42;
  std::optional<c10::ScalarType> autocast;  // the training pass's: generation too
  std::shared_ptr<GkdSources> sources;
};

std::unique_ptr<data::TrainData> gkd_data(std::unique_ptr<data::TrainData> rows, GkdSetup setup);

}  // namespace swift::rlhf
