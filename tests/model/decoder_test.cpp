// Invariants of the decoder on tiny random models of every family: KV-cache decoding equals full
// recomputation (fp32, 1e-5), each row of a left-padded batch equals that row alone, save -> load is
// bit-exact, bf16 stays within bf16 tolerance of fp32, and checkpoint errors name what is wrong; config.json parsing
// per family, and Gemma's soft-capped logits.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "swift/core/error.h"
#include "swift/io/hf_config.h"
#include "swift/io/safetensors.h"
#include "swift/io/safetensors_folder.h"
#include "swift/model/checkpoint.h"
#include "swift/model/family_registry.h"
#include "swift/model/generator.h"
#include "swift/model/init_weights.h"
#include "swift/model/model_config.h"
#include "swift/model/param_sharding.h"
#include "swift/model/parameter_layout.h"
#include "swift/model/rope.h"
#include "swift/model/tensor_parallel.h"
#include "test_util.h"

using namespace swift;
namespace fs = std::filesystem;

namespace {

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
}

at::Tensor random_ids(int64_t B, int64_t T, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randint(0, 128, {B, T}, gen, at::TensorOptions().dtype(at::kLong));
}

class FamilyTest : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(FamilyTest, KvCacheDecodingEqualsFullRecompute) {
  torch::NoGradGuard no_grad;
  auto model = test::random_model(test::tiny_config(GetParam()), 1);
  auto ids = random_ids(2, 14, 7);
  model::ForwardArgs full;
  full.input_ids = ids;
  auto expected = model->forward(full);

  // Prefill 5 tokens, then a chunk of 3, then one token at a time.
  auto cache = model->make_cache(2, 14);
  std::vector<at::Tensor> pieces;
  int64_t pos = 0;
  for (int64_t len : {5, 3, 1, 1, 1, 1, 1, 1}) {
    model::ForwardArgs step;
    step.input_ids = ids.narrow(1, pos, len);
    step.cache = &cache;
    pieces.push_back(model->forward(step));
    pos += len;
  }
  ASSERT_EQ(pos, 14);
  EXPECT_EQ(cache.length, 14);
  EXPECT_LE(max_abs_diff(at::cat(pieces, 1), expected), 1e-5);
}

TEST_P(FamilyTest, LeftPaddedRowsEqualRowsAlone) {
  torch::NoGradGuard no_grad;
  auto model = test::random_model(test::tiny_config(GetParam()), 2);
  auto a = random_ids(1, 9, 3), b = random_ids(1, 5, 4);
  auto batch = at::zeros({2, 9}, at::kLong);
  batch[0].copy_(a[0]);
  batch[1].narrow(0, 4, 5).copy_(b[0]);
  auto mask = at::ones({2, 9}, at::kLong);
  mask[1].narrow(0, 0, 4).fill_(0);
  model::ForwardArgs args;
  args.input_ids = batch;
  args.attention_mask = mask;
  auto logits = model->forward(args);

  model::ForwardArgs alone_a, alone_b;
  alone_a.input_ids = a;
  alone_b.input_ids = b;
  EXPECT_LE(max_abs_diff(logits[0], model->forward(alone_a)[0]), 1e-5);
  EXPECT_LE(max_abs_diff(logits[1].narrow(0, 4, 5), model->forward(alone_b)[0]), 1e-5);
}

TEST_P(FamilyTest, SaveLoadIsBitExact) {
  torch::NoGradGuard no_grad;
  test::TempDir tmp;
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    auto model = test::random_model(test::tiny_config(GetParam()), 3, dtype);
    model::save_model(model, tmp / "m");
    model::LoadOptions options;  // torch_dtype from the saved config.json
    auto loaded = model::load_model(tmp / "m", options);
    ASSERT_EQ(loaded->dtype(), dtype);
    auto expected = model->named_parameters();
    auto actual = loaded->named_parameters();
    ASSERT_EQ(expected.size(), actual.size());
    for (const auto& item : expected) {
      ASSERT_TRUE(actual.contains(item.key())) << item.key();
      EXPECT_TRUE(at::equal(item.value(), actual[item.key()])) << item.key();
    }
  }
}

TEST_P(FamilyTest, Bf16CloseToFp32) {
  torch::NoGradGuard no_grad;
  auto fp32 = test::random_model(test::tiny_config(GetParam()), 4);
  auto bf16 = test::random_model(test::tiny_config(GetParam()), 4, at::kBFloat16);
  model::ForwardArgs args;
  args.input_ids = random_ids(2, 10, 5);
  auto a = fp32->forward(args), b = bf16->forward(args).to(at::kFloat);
  EXPECT_LE((a - b).abs().mean().item<double>(), 0.05);
  // The argmax agrees almost everywhere.
  EXPECT_GE(a.argmax(-1).eq(b.argmax(-1)).to(at::kFloat).mean().item<double>(), 0.8);
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTest,
                         ::testing::Values("llama", "qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3_text",
                                           "phi3", "glm4", "internlm2", "internlm3", "deepseek_v2", "deepseek_v3"));

TEST(Checkpoint, ShardedSaveLoadsBack) {
  torch::NoGradGuard no_grad;
  test::TempDir tmp;
  auto model = test::random_model(test::tiny_config("qwen3"), 5);
  model::SaveOptions options;
  options.max_shard_bytes = 60000;
  model::save_model(model, tmp / "m", options);
  EXPECT_TRUE(fs::exists(tmp / "m" / "model.safetensors.index.json"));
  auto loaded = model::load_model(tmp / "m");
  model::ForwardArgs args;
  args.input_ids = random_ids(1, 6, 1);
  EXPECT_TRUE(at::equal(model->forward(args), loaded->forward(args)));
}

