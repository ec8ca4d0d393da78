// Gradient checkpointing on tiny random models of every family (fp32, train mode): the loss and every
// parameter's gradient equal those without checkpointing (<= 1e-6 relative), with full fine-tuning and with LoRA
// (dropout > 0: the recomputation sees the same mask; frozen parameters get no gradient); the recomputation
// leaves the global RNG stream as it was; eval mode and no-grad passes are unaffected; autocast caches no weight
// copies under ZeRO-3.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "swift/model/autocast.h"
#include "swift/model/checkpointing.h"
#include "swift/model/param_sharding.h"
#include "swift/tuners/lora.h"
#include "test_util.h"

using namespace swift;

namespace {

struct Result {
  at::Tensor loss;
  std::map<std::string, at::Tensor> grads;  // undefined for parameters that got none
  int64_t checkpoint_nodes = 0;
  at::Tensor rng_after;  // a draw from the global CPU generator after backward
};

// Nodes of the graph behind `t` whose name is the checkpointing Function's.
int64_t count_checkpoint_nodes(const at::Tensor& t) {
  if (!t.grad_fn()) return 0;
  std::set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> stack = {t.grad_fn().get()};
  int64_t count = 0;
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    if (!node || !seen.insert(node).second) continue;
    if (node->name().find("CheckpointedLayer") != std::string::npos) ++count;
    for (const auto& edge : node->next_edges()) stack.push_back(edge.function.get());
  }
  return count;
}

model::ForwardArgs batch(bool padded) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  model::ForwardArgs args;
  args.input_ids = at::randint(0, 128, {2, 14}, gen, at::TensorOptions().dtype(at::kLong));
  if (padded) {  // left padding: exercises the explicit (and sliding-window) masks
    args.attention_mask = at::ones({2, 14}, at::kLong);
    args.attention_mask.index_put_({1, at::indexing::Slice(0, 4)}, 0);
  }
  return args;
}

