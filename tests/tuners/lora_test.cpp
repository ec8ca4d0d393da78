// LoRA invariants on tiny random models: B = 0 is the base model (exact), save -> load is bit-exact, merged
// equals unmerged (fp32, 1e-5), frozen base parameters get no gradients, target selection, rsLoRA scaling,
// adapter_config.json round trip; the same for DoRA plus its layer formula (eval and dropout) and its gradients
// against a hand-written reference. Parity with PEFT itself is in lora_peft_test.cpp.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "swift/core/error.h"
#include "swift/io/hf_config.h"
#include "swift/io/safetensors.h"
#include "swift/tuners/lora.h"
#include "swift/tuners/lora_experts.h"
#include "swift/tuners/lora_linear.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace swift;
using tuners::LoraConfig;

namespace {

at::Tensor logits(model::CausalLM& m) {
  torch::NoGradGuard no_grad;
  model::ForwardArgs args;
  args.input_ids = at::arange(0, 24, at::kLong).mul(7).remainder(128).view({2, 12});
  return m->forward(args);
}

LoraConfig random_lora(std::vector<std::string> targets = {"all-linear"}) {
  LoraConfig c;
  c.r = 4;
  c.lora_alpha = 16;
  c.target_modules = std::move(targets);
  c.init_weights = tuners::LoraInit::kRandom;
  return c;
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.message();
  }
  return "(no error)";
}

}  // namespace

TEST(Lora, ZeroBIsExactlyTheBaseModel) {
  for (const std::string family : {"llama", "qwen3"}) {
    auto m = test::random_model(test::tiny_config(family), 1);
    const auto before = logits(m);
    LoraConfig c;  // default init: B = 0
    const auto wrapped = tuners::apply_lora(m, c, 7);
    EXPECT_EQ(wrapped.size(), 14u) << family;  // 7 Linear layers x 2 layers, lm_head excluded
    EXPECT_TRUE(at::equal(before, logits(m))) << family;
  }
}

TEST(Lora, NamesFreezingAndGradients) {
  auto m = test::random_model(test::tiny_config("llama"), 2);
  auto c = random_lora({"q_proj", "v_proj"});
  c.modules_to_save = {"lm_head"};
  tuners::apply_lora(m, c, 3);
  std::set<std::string> trainable;
  for (const auto& [name, t] : tuners::trainable_parameters(m)) trainable.insert(name);
  std::set<std::string> expected = {"lm_head.weight"};
  for (const std::string layer : {"0", "1"})
    for (const std::string proj : {"q_proj", "v_proj"})
      for (const std::string ab : {"lora_A", "lora_B"})
        expected.insert("model.layers." + layer + ".self_attn." + proj + "." + ab + ".weight");
  EXPECT_EQ(trainable, expected);

  auto params = m->named_parameters();
  EXPECT_EQ(params["model.layers.0.self_attn.q_proj.lora_A.weight"].sizes(), (std::vector<int64_t>{4, 64}));
  EXPECT_EQ(params["model.layers.0.self_attn.q_proj.lora_B.weight"].sizes(), (std::vector<int64_t>{64, 4}));

  m->train();  // dropout active: still every LoRA parameter gets a gradient
  model::ForwardArgs args;
  args.input_ids = at::arange(0, 16, at::kLong).view({2, 8});
  m->forward(args).pow(2).mean().backward();
  for (const auto& item : params) {
    if (trainable.count(item.key())) {
      ASSERT_TRUE(item.value().grad().defined()) << item.key();
      EXPECT_GT(item.value().grad().abs().sum().item<double>(), 0) << item.key();
    } else {
      EXPECT_FALSE(item.value().requires_grad()) << item.key();
      EXPECT_FALSE(item.value().grad().defined()) << item.key();
    }
  }
}

TEST(Lora, DropoutOnlyInTrainingMode) {
  auto m = test::random_model(test::tiny_config("llama"), 4);
  auto c = random_lora();
  c.lora_dropout = 0.5;
  tuners::apply_lora(m, c, 5);
  m->eval();
  EXPECT_TRUE(at::equal(logits(m), logits(m)));
  m->train();
  EXPECT_FALSE(at::equal(logits(m), logits(m)));
}

