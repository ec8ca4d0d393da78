// Micro-batches: examples padded into tensors (single sequences, preference pairs, labelled replies).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "swift/data/example.h"

namespace swift::data {

// One padded micro-batch. input_ids, labels, attention_mask: [B, T] (right-padded; labels -100 on pads).
struct Batch {
  at::Tensor input_ids, labels, attention_mask;
  // [B, T] int64, defined only for packed rows: position ids (0 on pads) and segment ids (-1 on pads).
  at::Tensor position_ids, segment_ids;
  int64_t label_tokens = 0;  // tokens that carry loss (after the shift: labels[:, 1:] != -100)
  // Context parallelism's share of the rows (distributed/context_parallel_batch.h): labels already shifted, labels[t]
  // being token t's target (the next token of the whole row), and label_tokens = (labels != -100).sum().
  bool labels_shifted = false;
  at::Tensor margins;        // [B] float, collate_pairs only, when a row has a "margin" (0 for those that do not)
  at::Tensor desirable;      // [B] bool, collate_pairs of labelled replies only
  // GRPO's completions (collate_rollouts): [B] float advantages, [B] bool rows that reached the length limit,
  // [B, T - 1] float log-probabilities at generation (position t: input_ids[t + 1]; undefined when on-policy), and
  // the rows' loss units summed.
  at::Tensor advantages, truncated, old_logps;
  double loss_units = 0;
  int64_t rollout_round = -1;  // the generation batch its rows came from
};
Batch collate(const std::vector<const Example*>& examples, int64_t pad_id);
// A micro-batch of preference pairs as ms-swift batches them: the B chosen rows, then the B rejected rows (for
// labelled replies: the B replies, then their B KL rows), padded together ([2B, T]), so one forward pass can score
// both. attention_mask is set (1 real, 0 pad); `desirable` ([B] bool) for labelled replies.
Batch collate_pairs(const std::vector<const Example*>& examples, int64_t pad_id);
// GRPO's completions: collate() plus their advantages, truncation and log-probabilities at generation.
Batch collate_rollouts(const std::vector<const Example*>& examples, int64_t pad_id);
// Labelled replies alone (KTO without KL rows): collate() plus `desirable`.
Batch collate_labelled(const std::vector<const Example*>& examples, int64_t pad_id);

}  // namespace swift::data
