// GRPO parity: swift's per-token log-probabilities, policy loss (every loss type, GSPO's levels, delta, the KL term,
// the overlong filter), its metrics and the policy's gradients, the advantages and reward metrics, and the built-in
// reward functions, against ms-swift 4.6's GRPOTrainer, rl_core and rewards on the same fixed inputs
// (tests/parity/make_grpo_reference.py).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "swift/io/hf_config.h"
#include "swift/io/safetensors.h"
#include "swift/model/checkpoint.h"
#include "swift/rlhf/grpo_advantages.h"
#include "swift/rlhf/grpo_loss.h"
#include "swift/rlhf/reward_functions.h"
#include "skip.h"

namespace fs = std::filesystem;
using namespace swift;

namespace {

fs::path grpo_dir() {
  const char* env = std::getenv("SWIFT_PARITY_DIR");
  return env ? fs::path(env) / "grpo" : fs::path();
}

std::string skip_reason() {
  if (grpo_dir().empty()) return "SWIFT_PARITY_DIR is not set (run through ctest, which builds the reference first)";
  std::ifstream in(grpo_dir() / "SKIPPED");
  std::string reason;
  std::getline(in, reason);
  return "GRPO reference unavailable: " + (reason.empty() ? "no " + grpo_dir().string() : reason);
}

bool reference_missing() { return grpo_dir().empty() || !fs::exists(grpo_dir() / "manifest.json"); }

model::CausalLM load(const std::string& name) {
  model::LoadOptions options;
  options.dtype = at::kFloat;
  auto m = model::load_model(grpo_dir() / name, options);
  m->eval();
  return m;
}

// As the GRPO objective scores a micro-batch: the completion tokens' log-probabilities at the temperature.
at::Tensor logps_of(model::CausalLM& m, const at::Tensor& input_ids, const at::Tensor& labels, double temperature) {
  model::ForwardArgs args;
  args.input_ids = input_ids;
  const at::Tensor hidden = m->forward_hidden(args);
  return rlhf::token_logps_from_hidden(hidden, labels, [&](const at::Tensor& h) { return m->logits(h); }, temperature);
}

// The manifest's reward matrix [N, 2] (null: a function's missing reward, NaN).
at::Tensor manifest_rewards(const nlohmann::json& manifest) {
  std::vector<float> values;
  for (const auto& row : manifest.at("rewards"))
    for (const auto& v : row) values.push_back(v.is_null() ? std::nanf("") : v.get<float>());
  return at::tensor(values).view({-1, 2});
}

double relative(double got, double want) { return std::abs(got - want) / (1 + std::abs(want)); }

}  // namespace

// The completion tokens' log-probabilities at temperature 0.9 equal ms-swift's, the policy's and the reference's.
TEST(GrpoParity, TokenLogProbabilitiesAreMsSwifts) {
  if (reference_missing()) SWIFT_REFERENCE_MISSING(skip_reason());
  const auto manifest = io::read_json_file(grpo_dir() / "manifest.json");
  const auto batch = io::SafetensorsFile::open(grpo_dir() / "batch.safetensors");
  const at::Tensor input_ids = batch->get("input_ids"), labels = batch->get("labels");
  const double temperature = manifest.at("temperature");
  torch::NoGradGuard no_grad;
  auto policy = load("policy"), reference = load("reference");
  const at::Tensor mask = rlhf::completion_mask(labels);
  EXPECT_EQ(mask.sum().item<int64_t>(), 23);
  const at::Tensor own = logps_of(policy, input_ids, labels, temperature);
  const at::Tensor ref = logps_of(reference, input_ids, labels, temperature);
  EXPECT_LT((own - batch->get("own_logps")).abs().max().item<double>(), 1e-5);
  EXPECT_LT((ref - batch->get("ref_logps")).abs().max().item<double>(), 1e-5);
  EXPECT_TRUE(at::equal(own.masked_select(mask.logical_not()), at::zeros({mask.numel() - 23}))) << "0 off the completion";
}

