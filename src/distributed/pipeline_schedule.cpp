// Pipeline stages and the 1F1B order (see pipeline_schedule.h).
#include "swift/distributed/pipeline_schedule.h"

#include <algorithm>

#include "swift/core/error.h"
#include "swift/model/parameter_layout.h"

namespace swift::distributed {

std::vector<int64_t> pipeline_layer_split(int64_t layers, int stages, int64_t first_layers, int64_t last_layers) {
  std::vector<int64_t> share(static_cast<size_t>(stages), 0);
  int64_t rest = layers;
  int first_free = 0, end_free = stages;  // the stages sharing what the fixed ones leave
  if (first_layers > 0) {
    share.front() = first_layers;
    rest -= first_layers;
    first_free = 1;
  }
  if (last_layers > 0 && stages > 1) {
    share.back() = last_layers;
    rest -= last_layers;
    end_free = stages - 1;
  }
  const int64_t free_stages = std::max(0, end_free - first_free);
  SWIFT_CHECK(rest >= 0 && (free_stages > 0 || rest == 0), UsageError,
              "--decoder_first_pipeline_num_layers / --decoder_last_pipeline_num_layers leave " + std::to_string(rest) +
                  " of the model's " + std::to_string(layers) + " layers for " + std::to_string(free_stages) + " stage(s)",
              "give the first and last stages fewer layers, or drop those flags for an even split");
  if (free_stages > 0) {
    for (int s = first_free; s < end_free; ++s) share[static_cast<size_t>(s)] = rest / free_stages;
    // The remainder: one more layer each, stage 0 (which also holds the embedding) taking one last.
    std::vector<int> order;
    for (int st = std::max(first_free, 1); st < end_free; ++st) order.push_back(st);
    if (first_free == 0) order.push_back(0);
    for (int64_t i = 0; i < rest % free_stages; ++i) ++share[static_cast<size_t>(order[static_cast<size_t>(i)])];
  }
  std::vector<int64_t> begin{0};
  for (int s = 0; s < stages; ++s) {
    SWIFT_CHECK(share[static_cast<size_t>(s)] > 0, UsageError,
                "pipeline stage " + std::to_string(s) + " of " + std::to_string(stages) + " would get no layer (the model has " +
                    std::to_string(layers) + ")",
                "use at most as many stages (--pp_size x --virtual_pipeline_model_parallel_size) as layers");
    begin.push_back(begin.back() + share[static_cast<size_t>(s)]);
  }
  return begin;
}

int pipeline_stage_of(const std::string& parameter, const std::vector<int64_t>& layer_begin) {
  const int last = static_cast<int>(layer_begin.size()) - 2;
  const model::ParameterPlace place = model::parameter_place(parameter);
  switch (place.side) {
    case model::ParameterPlace::Side::kInput: return 0;
    case model::ParameterPlace::Side::kOutput: return last;
    case model::ParameterPlace::Side::kLayer: break;
  }
  const auto after = std::upper_bound(layer_begin.begin() + 1, layer_begin.end() - 1, place.layer);
  return static_cast<int>(after - layer_begin.begin()) - 1;
}

int64_t decoder_layers_among(const std::vector<std::string>& parameters) {
  int64_t layers = 0;
  for (const auto& name : parameters) {
    const model::ParameterPlace place = model::parameter_place(name);
    if (place.side == model::ParameterPlace::Side::kLayer) layers = std::max(layers, place.layer + 1);
  }
  return layers;
}

std::vector<PipelinePass> one_forward_one_backward(int stage, int stages, int64_t micro_batches) {
  std::vector<PipelinePass> passes;
  const int64_t warmup = std::min<int64_t>(stages - stage - 1, micro_batches);
  int64_t forward = 0, backward = 0;
  for (; forward < warmup; ++forward) passes.push_back({true, forward});
  for (; forward < micro_batches; ++forward, ++backward) {
    passes.push_back({true, forward});
    passes.push_back({false, backward});
  }
  for (; backward < micro_batches; ++backward) passes.push_back({false, backward});
  return passes;
}

std::vector<PipelinePass> interleaved_one_forward_one_backward(int stage, int stages, int chunks, int64_t micro_batches) {
  if (chunks == 1) return one_forward_one_backward(stage, stages, micro_batches);
  SWIFT_CHECK(micro_batches % stages == 0, UsageError,
              "an interleaved pipeline (--virtual_pipeline_model_parallel_size " + std::to_string(chunks) + ") runs " +
                  std::to_string(micro_batches) + " micro-batches per step, not a multiple of the " +
                  std::to_string(stages) + " stages",
              "set --gradient_accumulation_steps (or --global_batch_size) to a multiple of --pp_size");
  const int64_t total = micro_batches * chunks;  // passes each way
  // The k-th forward (backward) runs chunk (k mod p v) / p (counted from the last for backward) of micro-batch
  // (k / p v) p + k mod p: groups of p micro-batches go through one chunk before the next.
  auto pass = [&](int64_t k, bool forward) {
    const int in_group = static_cast<int>((k % (static_cast<int64_t>(stages) * chunks)) / stages);
    return PipelinePass{forward, (k / (static_cast<int64_t>(stages) * chunks)) * stages + k % stages,
                        forward ? in_group : chunks - 1 - in_group};
  };
  const int64_t warmup = std::min<int64_t>(static_cast<int64_t>(stages - stage - 1) * 2 + static_cast<int64_t>(chunks - 1) * stages, total);
  std::vector<PipelinePass> passes;
  int64_t forward = 0, backward = 0;
  for (; forward < warmup; ++forward) passes.push_back(pass(forward, true));
  for (; forward < total; ++forward, ++backward) {
    passes.push_back(pass(forward, true));
    passes.push_back(pass(backward, false));
  }
  for (; backward < total; ++backward) passes.push_back(pass(backward, false));
  return passes;
}

int64_t pipeline_peak_live_passes(int stage, int stages, int chunks, int64_t micro_batches) {
  const auto passes = chunks > 1 ? interleaved_one_forward_one_backward(stage, stages, chunks, micro_batches)
                                 : one_forward_one_backward(stage, stages, micro_batches);
  int64_t live = 0, peak = 0;
  for (const auto& pass : passes) {
    live += pass.forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

double pipeline_bubble_fraction(int stages, int64_t micro_batches, int chunks) {
  return static_cast<double>(stages - 1) / static_cast<double>(chunks * micro_batches + stages - 1);
}

}  // namespace swift::distributed