TEST(Checkpoint, MissingUnexpectedAndMisshapenTensorsAreNamed) {
  torch::NoGradGuard no_grad;
  test::TempDir tmp;
  auto model = test::random_model(test::tiny_config("llama"), 6);
  io::NamedTensors tensors;
  for (auto& item : model->named_parameters()) {
    if (item.key() == "model.norm.weight") continue;  // missing
    auto t = item.value();
    if (item.key() == "lm_head.weight") t = t.narrow(0, 0, 100).contiguous();  // misshapen
    tensors.emplace_back(item.key(), t);
  }
  tensors.emplace_back("model.layers.0.extra.weight", at::zeros({2}));  // unexpected
  fs::create_directories(tmp / "bad");
  io::write_json_file(tmp / "bad" / "config.json", test::tiny_config("llama"));
  io::save_safetensors(tmp / "bad" / "model.safetensors", tensors);
  try {
    model::load_model(tmp / "bad");
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("model.norm.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("lm_head.weight: checkpoint [100, 64], model expects [128, 64]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.layers.0.extra.weight"), std::string::npos) << msg;
  }
}

// ZeRO-3 loading: a placement plan sees every parameter with its size, and the rank keeps the values of only the
// parameters it owns (on the device or in RAM); the rest are shape-only tensors. The same with
// --init_strategy (the whole model is initialised, then placed). Tensors left elsewhere are still checked.
TEST(Checkpoint, PlacementPlanReadsOnlyWhatThisRankKeeps) {
  torch::NoGradGuard no_grad;
  test::TempDir tmp;
  auto model = test::random_model(test::tiny_config("qwen2"), 5);
  model::save_model(model, tmp / "m");
  fs::create_directories(tmp / "init");
  fs::create_directories(tmp / "bad");
  io::write_json_file(tmp / "init" / "config.json", test::tiny_config("qwen2"));
  std::vector<model::ParameterInfo> seen;
  model::LoadOptions options;
  options.placement = [&](const std::vector<model::ParameterInfo>& infos) {
    seen = infos;
    std::vector<model::Placement> where;
    for (size_t i = 0; i < infos.size(); ++i)
      where.push_back(i % 3 == 0 ? model::Placement::kDevice : i % 3 == 1 ? model::Placement::kHost : model::Placement::kElsewhere);
    return where;
  };
  auto check = [&](model::CausalLM& loaded, model::CausalLM& reference) {
    const auto want = reference->named_parameters();
    ASSERT_EQ(seen.size(), want.size());
    size_t i = 0;
    for (const auto& item : loaded->named_parameters()) {
      const at::Tensor& expected = want[item.key()];
      EXPECT_EQ(seen[i].name, item.key());
      EXPECT_EQ(seen[i].bytes, expected.numel() * 4);
      EXPECT_EQ(item.value().sizes(), expected.sizes()) << item.key();
      if (i % 3 == 2) EXPECT_FALSE(model::holds_values(item.value())) << item.key();
      else EXPECT_TRUE(at::equal(item.value(), expected)) << item.key();
      ++i;
    }
    EXPECT_TRUE(loaded->device().is_cpu());
  };
  auto loaded = model::load_model(tmp / "m", options);
  check(loaded, model);
  options.init_strategy = "normal";
  model::LoadOptions whole;
  whole.init_strategy = "normal";
  auto initialised = model::load_model(tmp / "init", whole);
  auto placed = model::load_model(tmp / "init", options);
  check(placed, initialised);
  // A misshapen tensor is named even where this rank would not read it.
  io::NamedTensors tensors;
  for (auto& item : model->named_parameters())
    tensors.emplace_back(item.key(), item.key() == "model.norm.weight" ? at::zeros({3}) : item.value());
  io::write_json_file(tmp / "bad" / "config.json", test::tiny_config("qwen2"));
  io::save_safetensors(tmp / "bad" / "model.safetensors", tensors);
  options.placement = [](const std::vector<model::ParameterInfo>& infos) {
    return std::vector<model::Placement>(infos.size(), model::Placement::kElsewhere);
  };
  EXPECT_THROW(model::load_model(tmp / "bad", options), DataError);
}

// Tensor-parallel loading: deferred parameters stay shape-only through the load and are read later, whole or only
// the slice a rank keeps (its shape already cut); a parameter claimed in between (a resumed adapter's
// --modules_to_save) is left to its claimant. Without files (--init_strategy) nothing is deferred.
TEST(Checkpoint, DeferredWeightsAreReadLaterWholeOrAsSlices) {
  torch::NoGradGuard no_grad;
  test::TempDir tmp;
  auto model = test::random_model(test::tiny_config("qwen2"), 5);
  model::save_model(model, tmp / "m");
  model::LoadOptions options;
  options.placement = [](const std::vector<model::ParameterInfo>& infos) {
    return std::vector<model::Placement>(infos.size(), model::Placement::kDeferred);
  };
  auto loaded = model::load_model(tmp / "m", options);
  ASSERT_NE(loaded->deferred_weights(), nullptr);
  EXPECT_EQ(loaded->deferred_weights()->folder, tmp / "m");
  for (const auto& item : loaded->named_parameters()) {
    EXPECT_FALSE(model::holds_values(item.value())) << item.key();
    EXPECT_EQ(loaded->deferred_weights()->names.count(item.key()), 1u) << item.key();
  }
  const auto want = model->named_parameters();
  // Rows 32..63 of the embedding, columns 16..47 of one o_proj (as a rank of a TP group of two / of four keeps).
  const model::WeightSlice rows{0, 32, 32}, columns{1, 16, 32};
  const std::string embed = "model.embed_tokens.weight", o_proj = "model.layers.1.self_attn.o_proj.weight";
  for (auto& item : loaded->named_parameters()) {
    if (item.key() == embed) item.value().set_data(model::shape_only({32, item.value().size(1)}, item.value().options()));
    if (item.key() == o_proj) item.value().set_data(model::shape_only({item.value().size(0), 32}, item.value().options()));
  }
  const std::string norm = "model.norm.weight";
  EXPECT_TRUE(model::claim_deferred_parameter(loaded, norm));
  EXPECT_FALSE(model::claim_deferred_parameter(loaded, norm));
  loaded->named_parameters()[norm].fill_(7.0f);
  const int64_t bytes = model::read_deferred_weights(loaded, [&](const std::string& name) -> std::optional<model::WeightSlice> {
    if (name == embed) return rows;
    if (name == o_proj) return columns;
    return std::nullopt;
  });
  EXPECT_EQ(loaded->deferred_weights(), nullptr);
  int64_t expected_bytes = 0;
  for (const auto& item : loaded->named_parameters()) {
    const at::Tensor& p = item.value();
    ASSERT_TRUE(model::holds_values(p)) << item.key();
    if (item.key() == norm) {
      EXPECT_TRUE(at::equal(p, at::full_like(p, 7.0f))) << "a claimed parameter keeps its claimant's values";
      continue;
    }
    expected_bytes += static_cast<int64_t>(p.nbytes());
    const at::Tensor& whole = want[item.key()];
    if (item.key() == embed) EXPECT_TRUE(at::equal(p, whole.narrow(0, 32, 32)));
    else if (item.key() == o_proj) EXPECT_TRUE(at::equal(p, whole.narrow(1, 16, 32)));
    else EXPECT_TRUE(at::equal(p, whole)) << item.key();
  }
  EXPECT_EQ(bytes, expected_bytes);
  EXPECT_EQ(model::read_deferred_weights(loaded), 0) << "nothing left to read";

  fs::create_directories(tmp / "init");
  io::write_json_file(tmp / "init" / "config.json", test::tiny_config("qwen2"));
  options.init_strategy = "normal";
  auto initialised = model::load_model(tmp / "init", options);
  EXPECT_EQ(initialised->deferred_weights(), nullptr);
  for (const auto& item : initialised->named_parameters()) EXPECT_TRUE(model::holds_values(item.value())) << item.key();
}

TEST(Checkpoint, FolderWithoutWeightsNeedsInitStrategy) {
  test::TempDir tmp;
  io::write_json_file(tmp / "config.json", test::tiny_config("qwen2"));
  EXPECT_THROW(model::load_model(tmp.path()), DataError);
  model::LoadOptions options;
  options.init_strategy = "normal";
  options.seed = 11;
  auto a = model::load_model(tmp.path(), options);
  auto b = model::load_model(tmp.path(), options);
  for (const auto& item : a->named_parameters())
    EXPECT_TRUE(at::equal(item.value(), b->named_parameters()[item.key()])) << "seeded init must repeat";
  options.init_strategy = "bogus";
  EXPECT_THROW(model::load_model(tmp.path(), options), UsageError);
}

TEST(ModelConfig, ReportsEveryProblemAndUnsupportedTypes) {
  auto j = test::tiny_config("llama");
  j.erase("hidden_size");
  j["num_key_value_heads"] = 3;
  j["rope_scaling"] = {{"rope_type", "mrope"}};
  try {
    model::parse_model_config(j, "x/config.json");
    FAIL();
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("missing \"hidden_size\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("multiple of num_key_value_heads"), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"mrope\" is not supported"), std::string::npos) << msg;
  }
  j = test::tiny_config("llama");
  j["model_type"] = "gpt2";
  try {
    model::parse_model_config(j, "x/config.json");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.hint()).find("llama, mistral, qwen2, qwen3"), std::string::npos);
  }
}

