// Context parallelism's share of a micro-batch: what one rank of a context-parallel group trains on
// (model/context_parallel.h). The ranks of the group get the same samples and each keeps 1/n of every row.
#pragma once

#include "swift/data/batch.h"

namespace swift::distributed {

// The rows padded to a multiple of 2 `size` x `share_multiple` tokens (pads: token 0, no label, position 0 and
// segment -1 when packed, all after the real tokens, so nothing real attends to them), the labels shifted to the
// positions that predict them, then this rank's two chunks of every row (context_parallel_share; the whole row
// when `size` is 1). position_ids are set (the rows' own: 0, 1, ... or the packed ones), label_tokens counts this
// share's targets; what is per row (margins, desirable) is kept. `share_multiple`: what the share's length must divide by (Megatron sequence parallelism cuts
// it again over the tensor-parallel group); with `size` 1 the rows are only padded to a multiple of it.
data::Batch context_parallel_batch(const data::Batch& batch, int rank, int size, int64_t share_multiple = 1);

}  // namespace swift::distributed
