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
#include "swift/train/causal_lm_objective.h"
#include "skip.h"
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
  for (const std::string family : {"qwen3_moe", "qwen2_moe", "mixtral"}) {
    SCOPED_TRACE(family);
    auto m = test::random_model(test::tiny_config(family), 3);
    ASSERT_EQ(static_cast<bool>(m->model->layers[0]->as<model::DecoderLayerImpl>()->moe), family == "mixtral")
        << "mlp_only_layers [0] is dense; Mixtral's every layer is sparse";
    auto& block = sparse_block(m);
    EXPECT_EQ(static_cast<bool>(block.shared_expert), family == "qwen2_moe");
    const at::Tensor x = at::randn({2, 7, 64});
    const at::Tensor got = block.forward(x);
    const at::Tensor want = per_token_reference(block, x, 2, family != "qwen2_moe");
    EXPECT_LT((got - want).abs().max().item<double>(), 1e-5);
  }
}

// With a capacity, the layer's output is the per-token definition without the (token, choice) rows the keep mask
// drops: those experts add nothing to their tokens, the other choices keep their weights.
TEST(Moe, CapacityLeavesTheDroppedChoicesOut) {
  auto m = test::random_model(test::tiny_config("qwen3_moe"), 7);
  auto& block = sparse_block(m);
  const at::Tensor x = at::randn({2, 9, 64});
  const at::Tensor flat = x.reshape({-1, 64});
  const at::Tensor probe = at::randn({18, 64});  // the outputs' weights in the loss whose gradients are compared
  for (const bool by_position : {false, true}) {
    SCOPED_TRACE(by_position ? "position" : "probs");
    const model::ExpertCapacity capacity{0.5, by_position};  // 18 tokens x 2 / 4 experts x 0.5: 5 rows per expert
    // The layer, and its gradients.
    m->zero_grad();
    block.capacity = capacity;
    const at::Tensor got = block.forward(x).reshape({-1, 64});
    block.capacity = {};
    (got * probe).sum().backward();
    std::vector<at::Tensor> grads;
    for (const auto& p : block.parameters()) grads.push_back(p.grad().clone());
    // The definition: each kept choice's expert output, weighted.
    m->zero_grad();
    const auto [top, chosen] = model::route_top_k(block.gate(flat), 2, /*norm_topk_prob=*/true);
    const at::Tensor keep = model::expert_capacity_keep(top, chosen, 4, capacity);
    ASSERT_GT(keep.logical_not().sum().item<int64_t>(), 0) << "some rows dropped";
    for (int64_t e = 0; e < 4; ++e)
      EXPECT_LE((chosen.eq(e) & keep).sum().item<int64_t>(), 5) << "expert " << e << " over its capacity";
    const at::Tensor& gate_up = block.experts->gate_up_proj;
    const at::Tensor& down = block.experts->down_proj;
    const int64_t width = down.size(2);
    std::vector<at::Tensor> rows;
    for (int64_t t = 0; t < flat.size(0); ++t) {
      at::Tensor row = at::zeros({64});
      for (int64_t j = 0; j < 2; ++j) {
        if (!keep[t][j].item<bool>()) continue;
        const int64_t e = chosen[t][j].item<int64_t>();
        const at::Tensor h = at::silu(at::matmul(gate_up[e].narrow(0, 0, width), flat[t])) *
                             at::matmul(gate_up[e].narrow(0, width, width), flat[t]);
        row = row + top[t][j] * at::matmul(down[e], h);
      }
      rows.push_back(row);
    }
    const at::Tensor want = at::stack(rows);
    EXPECT_LT((got - want).abs().max().item<double>(), 1e-5);
    (want * probe).sum().backward();
    size_t i = 0;
    for (const auto& p : block.parameters()) {
      const double scale = 1.0 + p.grad().abs().max().item<double>();  // sums over 18 tokens in another order
      EXPECT_LT((grads[i] - p.grad()).abs().max().item<double>() / scale, 1e-5) << "parameter " << i;
      ++i;
    }
  }
}