// autocast: the forward pass runs under that mixed-precision dtype, as swift sft's; backward runs outside it.
Result train_step(model::CausalLM& m, bool checkpointing, bool padded, uint64_t seed = 1234,
                  std::optional<c10::ScalarType> autocast = std::nullopt) {
  m->zero_grad();
  for (auto& p : m->parameters()) p.mutable_grad() = at::Tensor();
  m->set_gradient_checkpointing(checkpointing);
  m->train();
  at::manual_seed(seed);
  auto args = batch(padded);
  at::Tensor logits;
  {
    const model::AutocastScope scope(c10::DeviceType::CPU, autocast);
    logits = m->forward(args).to(at::kFloat);
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  auto labels = at::randint(0, 128, {2 * 14}, gen, at::TensorOptions().dtype(at::kLong));
  Result r;
  r.loss = at::cross_entropy_loss(logits.view({-1, logits.size(-1)}), labels);
  r.checkpoint_nodes = count_checkpoint_nodes(r.loss);
  r.loss.backward();
  r.rng_after = at::rand({4});
  for (const auto& item : m->named_parameters())
    r.grads[item.key()] = item.value().grad().defined() ? item.value().grad().clone() : at::Tensor();
  return r;
}

double relative_diff(const at::Tensor& a, const at::Tensor& b) {
  const double scale = std::max(1e-12, a.abs().max().item<double>());
  return (a - b).abs().max().item<double>() / scale;
}

void expect_same(const Result& plain, const Result& ckpt, const std::string& what) {
  EXPECT_LE(relative_diff(plain.loss, ckpt.loss), 1e-6) << what;
  ASSERT_EQ(plain.grads.size(), ckpt.grads.size());
  for (const auto& [name, g] : plain.grads) {
    const auto& h = ckpt.grads.at(name);
    ASSERT_EQ(g.defined(), h.defined()) << what << ": " << name;
    if (g.defined()) {
      EXPECT_LE(relative_diff(g, h), 1e-6) << what << ": " << name;
    }
  }
  EXPECT_TRUE(at::equal(plain.rng_after, ckpt.rng_after)) << what << ": recomputation moved the RNG stream";
}

class CheckpointingTest : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(CheckpointingTest, FullFineTuningGradientsMatch) {
  auto m = test::random_model(test::tiny_config(GetParam()), 3);
  for (bool padded : {false, true}) {
    const auto plain = train_step(m, false, padded);
    const auto ckpt = train_step(m, true, padded);
    EXPECT_EQ(plain.checkpoint_nodes, 0);
    EXPECT_EQ(ckpt.checkpoint_nodes, m->config().num_hidden_layers);  // the switch really took the checkpointed path
    expect_same(plain, ckpt, GetParam() + (padded ? " padded" : " causal"));
    for (const auto& [name, g] : ckpt.grads) EXPECT_TRUE(g.defined()) << name;
  }
}

// bf16 compute over fp32 weights (--torch_dtype bfloat16 full fine-tuning): the recomputation in backward must run
// under the forward's autocast dtype, or the gradients belong to an fp32 layer the forward never ran.
TEST_P(CheckpointingTest, AutocastGradientsMatch) {
  auto m = test::random_model(test::tiny_config(GetParam()), 3);
  const auto plain = train_step(m, false, false, 1234, c10::kBFloat16);
  const auto ckpt = train_step(m, true, false, 1234, c10::kBFloat16);
  EXPECT_EQ(ckpt.checkpoint_nodes, m->config().num_hidden_layers);
  expect_same(plain, ckpt, GetParam() + " bf16 autocast");
}

TEST_P(CheckpointingTest, LoraWithDropoutGradientsMatch) {
  auto m = test::random_model(test::tiny_config(GetParam()), 4);
  tuners::LoraConfig c;
  c.r = 4;
  c.lora_alpha = 16;
  c.lora_dropout = 0.3;
  c.init_weights = tuners::LoraInit::kRandom;
  tuners::apply_lora(m, c, 9);
  std::set<std::string> trainable;
  for (const auto& [name, t] : tuners::trainable_parameters(m)) trainable.insert(name);
  ASSERT_FALSE(trainable.empty());

  const auto plain = train_step(m, false, true);
  const auto ckpt = train_step(m, true, true);
  EXPECT_EQ(ckpt.checkpoint_nodes, m->config().num_hidden_layers);
  expect_same(plain, ckpt, GetParam() + " lora");
  for (const auto& [name, g] : ckpt.grads) EXPECT_EQ(g.defined(), trainable.count(name) > 0) << name;

  // Dropout is really random: another seed gives other gradients (so matching above is not trivial).
  const auto other = train_step(m, true, true, 999);
  EXPECT_GT(relative_diff(ckpt.loss, other.loss), 1e-6);
}

TEST_P(CheckpointingTest, EvalAndNoGradUnaffected) {
  auto m = test::random_model(test::tiny_config(GetParam()), 5);
  tuners::LoraConfig c;
  c.r = 4;
  c.lora_dropout = 0.3;
  c.init_weights = tuners::LoraInit::kRandom;
  c.modules_to_save = {"lm_head"};
  tuners::apply_lora(m, c, 2);
  const auto args = batch(true);
  m->eval();
  const auto expected = m->forward(args);  // grad enabled, eval mode, checkpointing off
  m->set_gradient_checkpointing(true);
  EXPECT_TRUE(m->gradient_checkpointing());
  const auto eval_out = m->forward(args);
  EXPECT_EQ(count_checkpoint_nodes(eval_out), 0);
  EXPECT_TRUE(at::equal(expected, eval_out));
  {
    torch::NoGradGuard no_grad;
    EXPECT_TRUE(at::equal(expected, m->forward(args)));
    m->train();
    auto out = m->forward(args);
    EXPECT_FALSE(out.requires_grad());
    m->eval();
  }
  // A KV-cache pass in training mode is never checkpointed.
  m->train();
  auto cache = m->make_cache(2, 14);
  auto cached_args = args;
  cached_args.cache = &cache;
  EXPECT_EQ(count_checkpoint_nodes(m->forward(cached_args)), 0);
}

// The Function on one layer: the input's gradient too (full fine-tuning: every input requires grad).
TEST(Checkpointing, LayerInputGradientMatches) {
  auto m = test::random_model(test::tiny_config("qwen3"), 6);
  m->train();
  auto layer = std::static_pointer_cast<model::DecoderLayerImpl>(m->model->layers->ptr(0));
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  auto x0 = at::randn({2, 9, 64}, gen);
  model::AttentionInputs in;
  auto rope_ids = at::arange(0, 9, at::kLong).unsqueeze(0).expand({2, 9});
  {
    // cos/sin as the model builds them: theta 10000 over head_dim 24.
    auto inv = at::pow(10000.0, -at::arange(0, 24, 2, at::kFloat) / 24.0);
    auto freqs = rope_ids.to(at::kFloat).unsqueeze(-1) * inv;
    auto emb = at::cat({freqs, freqs}, -1);
    in.cos = emb.cos();
    in.sin = emb.sin();
  }
  auto xa = x0.clone().requires_grad_(true);
  auto ya = layer->forward(xa, in);
  ya.pow(2).sum().backward();
  std::vector<at::Tensor> grads;
  for (auto& p : layer->parameters()) grads.push_back(p.grad().clone()), p.mutable_grad() = at::Tensor();

  auto xb = x0.clone().requires_grad_(true);
  auto yb = model::checkpointed_layer_forward(layer, xb, in);
  EXPECT_EQ(count_checkpoint_nodes(yb), 1);
  EXPECT_TRUE(at::equal(ya.detach(), yb.detach()));
  yb.pow(2).sum().backward();
  EXPECT_LE(relative_diff(xa.grad(), xb.grad()), 1e-6);
  size_t i = 0;
  for (auto& p : layer->parameters()) EXPECT_LE(relative_diff(grads[i++], p.grad()), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Families, CheckpointingTest, ::testing::Values("llama", "qwen2", "qwen3", "mistral"));

// Under ZeRO-3 (a ParamSharding installed) autocast keeps no low-precision copies of the weights it casts: they
// would keep each gathered layer's weights alive through the forward. Without one it caches, as PyTorch does.
TEST(Autocast, NoWeightCacheUnderParamSharding) {
  struct NoSharding : model::ParamSharding {
    void gather(const std::vector<at::Tensor>&) override {}
    void release(const std::vector<at::Tensor>&) override {}
    void reduce_gradients(const std::vector<at::Tensor>&, const std::vector<at::Tensor>&) override {}
    bool gathers_around_use(const at::Tensor&) const override { return false; }
  } sharding;
  {
    const model::AutocastScope scope(c10::DeviceType::CPU, at::kBFloat16);
    EXPECT_TRUE(at::autocast::is_autocast_cache_enabled());
  }
  model::set_param_sharding(&sharding);
  {
    const model::AutocastScope scope(c10::DeviceType::CPU, at::kBFloat16);
    EXPECT_FALSE(at::autocast::is_autocast_cache_enabled());
  }
  model::set_param_sharding(nullptr);
  EXPECT_TRUE(at::autocast::is_autocast_cache_enabled());
}