// Every loss case: the loss, the metrics ms-swift logs from it and the policy's gradients.
TEST(GrpoParity, LossMetricsAndGradientsAreMsSwifts) {
  if (reference_missing()) SWIFT_REFERENCE_MISSING(skip_reason());
  const auto manifest = io::read_json_file(grpo_dir() / "manifest.json");
  const auto batch = io::SafetensorsFile::open(grpo_dir() / "batch.safetensors");
  const at::Tensor input_ids = batch->get("input_ids"), labels = batch->get("labels");
  const at::Tensor truncated = batch->get("truncated").to(at::kBool);
  auto policy = load("policy");
  int cases = 0;
  for (const auto& c : manifest.at("loss_cases")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    rlhf::GrpoLossConfig config;
    config.loss_type = rlhf::parse_grpo_loss_type(c.at("loss_type"));
    config.importance_sampling = rlhf::parse_importance_sampling(c.at("importance_sampling_level"));
    config.beta = c.at("beta");
    config.epsilon_low = c.at("epsilon");
    config.epsilon_high = c.at("epsilon_high");
    if (!c.at("delta").is_null()) config.delta = c.at("delta").get<double>();
    config.max_completion_length = c.at("max_completion_length");
    for (auto& p : policy->parameters()) p.mutable_grad() = at::Tensor();
    rlhf::GrpoLossInputs in;
    in.logps = logps_of(policy, input_ids, labels, c.at("temperature"));
    in.old_logps = batch->get("old_logps");
    if (config.beta != 0) in.ref_logps = batch->get("ref_logps");
    in.advantages = batch->get("advantages");
    in.mask = rlhf::completion_mask(labels);
    if (c.at("overlong_filter").get<bool>()) in.mask = in.mask & truncated.logical_not().unsqueeze(1);
    rlhf::GrpoLossResult out = rlhf::grpo_loss(in, config);
    // dapo and cispo: the trainer divides by the generation batch's completion tokens (its units).
    at::Tensor loss = config.window_normalised() ? out.loss / c.at("tokens").get<double>() : out.loss;
    const double want = c.at("loss");
    EXPECT_LT(relative(loss.item<double>(), want), 1e-5) << loss.item<double>() << " vs " << want;
    std::set<std::string> seen;
    for (const auto& [metric, v] : out.metrics) {
      seen.insert(metric);
      ASSERT_TRUE(c.at("metrics").contains(metric)) << metric << " is not logged by ms-swift";
      EXPECT_LT(relative(v.item<double>(), c.at("metrics").at(metric).get<double>()), 1e-5) << metric;
    }
    for (const auto& [metric, v] : c.at("metrics").items()) EXPECT_TRUE(seen.count(metric)) << "ms-swift logs " << metric;
    loss.backward();
    const auto grads = io::SafetensorsFile::open(grpo_dir() / ("grads_" + name + ".safetensors"));
    double worst = 0, largest = 0;
    for (const auto& item : policy->named_parameters()) {
      ASSERT_TRUE(grads->contains(item.key())) << item.key();
      const at::Tensor want_grad = grads->get(item.key());
      worst = std::max(worst, (item.value().grad() - want_grad).abs().max().item<double>());
      largest = std::max(largest, want_grad.abs().max().item<double>());
    }
    EXPECT_GT(largest, 1e-3) << "the loss reaches the weights";
    EXPECT_LT(worst, 1e-5 * (1 + largest)) << "gradients";
    ++cases;
  }
  EXPECT_EQ(cases, 12);
}

// Advantages for each estimator and scaling (a missing reward counts 0, an all-equal group gets 0), and the reward
// metrics ms-swift logs.
TEST(GrpoParity, AdvantagesAndRewardMetricsAreMsSwifts) {
  if (reference_missing()) SWIFT_REFERENCE_MISSING(skip_reason());
  const auto manifest = io::read_json_file(grpo_dir() / "manifest.json");
  const at::Tensor rewards = manifest_rewards(manifest);
  const std::vector<double> weights = manifest.at("reward_weights");
  const int64_t K = manifest.at("num_generations");
  int cases = 0;
  for (const auto& c : manifest.at("advantage_cases")) {
    SCOPED_TRACE(c.at("estimator").get<std::string>() + " " + c.at("scale_rewards").get<std::string>());
    const auto scaling = rlhf::parse_scale_rewards(c.at("scale_rewards"));
    const auto batch = rlhf::group_advantages(rewards, weights, K, rlhf::parse_advantage_estimator(c.at("estimator")), scaling);
    const at::Tensor want = at::tensor(c.at("advantages").get<std::vector<float>>());
    EXPECT_LT((batch.advantages - want).abs().max().item<double>(), 1e-5) << batch.advantages << want;
    EXPECT_LT((batch.rewards - at::tensor(c.at("rewards").get<std::vector<float>>())).abs().max().item<double>(), 1e-6);
    const auto metrics = rlhf::reward_metrics(batch, rewards, {"MathAccuracy", "Format"}, K, scaling);
    EXPECT_EQ(metrics.size(), c.at("metrics").size());
    for (const auto& [metric, v] : metrics) {
      ASSERT_TRUE(c.at("metrics").contains(metric)) << metric;
      EXPECT_LT(relative(v, c.at("metrics").at(metric).get<double>()), 1e-5) << metric;
    }
    ++cases;
  }
  EXPECT_EQ(cases, 12);
}