TEST(Lora, TargetSelection) {
  auto m = test::random_model(test::tiny_config("llama"), 5);
  const auto names = tuners::apply_lora(m, random_lora({"q_proj", "model.layers.1.mlp.down_proj"}), 1);
  EXPECT_EQ(names, (std::vector<std::string>{"model.layers.0.self_attn.q_proj", "model.layers.1.self_attn.q_proj",
                                             "model.layers.1.mlp.down_proj"}));
  EXPECT_EQ(tuners::lora_modules(m), names);
  EXPECT_NE(error_of([&] { tuners::apply_lora(m, random_lora(), 1); }).find("already carries LoRA"), std::string::npos);

  auto m2 = test::random_model(test::tiny_config("llama"), 5);
  auto c = random_lora();
  c.target_regex = R"(model\.layers\.0\.(self_attn|mlp)\.(k|up)_proj)";
  EXPECT_EQ(tuners::apply_lora(m2, c, 1),
            (std::vector<std::string>{"model.layers.0.self_attn.k_proj", "model.layers.0.mlp.up_proj"}));

  auto m3 = test::random_model(test::tiny_config("llama"), 5);
  const auto all = tuners::apply_lora(m3, random_lora({"all-linear"}), 1);
  EXPECT_EQ(all.size(), 14u);
  for (const auto& n : all) EXPECT_NE(n, "lm_head");

  auto m4 = test::random_model(test::tiny_config("llama"), 5);
  auto msg = error_of([&] { tuners::apply_lora(m4, random_lora({"q_proj", "qproj"}), 1); });
  EXPECT_NE(msg.find("'qproj'"), std::string::npos) << msg;
  try {
    tuners::apply_lora(m4, random_lora({"qproj"}), 1);
  } catch (const UsageError& e) {
    EXPECT_NE(e.hint().find("gate_proj"), std::string::npos) << e.hint();  // lists what exists
  }
  EXPECT_TRUE(tuners::lora_modules(m4).empty());  // a failed apply changes nothing
  msg = error_of([&] { tuners::apply_lora(m4, random_lora({"embed_tokens"}), 1); });
  EXPECT_NE(msg.find("not a Linear"), std::string::npos) << msg;
  auto bad_regex = random_lora();
  bad_regex.target_regex = "q_proj";  // must match the whole name
  EXPECT_NE(error_of([&] { tuners::apply_lora(m4, bad_regex, 1); }).find("matches no Linear"), std::string::npos);
  auto tied = test::tiny_config("llama");
  tied["tie_word_embeddings"] = true;
  auto m5 = test::random_model(tied, 5);
  auto save_head = random_lora();
  save_head.modules_to_save = {"lm_head"};
  EXPECT_NE(error_of([&] { tuners::apply_lora(m5, save_head, 1); }).find("'lm_head' matches no module"),
            std::string::npos);
}

TEST(Lora, ScalingAndRsLora) {
  LoraConfig c = random_lora({"o_proj"});
  c.r = 16;
  c.lora_alpha = 32;
  EXPECT_DOUBLE_EQ(c.scaling(), 2.0);
  c.use_rslora = true;
  EXPECT_DOUBLE_EQ(c.scaling(), 8.0);  // 32 / sqrt(16)

  // The layer computes base + scaling * x A^T B^T with that scaling.
  auto m = test::random_model(test::tiny_config("llama"), 6);
  tuners::apply_lora(m, c, 2);
  auto& layer = *m->model->layers[0]->as<model::DecoderLayerImpl>()->self_attn->o_proj;
  auto lora = std::dynamic_pointer_cast<tuners::LoraLinear>(layer.adapter);
  ASSERT_TRUE(lora);
  EXPECT_DOUBLE_EQ(lora->scaling, 8.0);
  torch::NoGradGuard no_grad;
  auto x = at::randn({3, 64});
  auto expected = at::linear(x, layer.weight) + 8.0 * x.matmul(lora->lora_A->weight.t()).matmul(lora->lora_B->weight.t());
  EXPECT_TRUE(at::allclose(layer.forward(x), expected, 1e-5, 1e-5));
}