TEST(ModelConfig, FamilyFlagsAndSlidingWindows) {
  auto q2 = test::tiny_config("qwen2");
  q2["use_sliding_window"] = true;
  q2["sliding_window"] = 8;
  q2["max_window_layers"] = 1;
  auto c = model::parse_model_config(q2, "q2");
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_EQ(c.layer_sliding_window, (std::vector<int64_t>{0, 8}));
  q2["use_sliding_window"] = false;
  EXPECT_FALSE(model::parse_model_config(q2, "q2").any_sliding_window());

  auto q3 = test::tiny_config("qwen3");
  c = model::parse_model_config(q3, "q3");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 24);

  auto m = test::tiny_config("mistral");
  EXPECT_EQ(model::parse_model_config(m, "m").layer_sliding_window, (std::vector<int64_t>{6, 6}));
  // Fields config.json leaves out take the family's config class defaults (MistralConfig: a 4096-token window,
  // MixtralConfig: none, rope_theta 1e6, rms_norm_eps 1e-5; both 131072 positions; Qwen: 32768).
  for (const char* key : {"sliding_window", "rope_theta", "rms_norm_eps", "max_position_embeddings"}) m.erase(key);
  c = model::parse_model_config(m, "m");
  EXPECT_EQ(c.layer_sliding_window, (std::vector<int64_t>{4096, 4096}));
  EXPECT_EQ(c.max_position_embeddings, 131072);
  auto mx = test::tiny_config("mixtral");
  for (const char* key : {"sliding_window", "rope_theta", "rms_norm_eps", "max_position_embeddings"}) mx.erase(key);
  c = model::parse_model_config(mx, "mx");
  EXPECT_FALSE(c.any_sliding_window());
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  auto q = test::tiny_config("qwen3_moe");
  q.erase("max_position_embeddings");
  EXPECT_EQ(model::parse_model_config(q, "q").max_position_embeddings, 32768);

  auto l = test::tiny_config("llama");
  l.erase("model_type");
  l["architectures"] = {"LlamaForCausalLM"};
  l["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 64}};
  c = model::parse_model_config(l, "l");
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_EQ(c.rope.type, "yarn");
  EXPECT_EQ(c.rope.original_max_position_embeddings, 64);
  l["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 500.0}};
  c = model::parse_model_config(l, "l");
  EXPECT_EQ(c.rope.type, "linear");
  EXPECT_DOUBLE_EQ(c.rope.theta, 500.0);
}

TEST(ModelConfig, GemmaFamilies) {
  // Gemma: "gelu" means the tanh approximation, the head is tied unless config.json says otherwise.
  auto g = test::tiny_config("gemma");
  g.erase("tie_word_embeddings");
  g["hidden_act"] = "gelu";
  auto c = model::parse_model_config(g, "g");
  EXPECT_EQ(c.hidden_act, "gelu_pytorch_tanh");
  EXPECT_TRUE(c.tie_word_embeddings && c.norm_unit_offset && !c.sandwich_norms);
  EXPECT_DOUBLE_EQ(c.embedding_multiplier, 8.0);  // sqrt(64)
  EXPECT_DOUBLE_EQ(c.attention_scale, 0.0);       // 1/sqrt(head_dim)

  // Gemma 2 without the optional keys: Gemma2Config's defaults (caps 50 and 30, every other layer sliding over
  // 4096 tokens, scores scaled by 256^-0.5); a null cap is none.
  auto g2 = test::tiny_config("gemma2");
  for (const char* key : {"sliding_window", "query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping"})
    g2.erase(key);
  g2["num_hidden_layers"] = 4;
  c = model::parse_model_config(g2, "g2");
  EXPECT_TRUE(c.sandwich_norms);
  EXPECT_DOUBLE_EQ(c.attn_logit_softcapping, 50.0);
  EXPECT_DOUBLE_EQ(c.final_logit_softcapping, 30.0);
  EXPECT_DOUBLE_EQ(c.attention_scale, 1.0 / 16);
  EXPECT_EQ(c.layer_sliding_window, (std::vector<int64_t>{4096, 0, 4096, 0}));
  g2["final_logit_softcapping"] = nullptr;
  EXPECT_DOUBLE_EQ(model::parse_model_config(g2, "g2").final_logit_softcapping, 0.0);
  g2["sliding_window"] = nullptr;  // sliding layers without a length: transformers cannot run it either
  EXPECT_THROW(model::parse_model_config(g2, "g2"), DataError);
  g2["layer_types"] = {"full_attention", "full_attention", "full_attention", "full_attention"};
  EXPECT_FALSE(model::parse_model_config(g2, "g2").any_sliding_window());

  // Gemma 3 as released (v4 keys): five sliding layers to one global, the local layers' own RoPE base.
  auto g3 = test::tiny_config("gemma3_text");
  g3.erase("sliding_window_pattern");
  g3["num_hidden_layers"] = 7;
  g3["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  c = model::parse_model_config(g3, "g3");
  EXPECT_TRUE(c.qk_norm && c.sandwich_norms);
  EXPECT_DOUBLE_EQ(c.attn_logit_softcapping + c.final_logit_softcapping, 0.0);
  EXPECT_EQ(c.layer_sliding_window, (std::vector<int64_t>{6, 6, 6, 6, 6, 0, 6}));
  EXPECT_EQ(c.rope.type, "linear");
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  ASSERT_TRUE(c.sliding_rope.has_value());
  EXPECT_EQ(c.sliding_rope->type, "default");
  EXPECT_DOUBLE_EQ(c.sliding_rope->theta, 1e4);
  // ... and as transformers v5 writes it: rope_parameters per layer type.
  g3.erase("rope_scaling");
  g3["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 5e5}}},
                           {"sliding_attention", {{"rope_type", "linear"}, {"factor", 2.0}, {"rope_theta", 2e4}}}};
  c = model::parse_model_config(g3, "g3");
  EXPECT_EQ(c.rope.type, "default");
  EXPECT_DOUBLE_EQ(c.rope.theta, 5e5);
  EXPECT_EQ(c.sliding_rope->type, "linear");
  EXPECT_DOUBLE_EQ(c.sliding_rope->theta, 2e4);

  // What swift cannot run is reported, all at once.
  g3["use_bidirectional_attention"] = true;
  g3["query_pre_attn_scalar"] = 0;
  g3["hidden_activation"] = "relu";
  try {
    model::parse_model_config(g3, "x/config.json");
    FAIL();
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("use_bidirectional_attention"), std::string::npos) << msg;
    EXPECT_NE(msg.find("query_pre_attn_scalar must be positive"), std::string::npos) << msg;
    EXPECT_NE(msg.find("hidden_act \"relu\" is not supported"), std::string::npos) << msg;
  }
}

TEST(Decoder, SoftCappedLogitsAndTheirVocabularyMean) {
  torch::NoGradGuard no_grad;
  auto m = test::random_model(test::tiny_config("gemma2"), 41);
  model::ForwardArgs args;
  args.input_ids = random_ids(2, 9, 42);
  const at::Tensor hidden = m->forward_hidden(args);
  const at::Tensor logits = m->logits(hidden);
  const at::Tensor raw = at::linear(hidden, m->lm_head->weight);  // final_logit_softcapping 3
  ASSERT_GT(raw.abs().max().item<double>(), 3.0);                 // the test model's logits reach the cap
  EXPECT_LE(max_abs_diff(logits, (raw / 3.0).tanh() * 3.0), 1e-6);
  // The metric TRL logs as logits/chosen: the mean of the capped logits, which the linear shortcut would miss.
  EXPECT_LE(max_abs_diff(m->vocab_mean_logits(hidden), ((raw / 3.0).tanh() * 3.0).mean(-1)), 1e-6);
  EXPECT_GT(max_abs_diff(raw.mean(-1), logits.mean(-1)), 1e-3);
}

TEST(Decoder, GemmaNormsStartAtZero) {
  auto m = test::random_model(test::tiny_config("gemma3_text"), 43);
  model::init_weights(m, "normal", 1);
  for (const auto& item : m->named_parameters()) {
    if (item.key().find("norm") != std::string::npos)
      EXPECT_EQ(item.value().abs().max().item<double>(), 0.0) << item.key();  // scale 1 + 0
  }
}

// DeepSeek's config.json maps onto latent attention and grouped routing; the KV cache keeps the compressed latent
// and the shared RoPE key (not each head's keys and values), and the parameter count is what the model allocates.
TEST(DeepseekConfig, LatentAttentionCachesTheCompressedFormAndCountsItsParameters) {
  for (const std::string family : {"deepseek_v2", "deepseek_v3"}) {
    SCOPED_TRACE(family);
    const auto config = model::parse_model_config(test::tiny_config(family), "test");
    ASSERT_TRUE(config.latent_attention.has_value());
    EXPECT_EQ(config.head_dim, 8) << "RoPE's width, qk_rope_head_dim";
    EXPECT_EQ(config.latent_attention->q_lora_rank, family == "deepseek_v3" ? 24 : 0);
    EXPECT_EQ(config.moe.sparse_layers, (std::vector<bool>{false, true})) << "first_k_dense_replace 1";
    EXPECT_EQ(config.moe.scoring, family == "deepseek_v3" ? "sigmoid" : "softmax");
    EXPECT_TRUE(config.moe.router_in_fp32) << "V2-Lite's greedy softmax router too, as transformers";
    EXPECT_EQ(config.moe.shared_expert_intermediate_size, family == "deepseek_v3" ? 16 : 32);
    auto m = test::random_model(test::tiny_config(family), 3);
    const model::KVCache cache = m->make_cache(2, 10);
    ASSERT_EQ(cache.keys.size(), 2u);
    EXPECT_EQ(cache.keys[0].sizes(), (std::vector<int64_t>{2, 1, 10, 16})) << "the latent, kv_lora_rank wide";
    EXPECT_EQ(cache.values[0].sizes(), (std::vector<int64_t>{2, 1, 10, 8})) << "the RoPE key, qk_rope_head_dim wide";
    double allocated = 0;
    for (const auto& p : m->parameters()) allocated += static_cast<double>(p.numel());
    EXPECT_EQ(model::parameter_count(config), allocated);
  }
}

TEST(DeepseekConfig, RoutingGroupsAreChecked) {
  auto j = test::tiny_config("deepseek_v3");
  j["n_group"] = 3;  // 8 experts do not split into 3 groups
  EXPECT_THROW(model::parse_model_config(j, "test"), DataError);
  j = test::tiny_config("deepseek_v3");
  j["topk_group"] = 5;
  EXPECT_THROW(model::parse_model_config(j, "test"), DataError);
  j = test::tiny_config("deepseek_v2");
  j["topk_method"] = "noaux_tc";
  try {
    model::parse_model_config(j, "test");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("topk_method \"noaux_tc\" is not supported by DeepSeek-V2"), std::string::npos);
  }
}

