// The KV cache of a continuously changing decode batch: rows of different lengths, each row's tokens right-
// aligned at the last `length` columns (left padding), so one decode step appends a column for every row. Rows
// leave when they finish and newcomers (prefilled alone) join by copying their cache into a new row.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "swift/model/kv_cache.h"

namespace swift::serve {

class BatchCache {
 public:
  // `prototype`: any cache of the model (e.g. make_cache(1, 1)); only its layer count, shapes, dtype and device
  // are used. `headroom`: free columns reserved whenever the cache is laid out again. Default: 32.
  explicit BatchCache(const model::KVCache& prototype, int64_t headroom = 32);

  int64_t rows() const { return static_cast<int64_t>(lengths_.size()); }
  // Tokens held by each row.
  const std::vector<int64_t>& lengths() const { return lengths_; }
  // The cache a forward pass writes to: per layer [B, H_kv, capacity, D], kv().length = columns in use.
  model::KVCache& kv() { return kv_; }

  // Lays the batch out again: rows `keep` (indices of current rows, in the new order) stay, then every cache of
  // `joining` (one row each, holding exactly its `length` tokens) is appended. Columns that no row needs are
  // dropped and `headroom` free columns are reserved.
  void relayout(const std::vector<int64_t>& keep, const std::vector<const model::KVCache*>& joining);

  // Inputs of the next decode step (one new token per row), on the cache's device:
  // attention mask [B, columns + 1] (1 where the row has a token or the new one), position ids [B, 1].
  at::Tensor step_mask() const;
  at::Tensor step_positions() const;
  // Makes sure the next decode step has a free column (lays out again when full).
  void reserve_step();
  // After a decode step wrote one token per row.
  void advance();

 private:
  model::KVCache kv_;
  std::vector<int64_t> lengths_;
  int64_t headroom_;
};

}  // namespace swift::serve