TEST(Lora, SaveLoadIsBitExact) {
  test::TempDir tmp("swift-lora");
  auto m = test::random_model(test::tiny_config("qwen2"), 7);
  auto c = random_lora({"all-linear"});
  c.modules_to_save = {"embed_tokens", "lm_head"};
  c.base_model_name_or_path = "tiny/qwen2";
  tuners::apply_lora(m, c, 11);
  {
    torch::NoGradGuard no_grad;  // training changed the saved modules
    m->lm_head->weight.add_(0.01);
    m->model->embed_tokens->weight.mul_(1.1);
  }
  const auto want = logits(m);
  tuners::save_adapter(m, c, tmp / "adapter");

  auto file = io::SafetensorsFile::open(tmp / "adapter" / "adapter_model.safetensors");
  EXPECT_TRUE(file->contains("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
  EXPECT_TRUE(file->contains("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"));
  EXPECT_TRUE(file->contains("base_model.model.lm_head.weight"));
  EXPECT_TRUE(file->contains("base_model.model.model.embed_tokens.weight"));
  EXPECT_EQ(file->entries().size(), 14u * 2 + 2);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  const auto j = io::read_json_file(tmp / "adapter" / "adapter_config.json");
  EXPECT_EQ(j.at("peft_type"), "LORA");
  EXPECT_EQ(j.at("task_type"), "CAUSAL_LM");
  EXPECT_EQ(j.at("r"), 4);
  EXPECT_EQ(j.at("lora_alpha"), 16);
  EXPECT_TRUE(j.at("lora_alpha").is_number_integer());
  EXPECT_EQ(j.at("fan_in_fan_out"), false);
  EXPECT_EQ(j.at("base_model_name_or_path"), "tiny/qwen2");
  EXPECT_EQ(j.at("target_modules"), nlohmann::json({"down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj",
                                                    "v_proj"}));
  EXPECT_EQ(j.at("modules_to_save"), nlohmann::json({"embed_tokens", "lm_head"}));

  auto fresh = test::random_model(test::tiny_config("qwen2"), 7);
  const auto loaded = tuners::load_adapter(fresh, tmp / "adapter");
  EXPECT_TRUE(at::equal(want, logits(fresh)));
  EXPECT_EQ(loaded.r, 4);
  EXPECT_EQ(loaded.modules_to_save, c.modules_to_save);
  auto a = m->named_parameters(), b = fresh->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& item : a) {
    EXPECT_TRUE(at::equal(item.value(), b[item.key()])) << item.key();
    EXPECT_EQ(item.value().requires_grad(), b[item.key()].requires_grad()) << item.key();
  }
}

TEST(Lora, LoadReportsMissingAndUnexpectedKeys) {
  test::TempDir tmp("swift-lora");
  auto m = test::random_model(test::tiny_config("llama"), 8);
  auto c = random_lora({"q_proj"});
  tuners::apply_lora(m, c, 1);
  tuners::save_adapter(m, c, tmp / "adapter");
  // Claim more targets than the file holds, and add a stray tensor.
  auto j = io::read_json_file(tmp / "adapter" / "adapter_config.json");
  j["target_modules"] = {"q_proj", "k_proj"};
  io::write_json_file(tmp / "adapter" / "adapter_config.json", j);
  auto tensors = tuners::adapter_state_dict(m, c);
  tensors.emplace_back("base_model.model.stray.weight", at::zeros({2}));
  io::save_safetensors(tmp / "adapter" / "adapter_model.safetensors", tensors);
  auto fresh = test::random_model(test::tiny_config("llama"), 8);
  try {
    tuners::load_adapter(fresh, tmp / "adapter");
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(e.message().find("missing (4): base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight"),
              std::string::npos) << e.message();
    EXPECT_NE(e.message().find("unexpected (1): base_model.model.stray.weight"), std::string::npos) << e.message();
  }
  j["lora_bias"] = true;
  j["layers_to_transform"] = {0};
  io::write_json_file(tmp / "adapter" / "adapter_config.json", j);
  auto fresh2 = test::random_model(test::tiny_config("llama"), 8);
  const auto msg = error_of([&] { tuners::load_adapter(fresh2, tmp / "adapter"); });
  EXPECT_NE(msg.find("lora_bias = true"), std::string::npos) << msg;
  EXPECT_NE(msg.find("layers_to_transform"), std::string::npos) << msg;
  j["rank_pattern"] = {{"q_proj", 8.5}};
  io::write_json_file(tmp / "adapter" / "adapter_config.json", j);
  EXPECT_NE(error_of([&] { tuners::load_adapter(fresh2, tmp / "adapter"); }).find("rank_pattern['q_proj'] must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] { tuners::load_adapter(fresh2, tmp / "nowhere"); }).find("no adapter_config.json"),
            std::string::npos);
}

TEST(Lora, MergedEqualsUnmerged) {
  auto m = test::random_model(test::tiny_config("mistral"), 9);
  auto c = random_lora();
  c.use_rslora = true;
  tuners::apply_lora(m, c, 13);
  {
    // A trained adapter's size (delta ~10% of W): with B ~ U(+-0.5) and scaling 8 the branch would dwarf W and
    // fp32 rounding of the merged weight alone exceeds 1e-5.
    torch::NoGradGuard no_grad;
    for (auto& [name, p] : tuners::trainable_parameters(m))
      if (name.find("lora_B") != std::string::npos) p.mul_(0.05);
  }
  const auto unmerged = logits(m);
  EXPECT_EQ(tuners::merge_lora(m), 14);
  EXPECT_TRUE(tuners::lora_modules(m).empty());
  for (const auto& item : m->named_parameters()) EXPECT_EQ(item.key().find("lora_"), std::string::npos) << item.key();
  const double diff = (logits(m) - unmerged).abs().max().item<double>();
  std::printf("  merged vs unmerged: max abs diff %.2e, max |logit| %.2f\n", diff, unmerged.abs().max().item<double>());
  EXPECT_LE(diff, 1e-5);
  auto base = test::random_model(test::tiny_config("mistral"), 9);
  EXPECT_GT((unmerged - logits(base)).abs().max().item<double>(), 1e-2);  // the adapter mattered
}

TEST(Lora, LoraDtypeAndInitKinds) {
  auto m = test::random_model(test::tiny_config("llama"), 10);
  LoraConfig c;
  c.init_weights = tuners::LoraInit::kGaussian;
  c.lora_dtype = at::kBFloat16;
  c.target_modules = {"gate_proj"};
  tuners::apply_lora(m, c, 1);
  auto params = m->named_parameters();
  auto a = params["model.layers.0.mlp.gate_proj.lora_A.weight"];
  EXPECT_EQ(a.scalar_type(), at::kBFloat16);
  EXPECT_NEAR(a.to(at::kFloat).std().item<double>(), 1.0 / 8, 0.02);  // N(0, 1/r)
  EXPECT_EQ(params["model.layers.0.mlp.gate_proj.lora_B.weight"].abs().sum().item<double>(), 0);
  EXPECT_EQ(logits(m).scalar_type(), at::kFloat);

  // Default init: A ~ U(-1/sqrt(in), 1/sqrt(in)), the same for the same seed.
  auto m1 = test::random_model(test::tiny_config("llama"), 10), m2 = test::random_model(test::tiny_config("llama"), 10);
  tuners::apply_lora(m1, LoraConfig{}, 5);
  tuners::apply_lora(m2, LoraConfig{}, 5);
  auto a1 = m1->named_parameters()["model.layers.1.mlp.down_proj.lora_A.weight"];  // in = 96
  EXPECT_LE(a1.abs().max().item<double>(), 1.0 / std::sqrt(96.0));
  EXPECT_GT(a1.abs().max().item<double>(), 0.9 / std::sqrt(96.0));
  EXPECT_TRUE(at::equal(a1, m2->named_parameters()["model.layers.1.mlp.down_proj.lora_A.weight"]));
}

TEST(LoraConfig, AdapterConfigRoundTripAndValidation) {
  LoraConfig c;
  c.r = 16;
  c.lora_alpha = 0.5;
  c.target_regex = R"(.*\.q_proj)";
  c.use_rslora = true;
  c.init_weights = tuners::LoraInit::kGaussian;
  const auto j = tuners::to_adapter_config_json(c);
  EXPECT_EQ(j.at("target_modules"), R"(.*\.q_proj)");
  EXPECT_EQ(j.at("init_lora_weights"), "gaussian");
  EXPECT_EQ(j.at("modules_to_save"), nullptr);
  EXPECT_EQ(j.at("base_model_name_or_path"), nullptr);
  const auto back = tuners::parse_adapter_config(j, "test");
  EXPECT_EQ(back.r, 16);
  EXPECT_DOUBLE_EQ(back.lora_alpha, 0.5);
  EXPECT_EQ(back.target_regex, c.target_regex);
  EXPECT_TRUE(back.use_rslora);
  EXPECT_EQ(back.init_weights, tuners::LoraInit::kGaussian);
  EXPECT_DOUBLE_EQ(back.lora_dropout, 0.05);

  LoraConfig bad;
  bad.r = 0;
  bad.lora_dropout = 1.5;
  const auto msg = error_of([&] { tuners::validate(bad); });
  EXPECT_NE(msg.find("--lora_rank"), std::string::npos) << msg;  // every problem at once
  EXPECT_NE(msg.find("--lora_dropout"), std::string::npos) << msg;
  auto not_lora = j;
  not_lora["peft_type"] = "IA3";
  EXPECT_NE(error_of([&] { tuners::parse_adapter_config(not_lora, "x.json"); }).find("peft_type is 'IA3'"),
            std::string::npos);
}

// ---- DoRA ----

namespace {

LoraConfig random_dora(std::vector<std::string> targets = {"all-linear"}) {
  auto c = random_lora(std::move(targets));
  c.use_dora = true;
  return c;
}

// A trained adapter's size (delta ~10% of W, magnitudes moved off ||W + sBA|| by up to ~30%), so DoRA differs
// from plain LoRA and fp32 rounding stays far below the tolerances.
void perturb_dora(model::CausalLM& m, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (auto& [name, p] : tuners::trainable_parameters(m)) {
    if (name.find("lora_B") != std::string::npos) p.mul_(0.05);
    if (name.find("lora_magnitude_vector") != std::string::npos)
      p.mul_(1 + 0.3 * at::rand(p.sizes(), gen, at::kFloat).sub(0.5).mul(2).to(p.options()));
  }
}

// q_proj of layer 0 (it has a bias in qwen2).
model::LinearImpl& q_proj(model::CausalLM& m) {
  return *m->model->layers[0]->as<model::DecoderLayerImpl>()->self_attn->q_proj;
}

}  // namespace

TEST(Dora, StartsAsTheBaseModelAndAsPlainLora) {
  for (const std::string family : {"llama", "qwen2"}) {
    SCOPED_TRACE(family);
    auto m = test::random_model(test::tiny_config(family), 1);
    const auto before = logits(m);
    LoraConfig c;  // default init: B = 0, magnitude = ||W||, so the scale is exactly 1
    c.use_dora = true;
    tuners::apply_lora(m, c, 7);
    EXPECT_TRUE(at::equal(before, logits(m)));

    // Non-zero B: the magnitude starts at ||W + sBA|| per row, so DoRA starts equal to plain LoRA.
    auto dora = test::random_model(test::tiny_config(family), 1);
    auto lora = test::random_model(test::tiny_config(family), 1);
    tuners::apply_lora(dora, random_dora(), 3);
    tuners::apply_lora(lora, random_lora(), 3);
    auto& layer = q_proj(dora);
    auto adapter = std::dynamic_pointer_cast<tuners::LoraLinear>(layer.adapter);
    ASSERT_TRUE(adapter && adapter->use_dora());
    const auto w = layer.weight + adapter->scaling * adapter->lora_B->weight.matmul(adapter->lora_A->weight);
    EXPECT_TRUE(at::allclose(adapter->magnitude, at::linalg_vector_norm(w, 2, {1}), 1e-6, 1e-6));
    EXPECT_EQ(adapter->magnitude.sizes(), (std::vector<int64_t>{layer.weight.size(0)}));
    const double diff = (logits(dora) - logits(lora)).abs().max().item<double>();
    EXPECT_LE(diff, 1e-5);
    EXPECT_GT((logits(lora) - before).abs().max().item<double>(), 1e-2);  // and that is not the base model
  }
}

TEST(Dora, TrainableParametersAndGradients) {
  auto m = test::random_model(test::tiny_config("qwen2"), 2);
  auto c = random_dora({"q_proj", "down_proj"});
  c.modules_to_save = {"lm_head"};
  tuners::apply_lora(m, c, 3);
  perturb_dora(m, 4);
  std::set<std::string> trainable;
  for (const auto& [name, t] : tuners::trainable_parameters(m)) trainable.insert(name);
  std::set<std::string> expected = {"lm_head.weight"};
  for (const std::string layer : {"0", "1"})
    for (const std::string mod : {"self_attn.q_proj", "mlp.down_proj"})
      for (const std::string p : {"lora_A.weight", "lora_B.weight", "lora_magnitude_vector"})
        expected.insert("model.layers." + layer + "." + mod + "." + p);
  EXPECT_EQ(trainable, expected);

  m->train();
  model::ForwardArgs args;
  args.input_ids = at::arange(0, 16, at::kLong).view({2, 8});
  m->forward(args).pow(2).mean().backward();
  for (const auto& item : m->named_parameters()) {
    if (trainable.count(item.key())) {
      ASSERT_TRUE(item.value().grad().defined()) << item.key();
      EXPECT_GT(item.value().grad().abs().sum().item<double>(), 0) << item.key();
    } else {
      EXPECT_FALSE(item.value().requires_grad()) << item.key();
      EXPECT_FALSE(item.value().grad().defined()) << item.key();
    }
  }
}

// The layer against the formula written out by hand (PEFT's DoRA): y = x W^T + b + (m/n - 1) x' W^T +
// (m/n) s B A x' with n = ||W + s B A|| per row treated as a constant, x' = x in eval and dropout(x) in training
// (the base term y keeps the full x). Gradients of A, B and m too, where the detached norm matters.
TEST(Dora, LayerFormulaDropoutAndGradients) {
  auto m = test::random_model(test::tiny_config("qwen2"), 3);
  auto c = random_dora({"q_proj"});
  c.lora_dropout = 0.3;
  tuners::apply_lora(m, c, 5);
  perturb_dora(m, 6);
  auto& layer = q_proj(m);
  ASSERT_TRUE(layer.bias.defined());
  auto adapter = std::dynamic_pointer_cast<tuners::LoraLinear>(layer.adapter);
  const double s = adapter->scaling;
  auto x = at::randn({2, 5, 64});

  auto reference = [&](const at::Tensor& a, const at::Tensor& b, const at::Tensor& mag, const at::Tensor& xd) {
    const auto norm = at::linalg_vector_norm(layer.weight + s * b.matmul(a), 2, {1}).detach();
    const auto scale = mag / norm;
    return at::linear(x, layer.weight, layer.bias) + (scale - 1) * at::linear(xd, layer.weight) +
           scale * at::linear(at::linear(xd, a), b) * s;
  };
  for (const bool training : {false, true}) {
    SCOPED_TRACE(training ? "train" : "eval");
    training ? m->train() : m->eval();
    at::manual_seed(99);  // the layer's one dropout call draws the same mask as the one below
    const auto got = layer.forward(x);
    at::manual_seed(99);
    const auto xd = training ? at::dropout(x, 0.3, true) : x;
    EXPECT_EQ(at::equal(xd, x), !training);
    auto a = adapter->lora_A->weight.detach().clone().requires_grad_(true);
    auto b = adapter->lora_B->weight.detach().clone().requires_grad_(true);
    auto mag = adapter->magnitude.detach().clone().requires_grad_(true);
    const auto want = reference(a, b, mag, xd);
    const double diff = (got - want).abs().max().item<double>();
    std::printf("  DoRA layer (%s) vs formula: max abs diff %.2e\n", training ? "train, dropout 0.3" : "eval", diff);
    EXPECT_LE(diff, 1e-5);

    const auto w = at::randn(got.sizes());  // d loss / d y
    for (auto p : {adapter->lora_A->weight, adapter->lora_B->weight, adapter->magnitude})
      p.mutable_grad() = at::Tensor();
    (got * w).sum().backward();
    (want * w).sum().backward();
    EXPECT_TRUE(at::allclose(adapter->lora_A->weight.grad(), a.grad(), 1e-4, 1e-5));
    EXPECT_TRUE(at::allclose(adapter->lora_B->weight.grad(), b.grad(), 1e-4, 1e-5));
    EXPECT_TRUE(at::allclose(adapter->magnitude.grad(), mag.grad(), 1e-4, 1e-5));
  }
}

TEST(Dora, SaveLoadIsBitExact) {
  test::TempDir tmp("swift-dora");
  auto m = test::random_model(test::tiny_config("qwen2"), 7);
  auto c = random_dora();
  c.modules_to_save = {"lm_head"};
  tuners::apply_lora(m, c, 11);
  perturb_dora(m, 12);
  const auto want = logits(m);
  tuners::save_adapter(m, c, tmp / "adapter");

  auto file = io::SafetensorsFile::open(tmp / "adapter" / "adapter_model.safetensors");
  EXPECT_TRUE(file->contains("base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector"));  // PEFT's key
  EXPECT_EQ(file->get("base_model.model.model.layers.1.mlp.down_proj.lora_magnitude_vector").sizes(),
            (std::vector<int64_t>{64}));
  EXPECT_EQ(file->entries().size(), 14u * 3 + 1);
  const auto j = io::read_json_file(tmp / "adapter" / "adapter_config.json");
  EXPECT_EQ(j.at("use_dora"), true);
  EXPECT_TRUE(tuners::parse_adapter_config(j, "test").use_dora);

  auto fresh = test::random_model(test::tiny_config("qwen2"), 7);
  EXPECT_TRUE(tuners::load_adapter(fresh, tmp / "adapter").use_dora);
  EXPECT_TRUE(at::equal(want, logits(fresh)));
  auto a = m->named_parameters(), b = fresh->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& item : a) {
    EXPECT_TRUE(at::equal(item.value(), b[item.key()])) << item.key();
    EXPECT_EQ(item.value().requires_grad(), b[item.key()].requires_grad()) << item.key();
  }

  // A DoRA file read as plain LoRA (use_dora dropped from the config) names the magnitudes it cannot place.
  auto plain = j;
  plain["use_dora"] = false;
  io::write_json_file(tmp / "adapter" / "adapter_config.json", plain);
  auto fresh2 = test::random_model(test::tiny_config("qwen2"), 7);
  const auto msg = error_of([&] { tuners::load_adapter(fresh2, tmp / "adapter"); });
  EXPECT_NE(msg.find("unexpected (14): base_model.model.model.layers.0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lora_magnitude_vector"), std::string::npos) << msg;
}

TEST(Dora, MergedEqualsUnmerged) {
  {
    // fp64, layer by layer: the merged weight is the DoRA layer's function up to rounding (~1e-15), biases included.
    auto m = test::random_model(test::tiny_config("qwen2"), 9, at::kDouble);
    tuners::apply_lora(m, random_dora(), 13);
    perturb_dora(m, 14);
    torch::NoGradGuard no_grad;
    std::vector<std::tuple<model::LinearImpl*, at::Tensor, at::Tensor>> cases;  // layer, x, unmerged output
    for (const auto& item : m->named_modules("", false)) {
      auto* linear = item.value()->as<model::LinearImpl>();
      if (!linear || !linear->adapter) continue;
      auto x = at::randn({4, linear->weight.size(1)}, at::kDouble);
      cases.emplace_back(linear, x, linear->forward(x));
    }
    ASSERT_EQ(tuners::merge_lora(m), 14);
    double worst = 0;
    for (const auto& [linear, x, want] : cases)
      worst = std::max(worst, (linear->forward(x) - want).abs().max().item<double>());
    std::printf("  DoRA merged vs unmerged layers (fp64): max abs diff %.2e\n", worst);
    EXPECT_LE(worst, 1e-12);
  }
  auto m = test::random_model(test::tiny_config("qwen2"), 9);  // q/k/v biases: merging must leave them alone
  auto c = random_dora();
  c.use_rslora = true;
  tuners::apply_lora(m, c, 13);
  perturb_dora(m, 14);
  const auto unmerged = logits(m);
  EXPECT_EQ(tuners::merge_lora(m), 14);
  EXPECT_TRUE(tuners::lora_modules(m).empty());
  for (const auto& item : m->named_parameters()) EXPECT_EQ(item.key().find("lora_"), std::string::npos) << item.key();
  const double diff = (logits(m) - unmerged).abs().max().item<double>();
  std::printf("  DoRA merged vs unmerged (fp32 logits): max abs diff %.2e, max |logit| %.2f\n", diff,
              unmerged.abs().max().item<double>());
  // fp32 rounding through two layers; the magnitudes scale rows by up to 1.3 where plain LoRA's test sees 6e-6.
  EXPECT_LE(diff, 3e-5);
  auto base = test::random_model(test::tiny_config("qwen2"), 9);
  EXPECT_GT((unmerged - logits(base)).abs().max().item<double>(), 1e-2);  // the adapter mattered
}

TEST(Dora, Bf16BaseWithFp32Branch) {
  auto m = test::random_model(test::tiny_config("llama"), 10, at::kBFloat16);
  auto c = random_dora({"v_proj"});
  c.lora_dtype = at::kFloat;  // what swift sft does
  tuners::apply_lora(m, c, 1);
  auto params = m->named_parameters();
  const auto mag = params["model.layers.0.self_attn.v_proj.lora_magnitude_vector"];
  EXPECT_EQ(mag.scalar_type(), at::kFloat);
  EXPECT_TRUE(mag.requires_grad());
  torch::NoGradGuard no_grad;
  auto& v = *m->model->layers[0]->as<model::DecoderLayerImpl>()->self_attn->v_proj;
  const auto y = v.forward(at::randn({3, 64}).to(at::kBFloat16));
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);  // cast back to the base output's dtype
  EXPECT_TRUE(at::isfinite(logits(m)).all().item<bool>());
}