// As transformers' nn.Embedding(padding_idx=pad_token_id): the pad token's row takes no gradient from the lookup
// (ms-swift's full training leaves it unchanged even where the pad token is also the EOS the data holds); a tied head
// still trains it.
TEST(Embedding, PadTokensRowTakesNoGradientFromTheLookup) {
  for (const bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    auto config = test::tiny_config("qwen3");
    config["pad_token_id"] = 7;
    config["tie_word_embeddings"] = tied;
    auto m = test::random_model(config, 4);
    m->train();
    model::ForwardArgs args;
    args.input_ids = at::tensor({3, 7, 9, 7, 11}, at::kLong).view({1, 5});
    m->forward(args).pow(2).mean().backward();
    const at::Tensor grad = m->model->embed_tokens->weight.grad();
    EXPECT_GT(grad[3].abs().sum().item<double>(), 0.0);
    if (tied) EXPECT_GT(grad[7].abs().sum().item<double>(), 0.0) << "the head's gradient";
    else EXPECT_EQ(grad[7].abs().sum().item<double>(), 0.0);
  }
}

// DeepSeek-V3's multi-token-prediction layer, stored after the decoder's layers, is skipped on load (as transformers
// skips it) when config.json announces one, and is an unexpected tensor otherwise.
TEST(DeepseekConfig, MultiTokenPredictionLayersAreSkippedOnLoad) {
  test::TempDir tmp;
  for (const bool announced : {true, false}) {
    SCOPED_TRACE(announced ? "num_nextn_predict_layers 1" : "none announced");
    auto config = test::tiny_config("deepseek_v3");
    if (announced) config["num_nextn_predict_layers"] = 1;
    auto m = test::random_model(config, 5);
    const fs::path dir = tmp / (announced ? "announced" : "plain");
    model::save_model(m, dir);
    io::NamedTensors tensors;
    auto folder = io::SafetensorsFolder::open(dir);
    for (const auto& name : folder.names()) tensors.emplace_back(name, folder.get(name).clone());
    tensors.emplace_back("model.layers.2.eh_proj.weight", at::zeros({64, 128}));  // the layer after the last
    io::save_safetensors(dir / "model.safetensors", tensors);
    if (announced) {
      auto loaded = model::load_model(dir, model::LoadOptions{});
      EXPECT_TRUE(at::equal(loaded->model->embed_tokens->weight, m->model->embed_tokens->weight));
    } else {
      EXPECT_THROW(model::load_model(dir, model::LoadOptions{}), DataError);
    }
  }
}

