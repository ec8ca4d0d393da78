// Ragged decode-batch KV cache: relayout copies right-aligned rows into a fresh, trimmed allocation.
#include "swift/serve/batch_cache.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "swift/core/error.h"

namespace swift::serve {

BatchCache::BatchCache(const model::KVCache& prototype, int64_t headroom) : headroom_(std::max<int64_t>(1, headroom)) {
  SWIFT_ASSERT(!prototype.keys.empty(), "BatchCache needs a prototype cache with at least one layer");
  for (size_t i = 0; i < prototype.keys.size(); ++i) {
    const auto& k = prototype.keys[i];
    kv_.keys.push_back(at::zeros({0, k.size(1), 0, k.size(3)}, k.options()));
    const auto& v = prototype.values[i];  // as wide as the keys, except under latent attention
    kv_.values.push_back(at::zeros({0, v.size(1), 0, v.size(3)}, v.options()));
  }
  kv_.length = 0;
}

void BatchCache::relayout(const std::vector<int64_t>& keep, const std::vector<const model::KVCache*>& joining) {
  std::vector<int64_t> lengths;
  int64_t kept_longest = 0;
  for (auto r : keep) {
    SWIFT_ASSERT(r >= 0 && r < rows(), "relayout: row out of range");
    lengths.push_back(lengths_[static_cast<size_t>(r)]);
    kept_longest = std::max(kept_longest, lengths.back());
  }
  for (const auto* c : joining) {
    SWIFT_ASSERT(c->keys.size() == kv_.keys.size() && c->keys.front().size(0) == 1, "relayout: a one-row cache");
    lengths.push_back(c->length);
  }
  const int64_t columns = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  const int64_t B = static_cast<int64_t>(lengths.size());
  const int64_t capacity = columns + headroom_;
  const int64_t old_columns = kv_.length;
  at::Tensor keep_rows;
  if (!keep.empty()) keep_rows = at::tensor(keep, at::kLong).to(kv_.keys.front().device());

  auto lay_out = [&](const at::Tensor& old, const std::vector<at::Tensor>& joined) {
    // Zeros, not empty: masked columns still enter the attention product (with weight 0), so no NaN garbage.
    auto fresh = at::zeros({B, old.size(1), capacity, old.size(3)}, old.options());
    if (!keep.empty() && kept_longest > 0) {
      // Kept rows are right-aligned at old_columns; their last kept_longest columns hold every kept token.
      auto src = old.index_select(0, keep_rows).narrow(2, old_columns - kept_longest, kept_longest);
      fresh.narrow(0, 0, static_cast<int64_t>(keep.size())).narrow(2, columns - kept_longest, kept_longest).copy_(src);
    }
    for (size_t j = 0; j < joined.size(); ++j) {
      const int64_t len = joining[j]->length;
      const int64_t row = static_cast<int64_t>(keep.size() + j);
      fresh[row].narrow(1, columns - len, len).copy_(joined[j][0].narrow(1, 0, len));
    }
    return fresh;
  };
  for (size_t layer = 0; layer < kv_.keys.size(); ++layer) {
    std::vector<at::Tensor> jk, jv;
    for (const auto* c : joining) {
      jk.push_back(c->keys[layer]);
      jv.push_back(c->values[layer]);
    }
    kv_.keys[layer] = lay_out(kv_.keys[layer], jk);
    kv_.values[layer] = lay_out(kv_.values[layer], jv);
  }
  kv_.length = columns;
  lengths_ = std::move(lengths);
}

at::Tensor BatchCache::step_mask() const {
  const auto device = kv_.keys.front().device();
  const int64_t S = kv_.length + 1;
  auto lengths = at::tensor(lengths_, at::kLong).to(device).view({-1, 1});
  auto columns = at::arange(S, at::TensorOptions().dtype(at::kLong).device(device)).view({1, S});
  return columns.ge(kv_.length - lengths).to(at::kLong);  // [B, S]
}

at::Tensor BatchCache::step_positions() const {
  return at::tensor(lengths_, at::kLong).to(kv_.keys.front().device()).view({-1, 1});
}

void BatchCache::reserve_step() {
  if (kv_.length + 1 <= kv_.capacity()) return;
  std::vector<int64_t> all(lengths_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  relayout(all, {});
}

void BatchCache::advance() {
  for (auto& l : lengths_) ++l;
}

}  // namespace swift::serve