// The built-in reward functions on completions and solutions arithmetic and math sets give: ms-swift's values (its
// accuracy through math_verify).
TEST(GrpoParity, BuiltinRewardsAreMsSwifts) {
  if (reference_missing()) SWIFT_REFERENCE_MISSING(skip_reason());
  const auto cases = io::read_json_file(grpo_dir() / "manifest.json").at("reward_cases");
  rlhf::RewardSettings settings;
  settings.cosine_max_len = cases.at("settings").at("cosine_max_len");
  settings.soft_max_length = cases.at("settings").at("soft_max_length");
  settings.soft_cache_length = cases.at("settings").at("soft_cache_length").get<int64_t>();
  std::vector<nlohmann::json> rows;
  std::vector<rlhf::ScoredCompletion> batch;
  for (const auto& s : cases.at("solutions")) rows.push_back({{"solution", s}});
  for (size_t i = 0; i < rows.size(); ++i)
    batch.push_back({cases.at("completions")[i].get<std::string>(), cases.at("tokens")[i].get<int64_t>(), &rows[i]});
  for (const std::string name : {"accuracy", "format", "cosine", "repetition", "soft_overlong"}) {
    const auto scores = rlhf::builtin_reward(name, settings)->score(batch);
    ASSERT_EQ(scores.size(), batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      ASSERT_TRUE(scores[i].has_value());
      EXPECT_NEAR(*scores[i], cases.at(name)[i].get<double>(), 1e-9)
          << name << " of " << batch[i].text << " (solution " << rows[i]["solution"] << ")";
    }
  }
}

// --kl_in_reward: beta x each completion's KL taken out of the rewards before the advantages, as ms-swift does for
// rloo and REINFORCE++ (its default there) and for grpo when asked.
TEST(GrpoParity, KlInRewardIsMsSwifts) {
  if (reference_missing()) SWIFT_REFERENCE_MISSING(skip_reason());
  const auto manifest = io::read_json_file(grpo_dir() / "manifest.json");
  const at::Tensor rewards = manifest_rewards(manifest);
  const std::vector<double> weights = manifest.at("reward_weights");
  const at::Tensor kl = at::tensor(manifest.at("kl_values").get<std::vector<float>>());
  const double beta = manifest.at("kl_beta");
  int cases = 0;
  for (const auto& c : manifest.at("kl_cases")) {
    SCOPED_TRACE(c.at("estimator").get<std::string>());
    const auto scaling = rlhf::parse_scale_rewards(c.at("scale_rewards"));
    const auto batch = rlhf::group_advantages(rewards, weights, manifest.at("num_generations"),
                                              rlhf::parse_advantage_estimator(c.at("estimator")), scaling, beta * kl);
    EXPECT_LT((batch.advantages - at::tensor(c.at("advantages").get<std::vector<float>>())).abs().max().item<double>(), 1e-5);
    EXPECT_LT((batch.rewards - at::tensor(c.at("rewards").get<std::vector<float>>())).abs().max().item<double>(), 1e-6);
    const auto metrics = rlhf::reward_metrics(batch, rewards, {"MathAccuracy", "Format"}, manifest.at("num_generations"), scaling);
    EXPECT_LT(relative(metrics.at(0).second, c.at("reward").get<double>()), 1e-5);
    EXPECT_LT(relative(metrics.at(1).second, c.at("reward_std").get<double>()), 1e-5);
    ++cases;
  }
  EXPECT_EQ(cases, 3);
}