// LoRA on the experts' stacked weights (--target_parameters, PEFT's ParamWrapper; parity with PEFT itself in
// lora_peft_test.cpp): PEFT's names (the earlier weight nested as base_layer), B = 0 starts at the base model, the
// adapter off is the base model, merged equals unmerged, and what it cannot take is refused.
TEST(ExpertLora, NamesDisableMergeAndRefusals) {
  auto m = test::random_model(test::tiny_config("qwen3_moe"), 9);  // layer 0 dense, layer 1 sparse
  const auto base = logits(m);
  LoraConfig c;
  c.r = 2;
  c.lora_alpha = 4;
  c.lora_dropout = 0;
  c.target_modules = {"q_proj"};
  c.target_parameters = {"mlp.experts.gate_up_proj", "experts.down_proj"};
  tuners::apply_lora(m, c, 1);
  std::set<std::string> names;
  for (auto& [name, p] : tuners::trainable_parameters(m)) names.insert(name);
  EXPECT_TRUE(names.count("model.layers.1.mlp.experts.base_layer.lora_A.weight"));  // gate_up_proj's: [r E, C]
  EXPECT_TRUE(names.count("model.layers.1.mlp.experts.lora_B.weight"));             // down_proj's: [C, r E]
  EXPECT_EQ(names.size(), 8u);  // q_proj's A and B on two layers, two weights' A and B on the sparse one
  EXPECT_EQ((tuners::expert_lora_weights(m)),
            (std::vector<std::string>{"model.layers.1.mlp.experts.gate_up_proj", "model.layers.1.mlp.experts.down_proj"}));
  EXPECT_LE((logits(m) - base).abs().max().item<double>(), 0.0);  // B = 0
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, p] : tuners::trainable_parameters(m))
      if (name.find("lora_B") != std::string::npos) p.uniform_(-0.05, 0.05);
  }
  const auto adapted = logits(m);
  EXPECT_GT((adapted - base).abs().max().item<double>(), 1e-3);
  {
    tuners::AdaptersDisabled off(m);
    EXPECT_LE((logits(m) - base).abs().max().item<double>(), 0.0);
  }
  EXPECT_LE((logits(m) - adapted).abs().max().item<double>(), 0.0);
  EXPECT_EQ(tuners::merge_lora(m), 4);  // q_proj twice, the two expert weights
  for (const auto& item : m->named_parameters()) EXPECT_EQ(item.key().find("lora_"), std::string::npos) << item.key();
  EXPECT_LE((logits(m) - adapted).abs().max().item<double>(), 1e-5);

  auto fresh = test::random_model(test::tiny_config("qwen3_moe"), 9);
  c.lora_dropout = 0.05;
  EXPECT_NE(error_of([&] { tuners::apply_lora(fresh, c, 1); }).find("--lora_dropout 0"), std::string::npos);
  c.lora_dropout = 0;
  c.target_parameters = {"experts.up_proj"};
  EXPECT_NE(error_of([&] { tuners::apply_lora(fresh, c, 1); }).find("matches no expert weight"), std::string::npos);
  auto dense = test::random_model(test::tiny_config("qwen3"), 9);
  c.target_parameters = {"experts.down_proj"};
  EXPECT_NE(error_of([&] { tuners::apply_lora(dense, c, 1); }).find("no mixture-of-experts layer"), std::string::npos);
}

