// RoPE frequencies and rotation. Formulas follow transformers' modeling_rope_utils (v4.4x-v5).
#include "swift/model/rope.h"

#include <ATen/ATen.h>

#include <cmath>
#include <vector>

namespace swift::model {

namespace {

at::Tensor default_inv_freq(double base, int64_t dim) {
  // 1 / base^(2i/dim), computed in fp32 as transformers does (int64 arange -> float).
  auto exponents = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim);
  return 1.0 / at::pow(base, exponents);
}

std::pair<at::Tensor, double> yarn_inv_freq(const RopeConfig& r, int64_t dim) {
  const double base = r.theta;
  const double factor = r.factor;
  auto get_mscale = [](double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; };
  double attention_factor;
  if (r.attention_factor) attention_factor = *r.attention_factor;
  else if (r.mscale && r.mscale_all_dim && *r.mscale != 0 && *r.mscale_all_dim != 0)
    attention_factor = get_mscale(factor, *r.mscale) / get_mscale(factor, *r.mscale_all_dim);
  else attention_factor = get_mscale(factor, 1.0);

  const double orig = static_cast<double>(r.original_max_position_embeddings);
  auto correction_dim = [&](double rotations) {
    return (dim * std::log(orig / (rotations * 2 * M_PI))) / (2 * std::log(base));
  };
  double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
  if (r.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // avoid a zero-width ramp

  auto pos_freqs = at::pow(base, at::arange(0, dim, 2).to(at::kFloat) / static_cast<double>(dim));
  auto extrapolation = 1.0 / pos_freqs;
  auto interpolation = 1.0 / (factor * pos_freqs);
  auto ramp = at::clamp((at::arange(dim / 2, at::kFloat) - low) / (high - low), 0, 1);
  auto extrapolation_weight = 1 - ramp;
  auto inv = interpolation * (1 - extrapolation_weight) + extrapolation * extrapolation_weight;
  return {inv, attention_factor};
}

// LongRoPE (Phi-3): each frequency divided by its factor, the short ones within the original length, the long ones
// beyond; cos/sin scaled by the attention factor.
std::pair<at::Tensor, double> longrope_inv_freq(const RopeConfig& r, int64_t dim, bool long_regime) {
  const double orig = static_cast<double>(r.original_max_position_embeddings);
  double attention_factor = 1.0;
  if (r.attention_factor) attention_factor = *r.attention_factor;
  else if (r.factor > 1.0) attention_factor = std::sqrt(1 + std::log(r.factor) / std::log(orig));
  const auto& factors = long_regime ? r.long_factor : r.short_factor;
  auto ext = at::tensor(std::vector<float>(factors.begin(), factors.end()), at::kFloat);
  auto exponents = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(dim);
  return {1.0 / (ext * at::pow(r.theta, exponents)), attention_factor};
}

at::Tensor llama3_inv_freq(const RopeConfig& r, int64_t dim) {
  auto inv = default_inv_freq(r.theta, dim);
  const double old_context = static_cast<double>(r.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / r.low_freq_factor;
  const double high_freq_wavelen = old_context / r.high_freq_factor;
  auto wavelen = 2 * M_PI / inv;
  // Long wavelengths are interpolated by `factor`, short ones kept, the band between smoothly blended.
  auto scaled = at::where(wavelen > low_freq_wavelen, inv / r.factor, inv);
  auto smooth = (old_context / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
  auto smoothed = (1 - smooth) * scaled / r.factor + smooth * scaled;
  auto is_medium = at::logical_not(wavelen < high_freq_wavelen).logical_and(at::logical_not(wavelen > low_freq_wavelen));
  return at::where(is_medium, smoothed, scaled);
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(const ModelConfig& config)
    : RotaryEmbedding(config.rope, config.head_dim, config.max_position_embeddings) {}

RotaryEmbedding::RotaryEmbedding(const RopeConfig& rope, int64_t head_dim, int64_t max_position_embeddings)
    : rope_(rope),
      // transformers: int(head_dim * partial_rotary_factor), truncated
      dim_(static_cast<int64_t>(static_cast<double>(head_dim) * rope.partial_rotary_factor)),
      max_position_embeddings_(max_position_embeddings) {
  if (rope_.type == "longrope") {
    std::tie(base_inv_freq_, attention_factor_) = longrope_inv_freq(rope_, dim_, /*long_regime=*/false);
  } else if (rope_.type == "linear") {
    base_inv_freq_ = default_inv_freq(rope_.theta, dim_) / rope_.factor;
  } else if (rope_.type == "llama3") {
    base_inv_freq_ = llama3_inv_freq(rope_, dim_);
  } else if (rope_.type == "yarn") {
    std::tie(base_inv_freq_, attention_factor_) = yarn_inv_freq(rope_, dim_);
  } else {
    base_inv_freq_ = default_inv_freq(rope_.theta, dim_);  // default, and dynamic within the original length
  }
}

std::pair<at::Tensor, double> RotaryEmbedding::inv_freq(int64_t seq_len) const {
  if (rope_.type == "dynamic" && seq_len > max_position_embeddings_) {
    const double factor = rope_.factor;
    const double d = static_cast<double>(dim_);
    const double base = rope_.theta * std::pow(factor * seq_len / max_position_embeddings_ - (factor - 1), d / (d - 2));
    return {default_inv_freq(base, dim_), 1.0};
  }
  if (long_regime(seq_len)) return longrope_inv_freq(rope_, dim_, /*long_regime=*/true);
  return {base_inv_freq_, attention_factor_};
}

bool RotaryEmbedding::long_regime(int64_t seq_len) const {
  return rope_.type == "longrope" && seq_len > rope_.original_max_position_embeddings;
}

std::pair<at::Tensor, at::Tensor> RotaryEmbedding::cos_sin(const at::Tensor& position_ids, c10::ScalarType dtype) const {
  int64_t seq_len = 0;
  if (depends_on_length()) seq_len = position_ids.max().item<int64_t>() + 1;
  auto [inv, scale] = inv_freq(seq_len);
  inv = inv.to(position_ids.device());
  // freqs: [B, T, D/2] in fp32, duplicated to [B, T, D] (rotate_half convention).
  auto freqs = position_ids.to(at::kFloat).unsqueeze(-1) * inv.view({1, 1, -1});
  auto emb = at::cat({freqs, freqs}, -1);
  auto cos = emb.cos(), sin = emb.sin();
  if (scale != 1.0) {
    cos = cos * scale;
    sin = sin * scale;
  }
  return {cos.to(dtype), sin.to(dtype)};
}

namespace {
at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}
}  // namespace

at::Tensor pairs_to_halves(const at::Tensor& x) {
  const int64_t d = x.size(-1);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
  shape.push_back(d / 2);
  shape.push_back(2);
  return x.reshape(shape).transpose(-1, -2).reshape(x.sizes());
}

std::pair<at::Tensor, at::Tensor> apply_rotary(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                               const at::Tensor& sin) {
  auto c = cos.unsqueeze(1), s = sin.unsqueeze(1);  // [B, 1, T, R]
  const int64_t rotary = cos.size(-1);
  if (rotary == q.size(-1)) return {q * c + rotate_half(q) * s, k * c + rotate_half(k) * s};
  // Partial rotary (Phi-4-mini): the first R dimensions rotate, the rest pass through.
  auto rotate = [&](const at::Tensor& x) {
    const at::Tensor r = x.narrow(-1, 0, rotary);
    return at::cat({r * c + rotate_half(r) * s, x.narrow(-1, rotary, x.size(-1) - rotary)}, -1);
  };
  return {rotate(q), rotate(k)};
}

}  // namespace swift::model
