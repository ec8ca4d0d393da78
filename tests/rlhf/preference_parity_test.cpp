// Preference-loss parity: swift rlhf's losses and logged metrics against ms-swift's DPO, KTO and reward-model trainers
// and TRL's CPO/ORPO trainers (as ms-swift runs them) on the same fixed batch of the same tiny models
// (tests/parity/make_rlhf_reference.py).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <cstdlib>
#include <fstream>

#include "swift/io/hf_config.h"
#include "swift/io/safetensors.h"
#include "swift/model/checkpoint.h"
#include "swift/rlhf/preference_loss.h"
#include "skip.h"

namespace fs = std::filesystem;
using namespace swift;

namespace {

fs::path rlhf_dir() {
  const char* env = std::getenv("SWIFT_PARITY_DIR");
  return env ? fs::path(env) / "rlhf" : fs::path();
}

std::string skip_reason() {
  if (rlhf_dir().empty()) return "SWIFT_PARITY_DIR is not set (run through ctest, which builds the reference first)";
  std::ifstream in(rlhf_dir() / "SKIPPED");
  std::string reason;
  std::getline(in, reason);
  return "preference-loss reference unavailable: " + (reason.empty() ? "no " + rlhf_dir().string() : reason);
}

rlhf::PreferenceConfig config_of(const nlohmann::json& c) {
  rlhf::PreferenceConfig config;
  const std::string method = c.at("method");
  config.method = method == "dpo"   ? rlhf::PreferenceMethod::kDpo
                  : method == "cpo" ? rlhf::PreferenceMethod::kCpo
                  : method == "kto" ? rlhf::PreferenceMethod::kKto
                                    : rlhf::PreferenceMethod::kOrpo;
  const auto& s = c.at("settings");
  config.loss_type = s.value("loss_type", std::string(method == "kto" ? "kto" : "sigmoid"));
  config.beta = s.at("beta");
  config.label_smoothing = s.value("label_smoothing", 0.0);
  if (s.contains("rpo_alpha")) config.rpo_alpha = s.at("rpo_alpha").get<double>();
  config.cpo_alpha = s.value("cpo_alpha", 1.0);
  config.simpo_gamma = s.value("simpo_gamma", 1.0);
  config.discopop_tau = s.value("discopop_tau", 0.05);
  config.desirable_weight = s.value("desirable_weight", 1.0);
  config.undesirable_weight = s.value("undesirable_weight", 1.0);
  rlhf::validate(config);
  return config;
}

// What swift rlhf computes for a micro-batch (src/recipes/rlhf.cpp's PreferenceObjective), from the model and
// the reference model directly.
rlhf::PreferenceOutput swift_loss(model::CausalLM& policy, model::CausalLM& reference, const rlhf::PreferenceConfig& c,
                                   const at::Tensor& input_ids, const at::Tensor& labels, const at::Tensor& mask) {
  torch::NoGradGuard no_grad;
  model::ForwardArgs args;
  args.input_ids = input_ids;
  if (c.needs_position_logit_means()) {
    args.attention_mask = mask;
    args.position_ids = at::arange(input_ids.size(1)).expand_as(input_ids);
  }
  const auto hidden = policy->forward_hidden(args);
  const auto logps = rlhf::sequence_logps_from_hidden(
      hidden, labels, [&](const at::Tensor& h) { return policy->logits(h); }, !c.needs_position_logit_means());
  const auto ref_hidden = reference->forward_hidden(args);
  const auto ref = rlhf::sequence_logps_from_hidden(ref_hidden, labels,
                                                     [&](const at::Tensor& h) { return reference->logits(h); });
  return rlhf::preference_loss(c, logps, &ref, c.needs_position_logit_means() ? policy->vocab_mean_logits(hidden) : at::Tensor());
}

// KTO as swift rlhf computes it (PreferenceObjective::compute_kto): rows 0..B-1 are the labelled replies,
// B..2B-1 their KL rows; logged values are sums over the replies with their counts, margins derived.
rlhf::PreferenceOutput swift_kto(model::CausalLM& policy, model::CausalLM& reference, const rlhf::PreferenceConfig& c,
                                  const at::Tensor& input_ids, const at::Tensor& labels, const at::Tensor& desirable) {
  torch::NoGradGuard no_grad;
  const int64_t B = input_ids.size(0) / 2;
  const auto score = [&](model::CausalLM& m, int64_t start) {
    model::ForwardArgs args;
    args.input_ids = input_ids.narrow(0, start, B);
    return rlhf::sequence_logps_from_hidden(m->forward_hidden(args), labels.narrow(0, start, B),
                                             [&](const at::Tensor& h) { return m->logits(h); }, true);
  };
  const auto p = score(policy, 0), r = score(reference, 0), pk = score(policy, B), rk = score(reference, B);
  return rlhf::kto_loss(c, p, r, &pk, &rk, desirable);
}

}  // namespace

