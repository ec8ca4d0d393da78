// Mixture-of-experts layers: the grouped expert products against a plain per-token loop, folders with one tensor per
// expert, and the load-balancing loss against its definition. (Logits against transformers: parity_test.cpp.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "swift/core/error.h"
#include "swift/io/safetensors.h"
#include "swift/io/safetensors_folder.h"
#include "swift/model/checkpoint.h"
#include "swift/model/moe.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace swift;

namespace {

// Layer 1 of the tiny config is sparse (layer 0 dense: mlp_only_layers).
model::SparseMoeBlockImpl& sparse_block(model::CausalLM& m) {
  return *m->model->layers[1]->as<model::DecoderLayerImpl>()->moe;
}

// The block computed token by token, expert by expert, as the definition reads.
at::Tensor per_token_reference(model::SparseMoeBlockImpl& block, const at::Tensor& x, int64_t k, bool renormalise) {
  const at::Tensor flat = x.reshape({-1, x.size(-1)});
  at::Tensor out = at::zeros_like(flat);
  const at::Tensor& gate_up = block.experts->gate_up_proj;
  const at::Tensor& down = block.experts->down_proj;
  const int64_t width = down.size(2);
  for (int64_t t = 0; t < flat.size(0); ++t) {
    const at::Tensor token = flat[t];
    const at::Tensor probs = at::softmax(at::matmul(block.gate->weight, token), 0);
    auto [top, chosen] = at::topk(probs, k);
    if (renormalise) top = top / top.sum();
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = chosen[j].item<int64_t>();
      const at::Tensor g = at::matmul(gate_up[e].narrow(0, 0, width), token);
      const at::Tensor u = at::matmul(gate_up[e].narrow(0, width, width), token);
      out[t] += top[j] * at::matmul(down[e], at::silu(g) * u);
    }
    if (block.shared_expert) {
      const auto& s = block.shared_expert;
      const at::Tensor h = at::silu(at::matmul(s->gate_proj->weight, token)) * at::matmul(s->up_proj->weight, token);
      out[t] += at::sigmoid(at::matmul(block.shared_expert_gate->weight, token)) * at::matmul(s->down_proj->weight, h);
    }
  }
  return out.reshape(x.sizes());
}

}  // namespace

TEST(Moe, GroupedExpertsEqualAPerTokenLoop) {
  torch::NoGradGuard no_grad;
  for (const std::string family : {"qwen3_moe", "qwen2_moe"}) {
    SCOPED_TRACE(family);
    auto m = test::random_model(test::tiny_config(family), 3);
    ASSERT_FALSE(m->model->layers[0]->as<model::DecoderLayerImpl>()->moe) << "mlp_only_layers [0] is dense";
    auto& block = sparse_block(m);
    EXPECT_EQ(static_cast<bool>(block.shared_expert), family == "qwen2_moe");
    const at::Tensor x = at::randn({2, 7, 64});
    const at::Tensor got = block.forward(x);
    const at::Tensor want = per_token_reference(block, x, 2, family == "qwen3_moe");
    EXPECT_LT((got - want).abs().max().item<double>(), 1e-5);
  }
}

// Hugging Face folders hold one tensor per expert and projection; the model reads them stacked and writes them back
// so. A missing expert is named.
TEST(Moe, FoldersKeepOneTensorPerExpert) {
  torch::NoGradGuard no_grad;
  test::TempDir tmp;
  auto m = test::random_model(test::tiny_config("qwen2_moe"), 4);
  model::save_model(m, tmp / "m");
  auto folder = io::SafetensorsFolder::open(tmp / "m");
  EXPECT_TRUE(folder.contains("model.layers.1.mlp.experts.3.up_proj.weight"));
  EXPECT_EQ(folder.entry("model.layers.1.mlp.experts.3.down_proj.weight").shape, (std::vector<int64_t>{64, 32}));
  EXPECT_FALSE(folder.contains("model.layers.1.mlp.experts.gate_up_proj"));
  EXPECT_TRUE(folder.contains("model.layers.1.mlp.shared_expert_gate.weight"));
  EXPECT_TRUE(folder.contains("model.layers.0.mlp.gate_proj.weight"));
  EXPECT_TRUE(at::equal(folder.get("model.layers.1.mlp.experts.2.up_proj.weight"),
                        sparse_block(m).experts->gate_up_proj[2].narrow(0, 32, 32)));
  auto loaded = model::load_model(tmp / "m");
  const auto want = m->named_parameters();
  for (const auto& item : loaded->named_parameters())
    EXPECT_TRUE(at::equal(item.value(), want[item.key()])) << item.key();

  io::NamedTensors tensors;
  for (const auto& name : folder.names())
    if (name != "model.layers.1.mlp.experts.2.gate_proj.weight") tensors.emplace_back(name, folder.get(name));
  fs::create_directories(tmp / "lost");
  fs::copy_file(tmp / "m" / "config.json", tmp / "lost" / "config.json");
  io::save_safetensors(tmp / "lost" / "model.safetensors", tensors);
  try {
    model::load_model(tmp / "lost");
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.1.mlp.experts.2.gate_proj.weight"), std::string::npos) << e.what();
  }
}

