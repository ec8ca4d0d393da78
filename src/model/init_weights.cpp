// --init_strategy: weights for a model trained from scratch.
#include "swift/model/init_weights.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>
#include <torch/utils.h>

#include "swift/core/error.h"

namespace swift::model {

namespace {
const char* const kStrategies[] = {"normal", "uniform", "zero", "xavier_uniform", "xavier_normal",
                                   "kaiming_uniform", "kaiming_normal", "orthogonal"};
}

std::string init_strategies() {
  std::string out;
  for (const char* s : kStrategies) out += (out.empty() ? "" : ", ") + std::string(s);
  return out;
}

void init_weights(CausalLM& model, const std::string& strategy, uint64_t seed) {
  bool known = false;
  for (const char* s : kStrategies) known = known || strategy == s;
  SWIFT_CHECK(known, UsageError, "--init_strategy '" + strategy + "' is not known", "use one of " + init_strategies());
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  const double std = model->config().initializer_range;
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    at::Tensor p = item.value();
    // Initialise in fp32 then cast: the init functions' randomness is defined for fp32 and this makes bf16 and
    // fp32 runs of the same seed agree.
    at::Tensor w = at::empty(p.sizes(), p.options().dtype(at::kFloat).device(at::kCPU));
    const bool is_norm = name.find("norm.weight") != std::string::npos;
    if (is_norm) w.fill_(model->config().norm_unit_offset ? 0.0 : 1.0);  // Gemma's norms scale by 1 + weight
    else if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0) w.zero_();  // e_score_correction_bias too
    else if (strategy == "normal") w.normal_(0.0, std);
    else if (strategy == "uniform") w.uniform_(-std, std);
    else if (strategy == "zero") w.zero_();
    else if (strategy == "xavier_uniform") torch::nn::init::xavier_uniform_(w);
    else if (strategy == "xavier_normal") torch::nn::init::xavier_normal_(w);
    else if (strategy == "kaiming_uniform") torch::nn::init::kaiming_uniform_(w, std::sqrt(5.0));
    else if (strategy == "kaiming_normal") torch::nn::init::kaiming_normal_(w);
    else if (strategy == "orthogonal") torch::nn::init::orthogonal_(w);
    p.copy_(w);
  }
}

}  // namespace swift::model