namespace {
// Phi-3 128k's shape, tiny: longrope over 6 frequencies with the pretraining length 8.
nlohmann::json phi3_longrope_config() {
  auto j = test::tiny_config("phi3");
  j.erase("partial_rotary_factor");
  j["head_dim"] = 12;
  j["original_max_position_embeddings"] = 8;
  j["rope_scaling"] = {{"type", "su"},
                       {"short_factor", {1.0, 1.1, 1.2, 1.5, 2.0, 3.0}},
                       {"long_factor", {1.0, 2.0, 4.0, 8.0, 16.0, 32.0}}};
  return j;
}
}  // namespace

// Phi-3's config.json: fused projections kept under their own names, longrope ("su" in the first files) with its
// defaults (the factor from the lengths, the original length at the top level), and what swift cannot run.
TEST(Phi3Config, FusedProjectionsLongropeAndItsChecks) {
  auto c = model::parse_model_config(test::tiny_config("phi3"), "phi3");
  EXPECT_TRUE(c.fused_qkv && c.fused_gate_up && !c.rope_interleaved);
  EXPECT_DOUBLE_EQ(c.rope.partial_rotary_factor, 0.75);
  EXPECT_EQ(c.layer_sliding_window, (std::vector<int64_t>{6, 6}));
  auto m = test::random_model(test::tiny_config("phi3"), 5);
  const auto params = m->named_parameters();
  EXPECT_TRUE(params.contains("model.layers.0.self_attn.qkv_proj.weight"));
  EXPECT_TRUE(params.contains("model.layers.1.mlp.gate_up_proj.weight"));
  EXPECT_FALSE(params.contains("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_EQ(params["model.layers.0.self_attn.qkv_proj.weight"].size(0), 64 + 2 * 32);
  double allocated = 0;
  for (const auto& p : m->parameters()) allocated += static_cast<double>(p.numel());
  EXPECT_EQ(model::parameter_count(c), allocated);

  // ms-swift picks phi4 for Phi-4 (14B) by its model id; swift by its tokenizer's <|im_sep|>.
  const auto* family = model::find_model_family("phi3", {});
  ASSERT_NE(family, nullptr);
  EXPECT_EQ(family->template_for([](const std::string& t) { return t == "<|im_sep|>"; }), "phi4");
  EXPECT_EQ(family->template_for([](const std::string&) { return false; }), "phi3");

  c = model::parse_model_config(phi3_longrope_config(), "phi3");
  EXPECT_EQ(c.rope.type, "longrope");
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8);
  EXPECT_DOUBLE_EQ(c.rope.factor, 256.0 / 8);  // max_position_embeddings / original
  auto j = phi3_longrope_config();
  j["rope_scaling"]["factor"] = 4.0;  // given: it sets the attention factor, not the lengths
  EXPECT_DOUBLE_EQ(model::parse_model_config(j, "phi3").rope.factor, 4.0);
  j["rope_scaling"]["type"] = "longrope";
  j["model_type"] = "llama";  // any family's longrope is checked alike
  j["rope_scaling"]["short_factor"] = {1.0, -2.0, 1.0, 1.0, 1.0, 1.0};
  j["original_max_position_embeddings"] = 1;
  try {
    model::parse_model_config(j, "x/config.json");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("short_factor must hold positive numbers"), std::string::npos) << msg;
    EXPECT_NE(msg.find("original_max_position_embeddings >= 2"), std::string::npos) << msg;
  }
  j = phi3_longrope_config();
  j.erase("original_max_position_embeddings");
  EXPECT_EQ(model::parse_model_config(j, "phi3").rope.original_max_position_embeddings, 4096) << "Phi3Config's default";

  j = phi3_longrope_config();
  j["rope_scaling"]["long_factor"] = {1.0, 2.0};
  j["resid_pdrop"] = 0.1;
  j["partial_rotary_factor"] = 0.1;  // 1 of 12 dimensions: odd
  try {
    model::parse_model_config(j, "x/config.json");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("long_factor has 2 entries"), std::string::npos) << msg;
    EXPECT_NE(msg.find("resid_pdrop 0.1 is not supported"), std::string::npos) << msg;
    EXPECT_NE(msg.find("partial_rotary_factor 0.1"), std::string::npos) << msg;
  }
}

