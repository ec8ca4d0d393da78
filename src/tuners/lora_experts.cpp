// LoRA on stacked expert weights (PEFT's target_parameters; see the header).
#include "swift/tuners/lora_experts.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/nn/module.h>

#include <cmath>
#include <map>

#include "swift/core/error.h"

namespace swift::tuners {

namespace {

const char* const kExpertWeights[] = {"gate_up_proj", "down_proj"};  // the experts' parameter order

// A module holding one "weight" parameter: lora_A / lora_B of a branch, registered under PEFT's names.
struct BranchWeight : torch::nn::Module {
  explicit BranchWeight(const at::Tensor& value) { weight = register_parameter("weight", value); }
  at::Tensor weight;
};

bool matches(const std::string& name, const std::string& target) {
  return name == target ||
         (name.size() > target.size() && name.compare(name.size() - target.size() - 1, target.size() + 1, "." + target) == 0);
}

// The branches of one experts module, by weight name.
class ExpertLora : public model::ExpertWeightsAdapter {
 public:
  struct Branch {
    std::shared_ptr<BranchWeight> a, b;  // [r E, in], [out, r E]
    int64_t r;        // per weight: PEFT gives gate_up_proj 2r on models it converts (rank_pattern)
    double scaling;

    // scaling * sum_j B[o, j, e] A[e, j, i] -> [E, out, in], in the dtype of a and b (or of the arguments).
    at::Tensor delta(const at::Tensor& a_weight, const at::Tensor& b_weight, int64_t experts) const {
      return at::einsum("ore,eri->eoi", {b_weight.view({b_weight.size(0), r, experts}), a_weight.view({experts, r, -1})}) *
             scaling;
    }
  };

  at::Tensor adapted(const std::string& name, const at::Tensor& weight) override {
    const auto it = branches.find(name);
    if (it == branches.end()) return weight;
    const Branch& branch = it->second;  // PEFT: the delta cast to W's dtype, then added
    return weight + branch.delta(branch.a->weight, branch.b->weight, weight.size(0)).to(weight.scalar_type());
  }