// --moe_token_drop_policy position: each expert keeps its earliest tokens.
TEST(Moe, PositionPolicyKeepsEachExpertsEarliestTokens) {
  // 6 tokens, top 1 of 2 experts, capacity ceil(6 x 1 / 2 x 0.5) = 2: expert 0 chosen by tokens 0, 2, 3, 5.
  const at::Tensor chosen = at::tensor({0, 1, 0, 0, 1, 0}, at::kLong).view({6, 1});
  const at::Tensor weights = at::tensor({0.1, 0.9, 0.2, 0.9, 0.8, 0.95}).view({6, 1});
  const at::Tensor by_position = model::expert_capacity_keep(weights, chosen, 2, {0.5, true}).view({-1}).to(at::kLong);
  EXPECT_TRUE(at::equal(by_position, at::tensor({1, 1, 1, 0, 1, 0}, at::kLong)));
  const at::Tensor by_probs = model::expert_capacity_keep(weights, chosen, 2, {0.5, false}).view({-1}).to(at::kLong);
  EXPECT_TRUE(at::equal(by_probs, at::tensor({0, 1, 0, 1, 1, 1}, at::kLong)));
  // A capacity no expert can exceed keeps everything.
  EXPECT_TRUE(model::expert_capacity_keep(weights, chosen, 2, {2.0, false}).all().item<bool>());
}

// Megatron-Core (megatron.core, the reference installed by scripts/setup.sh --tests) on the same router logits:
// its switch_load_balancing_loss_func per layer and apply_router_token_dropping's routing map.
TEST(Moe, MegatronRouterArithmeticEqualsMegatronCore) {
  const std::string python = test::reference_python();
  if (std::system((python + " -c 'import megatron.core' >/dev/null 2>&1").c_str()) != 0)
    SWIFT_REFERENCE_MISSING(python << " cannot import megatron.core; run scripts/setup.sh --tests");
  test::TempDir tmp;
  at::manual_seed(11);
  const int64_t tokens = 24, experts = 8, k = 2;
  std::vector<at::Tensor> logits = {at::randn({tokens, experts}), at::randn({tokens, experts}) * 3.0};
  io::save_safetensors(tmp / "logits.safetensors", {{"layer.0", logits[0]}, {"layer.1", logits[1]}});
  // One run of the reference (importing megatron.core takes seconds) for both capacity factors.
  const std::string script = std::string(SWIFT_SOURCE_DIR) + "/tests/parity/megatron_router_reference.py";
  const std::string command = python + " " + script + " " + (tmp / "logits.safetensors").string() + " 2 0.5,1.25 probs " +
                              (tmp / "out.json").string() + " 2>/dev/null";
  const int status = std::system(command.c_str());
  if (WEXITSTATUS(status) == 77) SWIFT_REFERENCE_MISSING("megatron_router_reference.py could not import its reference");
  ASSERT_EQ(status, 0) << command;
  const auto runs = nlohmann::json::parse(test::read_bytes(tmp / "out.json"));
  for (const double factor : {0.5, 1.25}) {
    SCOPED_TRACE("capacity factor " + std::to_string(factor));
    const auto& reference = runs[factor == 0.5 ? 0 : 1]["layers"];
    double sum = 0;
    for (size_t layer = 0; layer < logits.size(); ++layer) {
      const auto& want = reference[layer];
      const at::Tensor ours = model::megatron_load_balancing_loss({logits[layer]}, k, at::Tensor());
      EXPECT_NEAR(ours[0].item<double>(), want["load_balancing_loss"].get<double>(), 1e-6) << "layer " << layer;
      sum += want["load_balancing_loss"].get<double>();
      const auto [top, chosen] = model::route_top_k(logits[layer], k, /*norm_topk_prob=*/true);
      const at::Tensor keep = model::expert_capacity_keep(top, chosen, experts, {factor, false});
      const at::Tensor chose = at::zeros({tokens, experts}, at::kInt).scatter(1, chosen, 1);
      const at::Tensor kept = at::zeros({tokens, experts}, at::kInt).scatter(1, chosen, keep.to(at::kInt));
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t e = 0; e < experts; ++e) {
          ASSERT_EQ(chose[t][e].item<int>(), want["chosen"][t][e].get<int>()) << "layer " << layer << " token " << t;
          ASSERT_EQ(kept[t][e].item<int>(), want["kept"][t][e].get<int>()) << "layer " << layer << " token " << t << " expert " << e;
        }
    }
    const at::Tensor both = model::megatron_load_balancing_loss(logits, k, at::Tensor());
    EXPECT_NEAR(both[0].item<double>(), sum, 1e-6) << "summed over the layers";
    EXPECT_EQ(both[1].item<double>(), 2.0);
  }
  // Pads (mask 0) are left out: the masked loss is the loss of the real rows alone.
  const at::Tensor mask = (at::arange(tokens) < 17).to(at::kLong).view({1, tokens});
  const double masked = model::megatron_load_balancing_loss({logits[0]}, k, mask)[0].item<double>();
  const double real = model::megatron_load_balancing_loss({logits[0].narrow(0, 0, 17)}, k, at::Tensor())[0].item<double>();
  EXPECT_NEAR(masked, real, 1e-6);
}

