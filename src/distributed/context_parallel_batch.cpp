// Context parallelism's share of a micro-batch (see context_parallel_batch.h).
#include "swift/distributed/context_parallel_batch.h"

#include <ATen/ATen.h>

#include "swift/core/error.h"
#include "swift/model/context_parallel.h"

namespace swift::distributed {

namespace {

// [B, T] -> [B, padded], the new columns `value`.
at::Tensor pad_columns(const at::Tensor& t, int64_t padded, int64_t value) {
  const int64_t extra = padded - t.size(1);
  if (extra == 0) return t;
  return at::cat({t, at::full({t.size(0), extra}, value, t.options())}, 1);
}

}  // namespace

data::Batch context_parallel_batch(const data::Batch& batch, int rank, int size, int64_t share_multiple) {
  SWIFT_ASSERT(!batch.labels_shifted, "a batch is split for context parallelism once");
  SWIFT_ASSERT(size >= 1 && share_multiple >= 1, "a context-parallel size and a share multiple of at least 1");
  const int64_t B = batch.input_ids.size(0), T = batch.input_ids.size(1);
  // Two chunks per rank (one when the group is this rank alone: the whole row), each share_multiple long at least.
  const int64_t chunks = size > 1 ? 2 * static_cast<int64_t>(size) : 1;
  const int64_t multiple = chunks * share_multiple;
  const int64_t padded = (T + multiple - 1) / multiple * multiple;
  // Token t's target is token t + 1's label; the last token predicts nothing.
  const at::Tensor targets = at::cat({batch.labels.narrow(1, 1, T - 1), at::full({B, 1}, -100, batch.labels.options())}, 1);
  auto share = [&](const at::Tensor& t, int64_t pad) {
    const at::Tensor whole = pad_columns(t, padded, pad);
    return size > 1 ? model::context_parallel_share(whole, 1, rank, size).contiguous() : whole.contiguous();
  };
  data::Batch out;
  out.input_ids = share(batch.input_ids, 0);
  out.labels = share(targets, -100);
  out.attention_mask = share(batch.attention_mask, 0);
  // A plain row's positions are 0, 1, ... (its pads continue the count); a packed row's are its own (pads 0).
  out.position_ids = share(batch.position_ids.defined()
                               ? batch.position_ids
                               : at::arange(padded, batch.input_ids.options()).unsqueeze(0).expand({B, padded}),
                           0);
  if (batch.segment_ids.defined()) out.segment_ids = share(batch.segment_ids, -1);
  out.margins = batch.margins;  // of whole rows (rlhf's pairs): every rank of the group has them
  out.desirable = batch.desirable;
  out.labels_shifted = true;
  out.label_tokens = out.labels.ne(-100).sum().item<int64_t>();
  return out;
}

}  // namespace swift::distributed
