// Rotary position embeddings with every scaling type transformers supports for our families
// (default, linear, dynamic NTK, llama3, yarn, longrope), computed as transformers' modeling_rope_utils does.
#pragma once

#include <ATen/core/Tensor.h>

#include <utility>

#include "swift/model/model_config.h"

namespace swift::model {

class RotaryEmbedding {
 public:
  explicit RotaryEmbedding(const ModelConfig& config);  // config.rope over head_dim
  RotaryEmbedding(const RopeConfig& rope, int64_t head_dim, int64_t max_position_embeddings);

  // cos, sin: [B, T, head_dim] in `dtype`, for position_ids [B, T] (int64, any device).
  // Dynamic NTK rescales when max(position_ids) + 1 exceeds max_position_embeddings, as transformers does on a
  // fresh model.
  std::pair<at::Tensor, at::Tensor> cos_sin(const at::Tensor& position_ids, c10::ScalarType dtype) const;

  // The inverse frequencies [rotary_dim / 2] (fp32, CPU) for a sequence of `seq_len` tokens, and the factor
  // cos/sin are scaled by.
  std::pair<at::Tensor, double> inv_freq(int64_t seq_len) const;
  // Whether the frequencies depend on the longest position of a forward (dynamic NTK, longrope).
  bool depends_on_length() const { return rope_.type == "dynamic" || rope_.type == "longrope"; }
  // longrope beyond original_max_position_embeddings: keys rotated for a shorter sequence are stale (transformers'
  // Phi-3 recomputes its cache when a generation crosses that length).
  bool long_regime(int64_t seq_len) const;
  int64_t rotary_dim() const { return dim_; }  // head_dim * partial_rotary_factor

 private:
  RopeConfig rope_;
  int64_t dim_;
  int64_t max_position_embeddings_;
  at::Tensor base_inv_freq_;  // for every type but dynamic beyond max_position_embeddings
  double attention_factor_ = 1.0;
};

// The last dimension's adjacent pairs (x0, x1), (x2, x3)... regrouped as halves (x0, x2, ...; x1, x3, ...), so that
// the usual rotation of halves rotates the pairs, as DeepSeek's and GLM-4's weights expect. Queries and keys permuted
// alike keep their products.
at::Tensor pairs_to_halves(const at::Tensor& x);

// q, k: [B, H, T, D]; cos, sin: [B, T, R] with R <= D. Returns (q*cos + rotate_half(q)*sin, same for k) over the
// first R dimensions, the others unchanged.
std::pair<at::Tensor, at::Tensor> apply_rotary(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                               const at::Tensor& sin);

}  // namespace swift::model