// --moe_aux_loss_coeff c adds c x (Megatron's loss summed over the layers) x the micro-batch's real tokens to its loss
// sum (the step then divides by its label tokens, as Megatron-Core's per-token loss scales it); the LM loss logged
// is unchanged, load_balancing_loss is the mean per layer ((sum over the layers, layers): the stages of a pipeline add
// theirs), expert_drop_rate the share the capacity dropped, expert_tokens/e the rows each expert was routed.
TEST(Moe, MegatronAuxLossWeighsAMicroBatchByItsTokens) {
  auto m = test::random_model(test::tiny_config("qwen3_moe"), 8);
  m->train();
  const auto examples = test::half_prompt_examples({9, 5, 12});
  std::vector<const data::Example*> items;
  for (const auto& e : examples) items.push_back(&e);
  train::CausalLmObjectiveOptions plain_options;
  plain_options.num_experts = 4;
  train::CausalLmObjectiveOptions options = plain_options;
  options.moe_aux_loss_coeff = 0.1;
  options.expert_capacity_factor = 0.75;
  auto plain = train::causal_lm_objective(plain_options);
  auto objective = train::causal_lm_objective(options);
  EXPECT_EQ(objective->metric_names(),
            (std::vector<std::string>{"loss", "token_acc", "load_balancing_loss", "expert_load_max", "expert_drop_rate",
                                      "expert_tokens/0", "expert_tokens/1", "expert_tokens/2", "expert_tokens/3"}));
  const data::Batch batch = objective->collate(items, /*pad_id=*/0);
  const double tokens = batch.attention_mask.sum().item<double>();
  ASSERT_LT(tokens, static_cast<double>(batch.input_ids.numel())) << "a padded batch";
  model::set_expert_capacity(m, {0.75, false});
  const train::MicroBatchResult with_aux = objective->compute(m, batch);
  const train::MicroBatchResult without = plain->compute(m, batch);
  std::vector<at::Tensor> routers;
  model::record_router_logits(m, &routers);
  m->forward_hidden(train::forward_args(batch, m->device()));
  model::record_router_logits(m, nullptr);
  model::set_expert_capacity(m, {});
  const at::Tensor aux = model::megatron_load_balancing_loss(routers, 2, batch.attention_mask);
  EXPECT_NEAR((with_aux.loss - without.loss).item<double>(), 0.1 * tokens * aux[0].item<double>(), 1e-4);
  EXPECT_TRUE(at::equal(with_aux.metrics[0], without.metrics[0])) << "the logged loss is the LM loss";
  EXPECT_TRUE(at::allclose(with_aux.metrics[2], aux.to(at::kDouble), 1e-6, 1e-6)) << with_aux.metrics[2] << aux;
  const at::Tensor dropped = model::dropped_choices(routers, 2, true, {0.75, false}, batch.attention_mask);
  EXPECT_GT(dropped[0].item<double>(), 0) << "the capacity dropped rows";
  EXPECT_TRUE(at::allclose(with_aux.metrics[4], dropped));
  // One sparse layer routed each real token to k = 2 experts, before the capacity dropped any.
  const at::Tensor routed = with_aux.metrics.narrow(0, 5, 4);
  EXPECT_DOUBLE_EQ(routed.select(1, 0).sum().item<double>(), 2 * tokens) << routed;
  EXPECT_TRUE(at::equal(routed.select(1, 1), at::full({4}, -1.0, routed.options()))) << "a total, logged per step";
  EXPECT_TRUE(at::equal(without.metrics.narrow(0, 3, 4), routed)) << "the same routing without the aux loss";
  // The aux loss trains the routers.
  with_aux.loss.backward();
  EXPECT_GT(sparse_block(m).gate->weight.grad().abs().sum().item<double>(), 0.0);
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
  // 4 tokens, 4 experts, top 1: token t chooses expert t (balanced) or expert 0 (all on one).
  const at::Tensor balanced = at::arange(4, at::kLong).view({4, 1});
  const at::Tensor one_expert = at::zeros({4, 1}, at::kLong);
  // Returns [sum over the layers, layers counted].
  at::Tensor load = model::expert_load_max({balanced, one_expert}, 4, at::Tensor());
  EXPECT_EQ(load[1].item<double>(), 2);
  EXPECT_DOUBLE_EQ(load[0].item<double>(), 1.0 + 4.0);
  // Top 2 of a batch [1, 4] whose last two tokens are pads: tokens 0 and 1 chose {0, 1} and {1, 2}: expert 1 has 2 of
  // the 4 choices, 2 / 4 x 4 = 2.
  const at::Tensor chosen = at::tensor({0, 1, 1, 2, 3, 2, 3, 1}, at::kLong).view({4, 2});  // pads' would make 3 busiest
  const at::Tensor mask = at::tensor({1.0, 1.0, 0.0, 0.0}).view({1, 4});
  load = model::expert_load_max({chosen}, 4, mask);
  EXPECT_EQ(load[1].item<double>(), 1);
  EXPECT_DOUBLE_EQ(load[0].item<double>(), 2.0);
  load = model::expert_load_max({chosen}, 4, at::zeros({1, 4}));
  EXPECT_EQ(load[1].item<double>(), 0);
}