// transformers' load_balancing_loss_func: E x sum_e (share of the top-k picks that chose e) x (mean probability of
// e), over every layer's tokens, the masked ones left out.
// The busiest expert's share of the choices times the experts: 1 when balanced, E when every token picks one
// expert; pads left out; a layer that saw no token is not counted.
TEST(Moe, ExpertLoadMaxIsTheBusiestExpertsShare) {
  // 4 tokens, 4 experts, top 1: token t prefers expert t (balanced) or expert 0 (all on one).
  const at::Tensor balanced = at::eye(4) * 5.0;
  at::Tensor one_expert = at::zeros({4, 4});
  one_expert.select(1, 0).fill_(5.0);
  // Returns [sum over the layers, layers counted].
  at::Tensor load = model::expert_load_max({balanced, one_expert}, 1, at::Tensor());
  EXPECT_EQ(load[1].item<double>(), 2);
  EXPECT_DOUBLE_EQ(load[0].item<double>(), 1.0 + 4.0);
  // Top 2 of a batch [1, 4] whose last two tokens are pads: tokens 0 and 1 pick {0, 1} and {1, 2}: expert 1 has 2 of
  // the 4 choices, 2 / 4 x 4 = 2.
  at::Tensor logits = at::zeros({4, 4});
  logits.index_put_({0, 0}, 3.0), logits.index_put_({0, 1}, 2.0);
  logits.index_put_({1, 1}, 3.0), logits.index_put_({1, 2}, 2.0);
  logits.index_put_({2, 3}, 9.0), logits.index_put_({3, 3}, 9.0);  // pads: would make expert 3 the busiest
  const at::Tensor mask = at::tensor({1.0, 1.0, 0.0, 0.0}).view({1, 4});
  load = model::expert_load_max({logits}, 2, mask);
  EXPECT_EQ(load[1].item<double>(), 1);
  EXPECT_DOUBLE_EQ(load[0].item<double>(), 2.0);
  load = model::expert_load_max({logits}, 2, at::zeros({1, 4}));
  EXPECT_EQ(load[1].item<double>(), 0);
}

TEST(Moe, LoadBalancingLossFollowsItsDefinition) {
  const int64_t E = 4, k = 2;
  const std::vector<at::Tensor> logits = {at::randn({6, E}), at::randn({6, E})};
  const at::Tensor mask = at::tensor({1, 1, 1, 0, 1, 0}, at::kLong).view({2, 3});
  for (const bool masked : {false, true}) {
    double picks[E] = {0, 0, 0, 0}, probability[E] = {0, 0, 0, 0}, rows = 0;
    for (const auto& l : logits)
      for (int64_t t = 0; t < 6; ++t) {
        if (masked && mask.view({-1})[t].item<int64_t>() == 0) continue;
        const at::Tensor p = at::softmax(l[t], 0);
        const at::Tensor top = std::get<1>(at::topk(p, k));
        for (int64_t j = 0; j < k; ++j) picks[top[j].item<int64_t>()] += 1;
        for (int64_t e = 0; e < E; ++e) probability[e] += p[e].item<double>();
        rows += 1;
      }
    double want = 0;
    for (int64_t e = 0; e < E; ++e) want += picks[e] / rows * probability[e] / rows;
    want *= E;
    const double got = model::load_balancing_loss(logits, k, masked ? mask : at::Tensor()).item<double>();
    EXPECT_NEAR(got, want, 1e-6) << (masked ? "masked" : "every token");
  }
}

// The auxiliary loss trains the routers: its gradient reaches them the same with activation checkpointing (the
// router logits are outputs of the checkpointed layer, recomputed in backward) as without.
TEST(Moe, AuxiliaryLossGradientSurvivesCheckpointing) {
  auto m = test::random_model(test::tiny_config("qwen3_moe"), 6);
  m->train();
  const at::Tensor ids = at::randint(0, 128, {2, 9}, at::kLong);
  std::vector<at::Tensor> router_grads;
  for (const bool checkpointing : {false, true}) {
    m->set_gradient_checkpointing(checkpointing);
    m->zero_grad();
    std::vector<at::Tensor> routers;
    model::record_router_logits(m, &routers);
    model::ForwardArgs args;
    args.input_ids = ids;
    const at::Tensor hidden = m->forward_hidden(args);
    model::record_router_logits(m, nullptr);
    ASSERT_EQ(routers.size(), 1u) << "one sparse layer";
    EXPECT_EQ(routers.front().requires_grad(), true);
    (model::load_balancing_loss(routers, 2, at::Tensor()) + 1e-3 * hidden.pow(2).sum()).backward();
    router_grads.push_back(sparse_block(m).gate->weight.grad().clone());
  }
  EXPECT_GT(router_grads[0].abs().sum().item<double>(), 0.0);
  EXPECT_LT((router_grads[0] - router_grads[1]).abs().max().item<double>(), 1e-6);
}
