// Pipeline stages and the 1F1B order (distributed/pipeline_schedule.h).
#include "swift/distributed/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "swift/core/error.h"

namespace swift::distributed {
namespace {

TEST(PipelineLayerSplit, EvenUnevenAndAsGiven) {
  EXPECT_EQ(pipeline_layer_split(4, 2), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(pipeline_layer_split(4, 4), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  // A remainder goes to the stages after the first (which also holds the embedding) before it.
  EXPECT_EQ(pipeline_layer_split(5, 2), (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(pipeline_layer_split(7, 3), (std::vector<int64_t>{0, 2, 5, 7}));
  EXPECT_EQ(pipeline_layer_split(8, 3), (std::vector<int64_t>{0, 2, 5, 8}));
  // Megatron's --decoder_first/last_pipeline_num_layers: fixed, the others share the rest.
  EXPECT_EQ(pipeline_layer_split(4, 2, 1, 0), (std::vector<int64_t>{0, 1, 4}));
  EXPECT_EQ(pipeline_layer_split(4, 2, 0, 1), (std::vector<int64_t>{0, 3, 4}));
  EXPECT_EQ(pipeline_layer_split(6, 3, 1, 1), (std::vector<int64_t>{0, 1, 5, 6}));
  EXPECT_EQ(pipeline_layer_split(6, 1), (std::vector<int64_t>{0, 6}));
  // A stage with no layer, or fixed shares larger than the model: a UsageError before anything loads.
  EXPECT_THROW(pipeline_layer_split(2, 3), UsageError);
  EXPECT_THROW(pipeline_layer_split(4, 2, 4, 0), UsageError);
  EXPECT_THROW(pipeline_layer_split(4, 3, 2, 2), UsageError);
}

TEST(PipelineLayerSplit, ParametersBelongToTheStageOfTheirLayer) {
  const std::vector<int64_t> begin{0, 2, 5, 7};
  EXPECT_EQ(pipeline_stage_of("model.embed_tokens.weight", begin), 0);
  EXPECT_EQ(pipeline_stage_of("model.layers.1.mlp.up_proj.weight", begin), 0);
  EXPECT_EQ(pipeline_stage_of("model.layers.2.self_attn.q_proj.lora_A.weight", begin), 1);
  EXPECT_EQ(pipeline_stage_of("model.layers.4.input_layernorm.weight", begin), 1);
  EXPECT_EQ(pipeline_stage_of("model.layers.5.mlp.down_proj.weight", begin), 2);
  EXPECT_EQ(pipeline_stage_of("model.layers.12.mlp.down_proj.weight", begin), 2);
  EXPECT_EQ(pipeline_stage_of("model.norm.weight", begin), 2);
  EXPECT_EQ(pipeline_stage_of("lm_head.weight", begin), 2);
  EXPECT_EQ(pipeline_stage_of("score.weight", begin), 2);
}

// Runs every rank's passes in order, each waiting for what it needs (a forward for the previous virtual stage's
// forward of the same micro-batch, a backward for the next virtual stage's backward, or on the last its own
// forward), a forward taking 1 unit and a backward 2: the step's length, or -1 when the ranks wait on each other
// forever. Virtual stage c x stages + s is rank s's chunk c.
int64_t simulate(int stages, int chunks, int64_t m) {
  std::vector<std::vector<PipelinePass>> passes;
  for (int s = 0; s < stages; ++s) passes.push_back(interleaved_one_forward_one_backward(s, stages, chunks, m));
  const int last = stages * chunks - 1;
  std::map<std::tuple<int, bool, int64_t>, int64_t> done;  // (virtual stage, forward, micro-batch) -> finish time
  std::vector<size_t> next(static_cast<size_t>(stages), 0);
  std::vector<int64_t> clock(static_cast<size_t>(stages), 0);
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int s = 0; s < stages; ++s) {
      auto& i = next[static_cast<size_t>(s)];
      if (i == passes[static_cast<size_t>(s)].size()) continue;
      const PipelinePass p = passes[static_cast<size_t>(s)][i];
      const int v = p.chunk * stages + s;
      const auto needed = p.forward ? std::make_tuple(v - 1, true, p.micro_batch)
                                    : (v == last ? std::make_tuple(v, true, p.micro_batch)
                                                 : std::make_tuple(v + 1, false, p.micro_batch));
      int64_t ready = 0;
      if (!(p.forward && v == 0)) {
        const auto it = done.find(needed);
        if (it == done.end()) continue;
        ready = it->second;
      }
      int64_t& now = clock[static_cast<size_t>(s)];
      now = std::max(now, ready) + (p.forward ? 1 : 2);
      done[{v, p.forward, p.micro_batch}] = now;
      ++i;
      progressed = true;
    }
  }
  for (int s = 0; s < stages; ++s)
    if (next[static_cast<size_t>(s)] != passes[static_cast<size_t>(s)].size()) return -1;
  return *std::max_element(clock.begin(), clock.end());
}

TEST(OneForwardOneBackward, EveryPassOnceWarmUpThenAlternating) {
  // Stage 0 of 4 over 6 micro-batches: 3 forwards of warm-up, then forward/backward pairs, then the backwards left.
  const auto passes = one_forward_one_backward(0, 4, 6);
  std::string order;
  for (const auto& p : passes) order += (p.forward ? "F" : "B") + std::to_string(p.micro_batch) + " ";
  EXPECT_EQ(order, "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  // The last stage alternates from the start; fewer micro-batches than stages: every forward first.
  order.clear();
  for (const auto& p : one_forward_one_backward(3, 4, 2)) order += (p.forward ? "F" : "B") + std::to_string(p.micro_batch) + " ";
  EXPECT_EQ(order, "F0 B0 F1 B1 ");
  order.clear();
  for (const auto& p : one_forward_one_backward(0, 4, 2)) order += (p.forward ? "F" : "B") + std::to_string(p.micro_batch) + " ";
  EXPECT_EQ(order, "F0 F1 B0 B1 ");
  // A stage keeps at most stages - stage micro-batches' activations.
  for (int s = 0; s < 4; ++s) {
    int live = 0, most = 0;
    for (const auto& p : one_forward_one_backward(s, 4, 8)) most = std::max(most, live += p.forward ? 1 : -1);
    EXPECT_EQ(most, 4 - s) << "stage " << s;
  }
}

TEST(OneForwardOneBackward, NeverDeadlocksAndIdlesOnlyTheBubble) {
  for (int stages : {1, 2, 3, 4, 8})
    for (int64_t m : {1, 2, 3, 4, 8, 16}) {
      // The whole pipeline runs, in (m + p - 1) (forward + backward) units: idle (p - 1) / (m + p - 1) of it.
      EXPECT_EQ(simulate(stages, 1, m), (m + stages - 1) * 3) << stages << " stages, " << m << " micro-batches";
    }
  EXPECT_DOUBLE_EQ(pipeline_bubble_fraction(4, 8), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(pipeline_bubble_fraction(1, 8), 0.0);
  EXPECT_DOUBLE_EQ(pipeline_bubble_fraction(4, 8, 2), 3.0 / 19.0);
}

TEST(InterleavedOneForwardOneBackward, EveryChunkPassOnceInGroupsOfStages) {
  // Rank 0 of 2 with 2 chunks over 4 micro-batches: chunk 0 for micro-batches 0-1, chunk 1 for them, then 2-3 ...
  std::string order;
  for (const auto& p : interleaved_one_forward_one_backward(0, 2, 2, 4))
    order += (p.forward ? "F" : "B") + std::to_string(p.micro_batch) + "." + std::to_string(p.chunk) + " ";
  EXPECT_EQ(order, "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0 ");
  // Each (micro-batch, chunk) once each way, a chunk's forward before its backward, on every rank.
  for (int s = 0; s < 4; ++s) {
    std::map<std::pair<int64_t, int>, int> seen;
    for (const auto& p : interleaved_one_forward_one_backward(s, 4, 3, 8)) {
      auto& state = seen[{p.micro_batch, p.chunk}];
      EXPECT_EQ(state, p.forward ? 0 : 1) << "rank " << s;
      ++state;
    }
    EXPECT_EQ(seen.size(), 24u);
  }
  // One chunk is plain 1F1B; micro-batches not a multiple of the stages are refused (as Megatron).
  EXPECT_EQ(interleaved_one_forward_one_backward(1, 4, 1, 6).size(), one_forward_one_backward(1, 4, 6).size());
  EXPECT_THROW(interleaved_one_forward_one_backward(0, 4, 2, 6), UsageError);
}

TEST(InterleavedOneForwardOneBackward, NeverDeadlocksAndShrinksTheBubble) {
  for (int stages : {2, 3, 4})
    for (int chunks : {2, 3})
      for (int64_t m : {stages, 2 * stages, 4 * stages}) {
        // Each rank has chunks x m forward-and-backward times of work; the bubble is (p - 1) of them, not
        // (p - 1) x chunks as one chunk per rank would leave.
        const int64_t length = simulate(stages, chunks, m);
        EXPECT_EQ(length, (chunks * m + stages - 1) * 3) << stages << " stages, " << chunks << " chunks, " << m;
      }
}

// What the memory estimate multiplies a stage's activations by: p - s passes under 1F1B (fewer with fewer
// micro-batches); interleaved, Megatron's warm-up of (p - s - 1) x 2 + (v - 1) x p chunk passes, plus one.
TEST(PipelinePeakLivePasses, OneForwardOneBackwardAndInterleaved) {
  EXPECT_EQ(pipeline_peak_live_passes(0, 4, 1, 8), 4);
  EXPECT_EQ(pipeline_peak_live_passes(3, 4, 1, 8), 1);
  EXPECT_EQ(pipeline_peak_live_passes(0, 4, 1, 2), 2);
  EXPECT_EQ(pipeline_peak_live_passes(0, 2, 2, 4), (2 - 0 - 1) * 2 + (2 - 1) * 2 + 1);
  EXPECT_EQ(pipeline_peak_live_passes(1, 2, 2, 4), (2 - 1 - 1) * 2 + (2 - 1) * 2 + 1);
}

}  // namespace
}  // namespace swift::distributed