// The (token, choice) rows each expert was routed, summed over the layers; pads left out.
TEST(Moe, ExpertTokensCountEachExpertsChoices) {
  const at::Tensor balanced = at::arange(4, at::kLong).view({4, 1});
  const at::Tensor one_expert = at::zeros({4, 1}, at::kLong);
  at::Tensor tokens = model::expert_tokens({balanced, one_expert}, 4, at::Tensor());
  EXPECT_TRUE(at::equal(tokens, at::tensor({5.0, 1.0, 1.0, 1.0}, at::kDouble))) << tokens;
  const at::Tensor chosen = at::tensor({0, 1, 1, 2, 3, 2, 3, 1}, at::kLong).view({4, 2});
  const at::Tensor mask = at::tensor({1.0, 1.0, 0.0, 0.0}).view({1, 4});  // the last two tokens are pads
  tokens = model::expert_tokens({chosen}, 4, mask);
  EXPECT_TRUE(at::equal(tokens, at::tensor({1.0, 2.0, 1.0, 0.0}, at::kDouble))) << tokens;
  EXPECT_TRUE(at::equal(model::expert_tokens({}, 3, mask), at::zeros({3}, at::kDouble))) << "no sparse layer";
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

// DeepSeek-V3's routing: the correction bias moves the choice but not the weights (the chosen experts' sigmoid
// scores, renormalised and scaled); only the best groups' experts are chosen.
TEST(Moe, CorrectionBiasChoosesAndScoresWeigh) {
  model::RoutingRule rule;
  rule.top_k = 2;
  rule.norm_topk_prob = true;
  rule.scoring = "sigmoid";
  rule.group_scoring = "top2_sum";
  rule.num_groups = 2;
  rule.topk_groups = 1;
  rule.scaling = 2.5;
  // Experts 0-1 form group 0, 2-3 group 1. Without the bias group 0 is better and holds the top two.
  const at::Tensor logits = at::tensor({2.0, 1.0, 0.5, 0.0}).view({1, 4});
  auto [weights, experts] = model::route_experts(logits, rule);
  EXPECT_TRUE(std::get<0>(experts.sort(-1)).view({-1}).equal(at::tensor({0, 1}, at::kLong)));
  // A bias that favours group 1 moves the choice there; the weights stay its sigmoid scores, normalised, x 2.5.
  std::tie(weights, experts) = model::route_experts(logits, rule, at::tensor({0.0, 0.0, 1.0, 1.0}));
  const auto [sorted, order] = experts.sort(-1);
  EXPECT_TRUE(sorted.view({-1}).equal(at::tensor({2, 3}, at::kLong)));
  const at::Tensor s = at::sigmoid(at::tensor({0.5F, 0.0F}));
  EXPECT_TRUE(weights.gather(1, order).view({-1}).allclose(s / s.sum() * 2.5));
}