  std::map<std::string, Branch> branches;
};

std::vector<std::pair<std::string, model::MoeExpertsImpl*>> experts_modules(model::CausalLM& model) {
  std::vector<std::pair<std::string, model::MoeExpertsImpl*>> out;
  for (const auto& item : model->named_modules("", /*include_self=*/false))
    if (auto* experts = item.value()->as<model::MoeExpertsImpl>()) out.emplace_back(item.key(), experts);
  return out;
}

at::Tensor& expert_weight(model::MoeExpertsImpl& experts, const std::string& name) {
  return name == "gate_up_proj" ? experts.gate_up_proj : experts.down_proj;
}

}  // namespace

void check_expert_lora(model::CausalLM& model, const LoraConfig& config) {
  if (config.target_parameters.empty()) return;
  const auto modules = experts_modules(model);
  SWIFT_CHECK(!modules.empty(), UsageError,
              "--target_parameters: this model has no mixture-of-experts layer",
              "drop --target_parameters (it adapts the experts' stacked weights)");
  SWIFT_CHECK(config.lora_dropout == 0, UsageError,
              "--target_parameters needs --lora_dropout 0 (PEFT adapts a parameter without dropout, and refuses it)",
              "add --lora_dropout 0");
  SWIFT_CHECK(!config.use_dora, UsageError, "--target_parameters with --use_dora: PEFT has no DoRA on parameters",
              "drop --use_dora or --target_parameters");
  for (const auto& target : config.target_parameters) {
    bool found = false;
    for (const auto& [name, experts] : modules)
      for (const char* w : kExpertWeights) found = found || matches(name + "." + w, target);
    SWIFT_CHECK(found, UsageError, "--target_parameters '" + target + "' matches no expert weight of this model",
                "the experts' stacked weights are mlp.experts.gate_up_proj and mlp.experts.down_proj (e.g. " +
                    modules.front().first + ".gate_up_proj)");
  }
  for (const auto& [name, experts] : modules) {
    SWIFT_CHECK(!experts->adapter, UsageError, name + " already carries LoRA", "merge it first or load the base again");
    SWIFT_CHECK(!experts->expert_parallel, UsageError,
                "LoRA on the experts' stacked weights (--target_parameters, or gate_proj/up_proj/down_proj targets that "
                "all-linear includes on this model, which PEFT 0.20 converts into them) under expert parallelism is not "
                "available yet",
                "train with --ep_size 1, or name the attention's layers alone (--target_modules q_proj k_proj v_proj o_proj)");
  }
}

std::vector<std::string> apply_expert_lora(model::CausalLM& model, const LoraConfig& config, at::Generator& gen) {
  std::vector<std::string> names;
  check_expert_lora(model, config);
  for (const auto& [name, experts] : experts_modules(model)) {
    std::vector<std::string> targeted;
    for (const char* w : kExpertWeights)
      for (const auto& target : config.target_parameters)
        if (matches(name + "." + w, target)) {
          targeted.push_back(w);
          break;
        }
    if (targeted.empty()) continue;
    auto lora = std::make_shared<ExpertLora>();
    // PEFT wraps the module once per targeted weight, in parameter order: the last is outermost (its branches on
    // the module itself), each earlier one a "base_layer" further in.
    std::vector<torch::nn::Module*> depth = {experts};
    for (size_t i = 1; i < targeted.size(); ++i) {
      auto inner = std::make_shared<torch::nn::Module>();
      depth.back()->register_module("base_layer", inner);
      depth.push_back(inner.get());
    }
    for (size_t i = 0; i < targeted.size(); ++i) {
      const at::Tensor& weight = expert_weight(*experts, targeted[i]);
      const int64_t e = weight.size(0), out = weight.size(1), in = weight.size(2);
      const std::string weight_name = name + "." + targeted[i];
      const int64_t r = config.rank_for(weight_name);
      at::Tensor a, b;
      switch (config.init_weights) {  // lora_A as an nn.Linear(in, r E), lora_B as an nn.Linear(r E, out)
        case LoraInit::kDefault:
          a = at::empty({r * e, in}, at::kFloat).uniform_(-1.0 / std::sqrt(double(in)), 1.0 / std::sqrt(double(in)), gen);
          b = at::zeros({out, r * e}, at::kFloat);
          break;
        case LoraInit::kGaussian:
          a = at::empty({r * e, in}, at::kFloat).normal_(0.0, 1.0 / static_cast<double>(r), gen);
          b = at::zeros({out, r * e}, at::kFloat);
          break;
        case LoraInit::kRandom: {
          a = at::empty({r * e, in}, at::kFloat).uniform_(-1.0 / std::sqrt(double(in)), 1.0 / std::sqrt(double(in)), gen);
          const double bound = 1.0 / std::sqrt(static_cast<double>(r * e));
          b = at::empty({out, r * e}, at::kFloat).uniform_(-bound, bound, gen);
          break;
        }
      }
      const auto options = weight.options().dtype(config.lora_dtype.value_or(weight.scalar_type())).device(model->device());
      ExpertLora::Branch branch{std::make_shared<BranchWeight>(a.to(options)), std::make_shared<BranchWeight>(b.to(options)),
                                r, config.scaling_for(weight_name)};
      branch.a->weight.set_requires_grad(true);
      branch.b->weight.set_requires_grad(true);
      torch::nn::Module* holder = depth[targeted.size() - 1 - i];
      holder->register_module("lora_A", branch.a);
      holder->register_module("lora_B", branch.b);
      lora->branches.emplace(targeted[i], branch);
      names.push_back(name + "." + targeted[i]);
    }
    experts->adapter = lora;
  }
  return names;
}

std::vector<std::string> expert_lora_weights(model::CausalLM& model) {
  std::vector<std::string> out;
  for (const auto& [name, experts] : experts_modules(model))
    if (auto lora = std::dynamic_pointer_cast<ExpertLora>(experts->adapter))
      for (const char* w : kExpertWeights)
        if (lora->branches.count(w)) out.push_back(name + "." + w);
  return out;
}

int64_t merge_expert_lora(model::CausalLM& model) {
  at::NoGradGuard no_grad;
  int64_t merged = 0;
  for (const auto& [name, experts] : experts_modules(model)) {
    auto lora = std::dynamic_pointer_cast<ExpertLora>(experts->adapter);
    if (!lora) continue;
    for (const auto& [w, branch] : lora->branches) {
      at::Tensor& weight = expert_weight(*experts, w);
      const auto dtype = at::promote_types(weight.scalar_type(), at::kFloat);  // bf16 sums would round
      weight.copy_(weight.to(dtype) + branch.delta(branch.a->weight.to(dtype), branch.b->weight.to(dtype), weight.size(0)));
      ++merged;
    }
    experts->adapter.reset();
    for (const char* child : {"lora_A", "lora_B", "base_layer"})
      if (experts->named_children().contains(child)) experts->unregister_module(child);
  }
  return merged;
}

ExpertAdaptersDisabled::ExpertAdaptersDisabled(model::CausalLM& model) {
  for (const auto& [name, experts] : experts_modules(model)) {
    if (!experts->adapter) continue;
    disabled_.emplace_back(experts, experts->adapter);
    experts->adapter = nullptr;
  }
}

ExpertAdaptersDisabled::~ExpertAdaptersDisabled() {
  for (auto& [experts, adapter] : disabled_) experts->adapter = adapter;
}

}  // namespace swift::tuners