// The experts alone (no target_modules, as PEFT allows beside target_parameters): saved with target_modules null,
// loaded back bit for bit.
TEST(ExpertLora, ExpertsAloneSaveAndLoad) {
  auto m = test::random_model(test::tiny_config("mixtral"), 9);
  LoraConfig c;
  c.r = 2;
  c.lora_dropout = 0;
  c.target_modules = {};
  c.target_parameters = {"down_proj"};
  c.init_weights = tuners::LoraInit::kRandom;
  tuners::apply_lora(m, c, 3);
  EXPECT_TRUE(tuners::lora_modules(m).empty());
  test::TempDir dir("expert_lora_alone");
  tuners::save_adapter(m, c, dir.path() / "adapter");
  const auto written = io::read_json_file(dir.path() / "adapter" / "adapter_config.json");
  EXPECT_TRUE(written.at("target_modules").is_null());
  EXPECT_EQ(written.at("target_parameters"), nlohmann::json::array({"down_proj"}));
  auto loaded = test::random_model(test::tiny_config("mixtral"), 9);
  tuners::load_adapter(loaded, dir.path() / "adapter");
  EXPECT_EQ((logits(loaded) - logits(m)).abs().max().item<double>(), 0.0);
}

// ms-swift's all-linear on a mixture-of-experts model, as PEFT 0.20 converts it: the names the experts' projections
// had before transformers v5 fused them leave target_modules and adapt the stacked weights instead (gate_up_proj at
// rank 2r, alpha 2 alpha); the dense layer's MLP of those names is not adapted. Models without such Linear layers
// (every layer sparse, no shared expert: Qwen3-30B-A3B) keep attention alone, and other families are untouched.
TEST(ExpertLora, AllLinearOnMixtureOfExpertsConvertsAsPeft) {
  auto m = test::random_model(test::tiny_config("qwen3_moe"), 9);  // layer 0 dense, layer 1 sparse
  LoraConfig c;
  c.r = 2;
  c.lora_alpha = 4;
  c.use_rslora = true;
  c.lora_dropout = 0;
  const LoraConfig converted = tuners::convert_expert_targets(m, c);
  EXPECT_EQ(converted.target_modules, (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj"}));
  EXPECT_EQ(converted.target_parameters, (std::vector<std::string>{"gate_up_proj", "down_proj"}));
  ASSERT_EQ(converted.rank_pattern.size(), 1u);
  EXPECT_EQ(converted.rank_pattern[0], (std::pair<std::string, int64_t>{".*\\.gate_up_proj", 4}));
  EXPECT_EQ(converted.alpha_pattern[0].second, 8.0);
  EXPECT_EQ(converted.rank_for("model.layers.1.mlp.experts.gate_up_proj"), 4);
  EXPECT_EQ(converted.rank_for("model.layers.1.mlp.experts.down_proj"), 2);
  EXPECT_DOUBLE_EQ(converted.scaling_for("model.layers.1.mlp.experts.gate_up_proj"), 8.0 / 2.0);  // rsLoRA: 2a/sqrt(2r)
  const auto wrapped = tuners::apply_lora(m, converted, 1);
  EXPECT_EQ(wrapped.size(), 8u);  // q/k/v/o on both layers; not layer 0's gate/up/down_proj
  std::map<std::string, std::vector<int64_t>> shapes;
  for (auto& [name, p] : tuners::trainable_parameters(m)) shapes[name] = p.sizes().vec();
  EXPECT_EQ(shapes["model.layers.1.mlp.experts.base_layer.lora_A.weight"], (std::vector<int64_t>{4 * 4, 64}));
  EXPECT_EQ(shapes["model.layers.1.mlp.experts.lora_A.weight"], (std::vector<int64_t>{2 * 4, 32}));
  EXPECT_FALSE(shapes.count("model.layers.0.mlp.gate_proj.lora_A.weight"));
  test::TempDir dir("expert_lora_converted");
  tuners::save_adapter(m, converted, dir.path() / "adapter");
  const auto written = io::read_json_file(dir.path() / "adapter" / "adapter_config.json");
  EXPECT_EQ(written.at("rank_pattern"), (nlohmann::json{{".*\\.gate_up_proj", 4}}));
  EXPECT_EQ(written.at("alpha_pattern"), (nlohmann::json{{".*\\.gate_up_proj", 8}}));
  auto loaded = test::random_model(test::tiny_config("qwen3_moe"), 9);
  tuners::load_adapter(loaded, dir.path() / "adapter");
  EXPECT_EQ((logits(loaded) - logits(m)).abs().max().item<double>(), 0.0);

  // What PEFT (and so ms-swift) refuses: the default dropout on the experts, half of the fused pair.
  auto fresh = test::random_model(test::tiny_config("qwen3_moe"), 9);
  c.lora_dropout = 0.05;
  EXPECT_NE(error_of([&] { tuners::convert_expert_targets(fresh, c); }).find("--lora_dropout 0"), std::string::npos);
  c.lora_dropout = 0;
  c.target_modules = {"q_proj", "gate_proj"};
  EXPECT_NE(error_of([&] { tuners::convert_expert_targets(fresh, c); }).find("without up_proj"), std::string::npos);
  c.target_modules = {"up_proj", "down_proj"};
  EXPECT_NE(error_of([&] { tuners::convert_expert_targets(fresh, c); }).find("without gate_proj"), std::string::npos);
  c.target_modules = {"gate"};
  EXPECT_NE(error_of([&] { tuners::convert_expert_targets(fresh, c); }).find("names the router"), std::string::npos);
  c.target_regex = ".*q_proj";
  EXPECT_NE(error_of([&] { tuners::convert_expert_targets(fresh, c); }).find("--target_regex on qwen3_moe"),
            std::string::npos);

  // Mixtral's former names: w1 and w3 are the fused pair, w2 the down projection.
  auto mixtral = test::random_model(test::tiny_config("mixtral"), 9);
  LoraConfig x;
  x.lora_dropout = 0;
  x.target_modules = {"q_proj", "w1", "w3", "w2"};
  const auto mx = tuners::convert_expert_targets(mixtral, x);
  EXPECT_EQ(mx.target_modules, std::vector<std::string>{"q_proj"});
  EXPECT_EQ(mx.target_parameters, (std::vector<std::string>{"gate_up_proj", "down_proj"}));
  EXPECT_EQ(mx.rank_for("model.layers.0.mlp.experts.gate_up_proj"), 16);
  // Qwen2-MoE: transformers 5.19 leaves it out of its conversion table, so PEFT (and swift) adapt its shared expert.
  auto qwen2_moe = test::random_model(test::tiny_config("qwen2_moe"), 9);
  EXPECT_EQ(tuners::convert_expert_targets(qwen2_moe, x).target_modules, x.target_modules);

  // Every layer sparse, no shared expert: all-linear is the attention alone, unconverted (default dropout fine).
  auto all_sparse_config = test::tiny_config("qwen3_moe");
  all_sparse_config.erase("mlp_only_layers");
  auto all_sparse = test::random_model(all_sparse_config, 9);
  LoraConfig d;
  EXPECT_EQ(tuners::convert_expert_targets(all_sparse, d).target_modules, std::vector<std::string>{"all-linear"});
  EXPECT_TRUE(tuners::convert_expert_targets(all_sparse, d).target_parameters.empty());
  auto dense = test::random_model(test::tiny_config("qwen3"), 9);  // not a converted family
  EXPECT_EQ(tuners::convert_expert_targets(dense, d).target_modules, std::vector<std::string>{"all-linear"});
}

// InternLM2's modules keep their own names, so all-linear LoRA lands on wqkv, wo, w1, w3, w2 (not the head, output)
// and adapter_config.json lists them as ms-swift's find_all_linears does.
TEST(Lora, InternLM2AllLinearKeepsItsModuleNames) {
  auto m = test::random_model(test::tiny_config("internlm2"), 3);
  const auto wrapped = tuners::apply_lora(m, random_lora(), 1);
  EXPECT_EQ(wrapped.size(), 2u * 5u);
  EXPECT_EQ(wrapped.front(), "model.layers.0.attention.wqkv");
  EXPECT_EQ(tuners::to_adapter_config_json(random_lora(), wrapped)["target_modules"],
            nlohmann::json({"w1", "w2", "w3", "wo", "wqkv"}));
  EXPECT_TRUE(m->named_parameters().contains("model.layers.1.feed_forward.w2.lora_B.weight"));
}