// GLM-4-0414's config.json: q/k/v biases without o_proj's, a fused gate_up_proj, sandwich norms under GLM's names, RoPE
// over half of each head in adjacent pairs; Glm4Config's defaults where the file is silent.
TEST(Glm4Config, LayoutDefaultsAndChecks) {
  auto c = model::parse_model_config(test::tiny_config("glm4"), "glm4");
  EXPECT_TRUE(c.fused_gate_up && !c.fused_qkv && c.rope_interleaved && c.sandwich_norms && c.qkv_bias && !c.attention_bias);
  EXPECT_DOUBLE_EQ(c.rope.partial_rotary_factor, 0.5);
  auto m = test::random_model(test::tiny_config("glm4"), 5);
  const auto params = m->named_parameters();
  for (const char* name : {"model.layers.0.self_attn.q_proj.bias", "model.layers.0.mlp.gate_up_proj.weight",
                           "model.layers.0.post_self_attn_layernorm.weight", "model.layers.0.post_attention_layernorm.weight",
                           "model.layers.0.post_mlp_layernorm.weight"})
    EXPECT_TRUE(params.contains(name)) << name;
  for (const char* name : {"model.layers.0.self_attn.o_proj.bias", "model.layers.0.mlp.gate_proj.weight",
                           "model.layers.0.pre_feedforward_layernorm.weight"})
    EXPECT_FALSE(params.contains(name)) << name;
  double allocated = 0;
  for (const auto& p : m->parameters()) allocated += static_cast<double>(p.numel());
  EXPECT_EQ(model::parameter_count(c), allocated);
  const auto* family = model::find_model_family("", {"Glm4ForCausalLM"});
  ASSERT_NE(family, nullptr);
  EXPECT_EQ(family->template_for([](const std::string&) { return true; }), "glm4");

  auto j = test::tiny_config("glm4");  // what Glm4Config assumes when config.json leaves it out
  for (const char* key : {"head_dim", "partial_rotary_factor", "pad_token_id", "eos_token_id", "rms_norm_eps"}) j.erase(key);
  j["hidden_size"] = 512;
  c = model::parse_model_config(j, "glm4");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_DOUBLE_EQ(c.rope.partial_rotary_factor, 0.5);
  EXPECT_EQ(c.pad_token_id, 151329);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1.5625e-07);
  j["attention_bias"] = false;
  EXPECT_FALSE(model::parse_model_config(j, "glm4").qkv_bias);

  j = test::tiny_config("glm4");
  j["attention_dropout"] = 0.1;
  j["partial_rotary_factor"] = 0.1875;  // 3 of 16 dimensions
  try {
    model::parse_model_config(j, "x/config.json");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("attention_dropout 0.1 is not supported"), std::string::npos) << msg;
    EXPECT_NE(msg.find("partial_rotary_factor 0.1875 must rotate an even number"), std::string::npos) << msg;
  }
}

