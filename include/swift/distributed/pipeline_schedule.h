// How a pipeline is laid out and scheduled (Megatron-LM's non-interleaved pipeline): which decoder layers each stage
// runs, and the order in which a stage runs the forward and backward passes of a step's micro-batches.
//   1F1B (PipeDream-Flush): stage s of p first runs min(p - s - 1, m) forwards (warm-up), then alternates one
//   forward and one backward (steady state), then runs the backwards left (cool-down). A stage keeps at most p - s
//   micro-batches' activations (not m, as running every forward first would), and the step's idle share, the
//   bubble, is (p - 1) / (m + p - 1).
//   Interleaved 1F1B (--virtual_pipeline_model_parallel_size v): the layers split into p x v virtual stages, rank
//   s holding virtual stages s, s + p, ..., s + (v - 1) p (its "chunks"); a micro-batch visits every rank v times.
//   Each rank runs its chunks' passes in groups of p micro-batches per chunk, with (p - s - 1) x 2 + (v - 1) x p
//   forwards of warm-up, which cuts the bubble to (p - 1) / (v m + p - 1) for more exchanges. It needs m to be a
//   multiple of p (as Megatron).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swift::distributed {

// Layers [begin[s], begin[s + 1]) run on (virtual) stage s; begin has stages + 1 entries. Balanced: equal shares, any
// remainder one more layer each to the stages after the first (the first holds the embedding). `first_layers` /
// `last_layers` (> 0: Megatron's --decoder_first/last_pipeline_num_layers) fix the first/last stage's share, the
// others sharing the rest evenly. UsageError naming the flag when a stage would get no layer.
std::vector<int64_t> pipeline_layer_split(int64_t layers, int stages, int64_t first_layers = 0, int64_t last_layers = 0);

// The (virtual) stage that owns a parameter (model::parameter_place): a decoder layer's parameters that layer's
// stage, the input side (the embedding) the first, the output side (final norm, head) the last. Virtual stage v
// runs on rank v % p.
int pipeline_stage_of(const std::string& parameter, const std::vector<int64_t>& layer_begin);
// The number of decoder layers among checkpoint keys (one past the highest layer index).
int64_t decoder_layers_among(const std::vector<std::string>& parameters);

struct PipelinePass {
  bool forward = true;
  int64_t micro_batch = 0;
  int chunk = 0;  // which of the rank's virtual stages (interleaved), 0 otherwise
};

// Stage `stage` of `stages`'s passes over `micro_batches` micro-batches in 1F1B order.
std::vector<PipelinePass> one_forward_one_backward(int stage, int stages, int64_t micro_batches);
// The same with `chunks` virtual stages per rank (interleaved; chunks 1 is plain 1F1B). UsageError when
// micro_batches is not a multiple of stages.
std::vector<PipelinePass> interleaved_one_forward_one_backward(int stage, int stages, int chunks, int64_t micro_batches);

// The most chunk passes whose activations stage `stage` holds at once (forwards run, backwards not yet) over its
// schedule: min(p - s, m) for plain 1F1B; with chunks, counted from the interleaved order.
int64_t pipeline_peak_live_passes(int stage, int stages, int chunks, int64_t micro_batches);

// The schedule's idle share of a step: (p - 1) / (v m + p - 1), v = chunks per rank (1: plain 1F1B).
double pipeline_bubble_fraction(int stages, int64_t micro_batches, int chunks = 1);

}  // namespace swift::distributed