TEST(PreferenceParity, LossesAndMetricsAreMsSwiftAndTrls) {
  if (rlhf_dir().empty() || !fs::exists(rlhf_dir() / "manifest.json")) SWIFT_REFERENCE_MISSING(skip_reason());
  const auto manifest = io::read_json_file(rlhf_dir() / "manifest.json");
  model::LoadOptions load;
  load.dtype = at::kFloat;
  auto policy = model::load_model(rlhf_dir() / "policy", load);
  auto reference = model::load_model(rlhf_dir() / "reference", load);
  policy->eval();
  reference->eval();
  const auto batch = io::SafetensorsFile::open(rlhf_dir() / "batch.safetensors");
  const auto input_ids = batch->get("input_ids"), labels = batch->get("labels"), mask = batch->get("attention_mask");
  auto reward_model = model::load_model(rlhf_dir() / "reward", load);
  reward_model->eval();
  int cases = 0;
  for (const auto& [name, c] : manifest.at("cases").items()) {
    SCOPED_TRACE(name);
    if (c.at("method") == "rm") {  // as RewardModelObjective: the score at each row's last token
      torch::NoGradGuard no_grad;
      model::ForwardArgs args;
      args.input_ids = input_ids;
      const auto rewards = model::sequence_scores(reward_model, args, mask).squeeze(-1);
      const auto& s = c.at("settings");
      const auto margins = s.contains("margins") ? at::tensor(s.at("margins").get<std::vector<double>>()) : at::Tensor();
      std::optional<double> center;
      if (s.contains("center_rewards_coefficient")) center = s.at("center_rewards_coefficient").get<double>();
      const auto out = rlhf::reward_model_loss(rewards, margins, center);
      EXPECT_NEAR(out.loss.item<double>(), c.at("loss").get<double>(), 1e-4 * (1 + std::abs(c.at("loss").get<double>())));
      EXPECT_EQ(out.metrics.size(), c.at("metrics").size());
      for (const auto& m : out.read()) {
        ASSERT_TRUE(c.at("metrics").contains(m.name)) << m.name;
        const double expected = c.at("metrics").at(m.name);
        EXPECT_NEAR(m.sum / m.count, expected, 1e-4 * (1 + std::abs(expected))) << m.name;
      }
      ++cases;
      continue;
    }
    const auto config = config_of(c);
    const bool kto = config.method == rlhf::PreferenceMethod::kKto;
    const bool swap = c.at("settings").value("swap_models", false);
    const auto out = kto ? swift_kto(swap ? reference : policy, swap ? policy : reference, config, input_ids, labels,
                                     at::tensor(c.at("labels").get<std::vector<int64_t>>()).to(at::kBool))
                         : swift_loss(policy, reference, config, input_ids, labels, mask);
    EXPECT_NEAR(out.loss.item<double>(), c.at("loss").get<double>(), 1e-4 * (1 + std::abs(c.at("loss").get<double>())));
    std::vector<std::pair<std::string, double>> values;
    for (const auto& m : out.read()) values.emplace_back(m.name, m.count ? m.sum / m.count : 0.0);
    if (kto) values.emplace_back("rewards/margins", values[1].second - values[2].second);  // as rlhf.cpp derives it
    std::set<std::string> seen;
    for (const auto& [metric, v] : values) {
      seen.insert(metric);
      ASSERT_TRUE(c.at("metrics").contains(metric)) << metric << " is not logged by the reference trainer";
      const double expected = c.at("metrics").at(metric);
      EXPECT_NEAR(v, expected, 1e-4 * (1 + std::abs(expected))) << metric;
    }
    for (const auto& [metric, v] : c.at("metrics").items())
      EXPECT_TRUE(seen.count(metric)) << "the reference logs " << metric << ", swift does not";
    ++cases;
  }
  EXPECT_EQ(cases, 25);
}