// longrope chooses its factors by the furthest position of a forward: a cache filled with the short factors is stale
// once a sequence passes the original length, and the model refuses to extend it; Generator then recomputes the
// cache from every token so far (as transformers' Phi-3 intends), so its greedy tokens equal decoding without a cache.
// GLM-4's RoPE rotates adjacent pairs (x0, x1), (x2, x3)... by frequencies 0, 1, ...: regrouping the pairs as halves
// and rotating the halves gives exactly the pairs' rotation, regrouped the same way.
TEST(Rope, PairsRegroupedAsHalvesRotateAsPairs) {
  const int64_t T = 5, R = 8;
  auto x = at::randn({1, 2, T, R}, at::kDouble);
  const auto positions = at::arange(T, at::kDouble).view({1, T, 1});
  const auto freqs = positions * at::pow(10000.0, -at::arange(0, R, 2, at::kDouble) / R).view({1, 1, R / 2});  // [1, T, R/2]
  const auto cos = at::cat({freqs, freqs}, -1).cos(), sin = at::cat({freqs, freqs}, -1).sin();
  // transformers' Glm4 apply_rotary_pos_emb: cos/sin repeated per pair, rotate_half over (even, odd) pairs.
  const auto even = x.slice(-1, 0, R, 2), odd = x.slice(-1, 1, R, 2);
  const auto c = freqs.cos().unsqueeze(1), s = freqs.sin().unsqueeze(1);
  const auto pairs = at::stack({even * c - odd * s, odd * c + even * s}, -1).flatten(-2);  // [1, 2, T, R]
  const auto [q, k] = model::apply_rotary(model::pairs_to_halves(x), model::pairs_to_halves(x), cos, sin);
  EXPECT_TRUE(at::allclose(q, model::pairs_to_halves(pairs), 1e-12, 1e-12));
  EXPECT_FALSE(at::allclose(model::apply_rotary(x, x, cos, sin).first, pairs, 1e-3, 1e-3));  // halves of x: not GLM's
}

// InternLM2's config.json: its own module names (checkpoints and adapters keep them), q/k/v in one wqkv grouped by
// key/value head, biases on wqkv and wo by "bias" (default true), head_dim from the width alone; InternLM3's biases.
TEST(InternLMConfig, NamesGroupedWqkvAndBiases) {
  auto c = model::parse_model_config(test::tiny_config("internlm2"), "internlm2");
  EXPECT_TRUE(c.fused_qkv && c.qkv_grouped_by_kv_head && c.attention_bias && !c.mlp_bias && !c.fused_gate_up);
  auto m = test::random_model(test::tiny_config("internlm2"), 5);
  const auto params = m->named_parameters();
  for (const char* name : {"model.tok_embeddings.weight", "model.layers.0.attention.wqkv.weight",
                           "model.layers.0.attention.wqkv.bias", "model.layers.0.attention.wo.bias",
                           "model.layers.0.feed_forward.w1.weight", "model.layers.0.feed_forward.w3.weight",
                           "model.layers.0.feed_forward.w2.weight", "model.layers.0.attention_norm.weight",
                           "model.layers.0.ffn_norm.weight", "model.norm.weight", "output.weight"})
    EXPECT_TRUE(params.contains(name)) << name;
  EXPECT_EQ(params["model.layers.1.attention.wqkv.weight"].size(0), 64 + 2 * 32);
  double allocated = 0;
  for (const auto& p : m->parameters()) allocated += static_cast<double>(p.numel());
  EXPECT_EQ(model::parameter_count(c), allocated);
  EXPECT_TRUE(model::parameter_place("output.weight").output_layer);
  // Tensor parallelism takes whole key/value groups of wqkv per rank: 2 groups split over 2 ranks, not over 4.
  EXPECT_EQ(model::tensor_parallel_problem(c, 2), "");
  EXPECT_NE(model::tensor_parallel_problem(c, 4).find("each rank takes whole key/value groups of wqkv"), std::string::npos);
  EXPECT_EQ(model::parameter_place("model.tok_embeddings.weight").side, model::ParameterPlace::Side::kInput);
  const auto* family = model::find_model_family("", {"InternLM3ForCausalLM"});
  ASSERT_NE(family, nullptr);
  EXPECT_EQ(family->template_for([](const std::string&) { return true; }), "internlm2");  // as ms-swift

  // The grouping: the same weights laid out as Llama's (query head h = g * 2 + i from group g's block i, key and value
  // head g from its last two blocks) give the same logits.
  torch::NoGradGuard no_grad;
  auto llama_config = test::tiny_config("llama");
  llama_config["attention_bias"] = true;  // InternLM2's wqkv and wo biases (the MLP has none)
  auto llama = test::random_model(llama_config, 6);
  auto theirs = llama->named_parameters();
  auto set = [&](const std::string& name, const at::Tensor& value) { theirs[name].copy_(value.reshape(theirs[name].sizes())); };
  set("model.embed_tokens.weight", params["model.tok_embeddings.weight"]);
  set("model.norm.weight", params["model.norm.weight"]);
  set("lm_head.weight", params["output.weight"]);
  for (const std::string l : {"model.layers.0.", "model.layers.1."}) {
    for (const std::string kind : {"weight", "bias"}) {
      const auto groups = params[l + "attention.wqkv." + kind].view({2, 4, 16, -1});  // 2 groups of 2 queries, key, value
      set(l + "self_attn.q_proj." + kind, groups.narrow(1, 0, 2));
      set(l + "self_attn.k_proj." + kind, groups.select(1, 2));
      set(l + "self_attn.v_proj." + kind, groups.select(1, 3));
      set(l + "self_attn.o_proj." + kind, params[l + "attention.wo." + kind]);
    }
    for (auto [mine, llamas] : {std::pair{"feed_forward.w1", "mlp.gate_proj"}, {"feed_forward.w3", "mlp.up_proj"},
                                {"feed_forward.w2", "mlp.down_proj"}, {"attention_norm", "input_layernorm"},
                                {"ffn_norm", "post_attention_layernorm"}})
      set(l + llamas + ".weight", params[l + mine + ".weight"]);
  }
  model::ForwardArgs args;
  args.input_ids = at::arange(0, 16, at::kLong).mul(7).remainder(128).view({2, 8});
  EXPECT_TRUE(at::allclose(m->forward(args), llama->forward(args), 1e-5, 1e-5));

  auto j = test::tiny_config("internlm2");
  j["head_dim"] = 32;  // InternLM2 reads no head_dim: always hidden_size / num_attention_heads
  EXPECT_EQ(model::parse_model_config(j, "internlm2").head_dim, 16);
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 2.0}};
  EXPECT_THROW(model::parse_model_config(j, "internlm2"), DataError);
  c = model::parse_model_config(test::tiny_config("internlm3"), "internlm3");
  EXPECT_TRUE(c.qkv_bias && !c.attention_bias && !c.mlp_bias && c.head_dim == 24 && !c.fused_qkv);
  j = test::tiny_config("internlm3");
  j["bias"] = true;
  j["qkv_bias"] = false;
  EXPECT_THROW(model::parse_model_config(j, "internlm3"), DataError);
}

