// Preallocated key/value cache for incremental decoding: per layer [B, H_kv, capacity, D].
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace swift::model {

struct KVCache {
  std::vector<at::Tensor> keys;    // per layer [B, H_kv, capacity, D]
  std::vector<at::Tensor> values;  // per layer [B, H_kv, capacity, D]
  int64_t length = 0;              // tokens stored (same for every layer once a forward pass completes)
  // longrope (Phi-3): the keys were rotated with the long factors (the sequence ran past the original length).
  bool long_rope = false;

  int64_t capacity() const { return keys.empty() ? 0 : keys.front().size(2); }
  // Keeps only the given batch rows (finished rows dropped from a batch).
  void select_rows(const at::Tensor& rows);
};

}  // namespace swift::model
