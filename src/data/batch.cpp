// Padding examples into micro-batch tensors (see batch.h).
#include "swift/data/batch.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "swift/core/error.h"

namespace swift::data {

Batch collate(const std::vector<const Example*>& examples, int64_t pad_id) {
  size_t longest = 0;
  for (const auto* e : examples) longest = std::max(longest, e->input_ids.size());
  const auto B = static_cast<int64_t>(examples.size()), T = static_cast<int64_t>(longest);
  Batch b;
  b.input_ids = at::full({B, T}, pad_id, at::kLong);
  b.labels = at::full({B, T}, -100, at::kLong);
  b.attention_mask = at::zeros({B, T}, at::kLong);
  bool packed = false;
  for (const auto* e : examples) packed = packed || !e->segments.empty();
  if (packed) {
    b.position_ids = at::zeros({B, T}, at::kLong);
    b.segment_ids = at::full({B, T}, -1, at::kLong);
  }
  // Fresh contiguous CPU tensors: each row is written straight into its slice (no temporary tensor per row),
  // and the label count comes from the vectors rather than a reduction over the batch.
  int64_t* ids = b.input_ids.data_ptr<int64_t>();
  int64_t* labels = b.labels.data_ptr<int64_t>();
  int64_t* mask = b.attention_mask.data_ptr<int64_t>();
  for (int64_t i = 0; i < B; ++i) {
    const auto& e = *examples[static_cast<size_t>(i)];
    const auto n = static_cast<int64_t>(e.input_ids.size());
    std::copy(e.input_ids.begin(), e.input_ids.end(), ids + i * T);
    std::copy(e.labels.begin(), e.labels.end(), labels + i * T);
    std::fill(mask + i * T, mask + i * T + n, int64_t{1});
    for (size_t t = 1; t < e.labels.size(); ++t) b.label_tokens += e.labels[t] != -100;  // after the shift
    if (packed) {
      int64_t* positions = b.position_ids.data_ptr<int64_t>() + i * T;
      int64_t* segments = b.segment_ids.data_ptr<int64_t>() + i * T;
      if (e.segments.empty()) {  // a plain example in a packed batch: one segment
        std::iota(positions, positions + n, int64_t{0});
        std::fill(segments, segments + n, int64_t{0});
      } else {
        std::copy(e.position_ids.begin(), e.position_ids.end(), positions);
        std::copy(e.segments.begin(), e.segments.end(), segments);
      }
    }
  }
  return b;
}

Batch collate_rollouts(const std::vector<const Example*>& examples, int64_t pad_id) {
  Batch b = collate(examples, pad_id);
  const auto B = static_cast<int64_t>(examples.size()), T = b.input_ids.size(1);
  b.advantages = at::zeros({B}, at::kFloat);
  b.truncated = at::zeros({B}, at::kBool);
  const bool off_policy = std::any_of(examples.begin(), examples.end(), [](const Example* e) { return !e->old_logps.empty(); });
  if (off_policy) b.old_logps = at::zeros({B, std::max<int64_t>(T - 1, 0)}, at::kFloat);
  for (int64_t i = 0; i < B; ++i) {
    const Example& e = *examples[static_cast<size_t>(i)];
    SWIFT_CHECK(e.advantage.has_value(), DataError, "a GRPO micro-batch holds a row that is not a scored completion",
                "this is a bug in the rollout buffer; please report it");
    b.advantages[i] = *e.advantage;
    b.truncated[i] = e.truncated;
    b.loss_units += e.loss_units;
    b.rollout_round = e.rollout_round;  // a micro-batch never spans two generation batches
    if (off_policy && !e.old_logps.empty())
      b.old_logps[i].narrow(0, 0, static_cast<int64_t>(e.old_logps.size())).copy_(at::tensor(e.old_logps, at::kFloat));
  }
  return b;
}

namespace {

// KTO's labels, [B] bool (false where a row has none).
at::Tensor desirable_of(const std::vector<const Example*>& examples) {
  std::vector<uint8_t> flags;
  for (const auto* e : examples) flags.push_back(e->desirable.value_or(false) ? 1 : 0);
  return at::tensor(flags, at::kByte).to(at::kBool);
}

}  // namespace

Batch collate_pairs(const std::vector<const Example*>& examples, int64_t pad_id) {
  std::vector<Example> rejected(examples.size());
  std::vector<const Example*> rows(examples.begin(), examples.end());
  std::vector<float> margins;
  bool any_margin = false;
  for (size_t i = 0; i < examples.size(); ++i) {
    SWIFT_CHECK(!examples[i]->rejected_input_ids.empty(), DataError, "a training example has no second sequence",
                "swift rlhf trains on preference pairs (rows with \"rejected_response\" or \"rejected_messages\") "
                "or, for kto, labelled replies");
    rejected[i].input_ids = examples[i]->rejected_input_ids;
    rejected[i].labels = examples[i]->rejected_labels;
    margins.push_back(static_cast<float>(examples[i]->margin.value_or(0.0)));  // none counts 0, as ms-swift's collator
    any_margin = any_margin || examples[i]->margin.has_value();
  }
  for (const auto& r : rejected) rows.push_back(&r);
  Batch b = collate(rows, pad_id);
  if (examples.front()->desirable) b.desirable = desirable_of(examples);
  if (any_margin) b.margins = at::tensor(margins, at::kFloat);
  return b;
}

Batch collate_labelled(const std::vector<const Example*>& examples, int64_t pad_id) {
  Batch b = collate(examples, pad_id);
  b.desirable = desirable_of(examples);
  return b;
}

}  // namespace swift::data