TEST(Phi3LongRope, GenerationPastTheOriginalLengthRecomputesTheCache) {
  torch::NoGradGuard no_grad;
  auto m = test::random_model(phi3_longrope_config(), 6);
  const auto prompt = random_ids(1, 5, 8);
  auto cache = m->make_cache(1, 12);
  model::ForwardArgs args;
  args.input_ids = prompt;
  args.cache = &cache;
  m->forward(args);
  EXPECT_FALSE(cache.long_rope);
  args.input_ids = random_ids(1, 4, 9);  // positions 5..8: the long factors
  EXPECT_THROW(m->forward(args), UsageError);

  model::Generator generator(m);
  model::SamplingParams params;
  params.max_new_tokens = 7;  // 5 -> 12 tokens, past 8
  params.temperature = 0;
  const auto result = generator.generate({std::vector<int64_t>(prompt.data_ptr<int64_t>(), prompt.data_ptr<int64_t>() + 5)},
                                         params);
  at::Tensor seq = prompt;
  std::vector<int64_t> expected;
  for (int i = 0; i < 7; ++i) {
    model::ForwardArgs full;
    full.input_ids = seq;
    const auto next = m->forward(full).select(1, seq.size(1) - 1).argmax(-1, true);
    expected.push_back(next.item<int64_t>());
    seq = at::cat({seq, next}, 1);
  }
  EXPECT_EQ(result.at(0).tokens, expected);
}

namespace {
// Greedy decoding without a cache of left-padded prompts: at each step the active rows, padded to the longest, run
// whole; a row that chooses `stop` leaves the batch (whose furthest row decides longrope's factors).
std::vector<std::vector<int64_t>> greedy_without_cache(model::CausalLM& m, std::vector<std::vector<int64_t>> rows,
                                                       int steps, int64_t stop) {
  std::vector<std::vector<int64_t>> out(rows.size());
  std::vector<size_t> active(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) active[i] = i;
  for (int step = 0; step < steps && !active.empty(); ++step) {
    size_t longest = 0;
    for (size_t r : active) longest = std::max(longest, rows[r].size());
    auto ids = at::zeros({static_cast<int64_t>(active.size()), static_cast<int64_t>(longest)}, at::kLong);
    auto mask = at::zeros_like(ids);
    for (size_t b = 0; b < active.size(); ++b) {
      const auto& row = rows[active[b]];
      const int64_t len = static_cast<int64_t>(row.size()), pad = static_cast<int64_t>(longest) - len;
      ids[static_cast<int64_t>(b)].narrow(0, pad, len).copy_(at::tensor(row, at::kLong));
      mask[static_cast<int64_t>(b)].narrow(0, pad, len).fill_(1);
    }
    model::ForwardArgs args;
    args.input_ids = ids;
    args.attention_mask = mask;
    const auto next = m->forward(args).select(1, static_cast<int64_t>(longest) - 1).argmax(-1);
    std::vector<size_t> still;
    for (size_t b = 0; b < active.size(); ++b) {
      const int64_t token = next[static_cast<int64_t>(b)].item<int64_t>();
      if (token == stop) continue;
      out[active[b]].push_back(token);
      rows[active[b]].push_back(token);
      still.push_back(active[b]);
    }
    active = std::move(still);
  }
  return out;
}
}  // namespace

// Two prompts of different lengths (left-padded): the longer crosses the original length first and the batch
// switches to the long factors; then it stops and leaves the batch, which goes back to the short factors. Each
// switch recomputes the cache, so every token equals decoding the batch without a cache.
TEST(Phi3LongRope, BatchedGenerationSwitchesRegimeWithItsFurthestRow) {
  torch::NoGradGuard no_grad;
  auto m = test::random_model(phi3_longrope_config(), 7);
  const auto to_vector = [](const at::Tensor& t) { return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel()); };
  const std::vector<std::vector<int64_t>> prompts = {to_vector(random_ids(1, 7, 10)), to_vector(random_ids(1, 3, 11))};
  // Find a token the long row chooses past the original length and the short row never chooses: the stop token.
  const auto free_run = greedy_without_cache(m, prompts, 6, -1);
  int64_t stop = -1;
  for (size_t i = 2; i < free_run[0].size() && stop < 0; ++i)
    if (std::find(free_run[1].begin(), free_run[1].end(), free_run[0][i]) == free_run[1].end() &&
        std::find(free_run[0].begin(), free_run[0].begin() + static_cast<int64_t>(i), free_run[0][i]) ==
            free_run[0].begin() + static_cast<int64_t>(i))
      stop = free_run[0][i];
  ASSERT_GE(stop, 0) << "no usable stop token in this random model's output";
  const auto expected = greedy_without_cache(m, prompts, 8, stop);
  ASSERT_LT(expected[0].size(), 8u) << "the long row stops";

  model::Generator generator(m);
  model::SamplingParams params;
  params.max_new_tokens = 8;
  params.stop_token_ids = {stop};
  const auto results = generator.generate(prompts, params);
  EXPECT_EQ(results.at(0).tokens, expected[0]);
  EXPECT_EQ(results.at(1).tokens, expected[1]);
}
