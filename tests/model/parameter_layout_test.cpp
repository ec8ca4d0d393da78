// What the model tells a parallel strategy and the optimizer about its parameters (model/parameter_layout.h): each
// parameter in exactly one place (its decoder layer, or outside the layers), the no-decay set transformers'
// Trainer uses (biases and norm weights) with adapters attached, and which parameters the model gathers around
// their own uses.
#include <gtest/gtest.h>

#include <set>

#include "swift/model/checkpoint.h"
#include "swift/model/model_config.h"
#include "swift/model/parameter_layout.h"
#include "swift/tuners/lora.h"
#include "test_util.h"

using namespace swift;

namespace {

// The rule by name that the module-based answer must agree with: "norm" in the name, or a bias.
std::set<std::string> no_decay_by_name(model::CausalLM& m) {
  std::set<std::string> out;
  for (const auto& item : m->named_parameters()) {
    const std::string& n = item.key();
    if (n.find("norm") != std::string::npos || (n.size() > 5 && n.compare(n.size() - 5, 5, ".bias") == 0)) out.insert(n);
  }
  return out;
}

}  // namespace

TEST(ParameterLayout, EveryParameterInItsLayerOrOutside) {
  for (const std::string family : {"llama", "qwen2", "qwen3", "mistral"}) {
    auto m = test::random_model(test::tiny_config(family), 1);
    tuners::LoraConfig lora;
    lora.use_dora = family == "qwen3";
    tuners::apply_lora(m, lora);
    const auto layout = model::parameter_layout(m);
    ASSERT_EQ(layout.layers.size(), static_cast<size_t>(m->config().num_hidden_layers)) << family;
    std::vector<int> seen(layout.names.size(), 0);
    for (size_t l = 0; l < layout.layers.size(); ++l) {
      ASSERT_FALSE(layout.layers[l].empty());
      for (size_t i : layout.layers[l]) {
        ++seen[i];
        EXPECT_EQ(layout.names[i].rfind("model.layers." + std::to_string(l) + ".", 0), 0u) << layout.names[i];
      }
      EXPECT_TRUE(std::is_sorted(layout.layers[l].begin(), layout.layers[l].end()));
    }
    for (size_t i : layout.outer) {
      ++seen[i];
      EXPECT_NE(layout.names[i].rfind("model.layers.", 0), 0u) << layout.names[i];
    }
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << layout.names[i];
    EXPECT_EQ(layout.names.size(), m->named_parameters().size());
  }
}

TEST(ParameterLayout, NoWeightDecayOnBiasesAndNorms) {
  for (const std::string family : {"llama", "qwen2", "qwen3", "mistral"}) {
    auto m = test::random_model(test::tiny_config(family), 2);
    EXPECT_EQ(model::no_weight_decay(m), no_decay_by_name(m)) << family;
    tuners::LoraConfig lora;
    lora.use_dora = true;
    lora.modules_to_save = {"lm_head"};
    if (!m->lm_head) lora.modules_to_save = {"embed_tokens"};
    tuners::apply_lora(m, lora);
    EXPECT_EQ(model::no_weight_decay(m), no_decay_by_name(m)) << family << " with DoRA";
  }
  auto qwen2 = test::random_model(test::tiny_config("qwen2"), 3);  // q/k/v biases
  EXPECT_TRUE(model::no_weight_decay(qwen2).count("model.layers.0.self_attn.q_proj.bias"));
  EXPECT_TRUE(model::no_weight_decay(qwen2).count("model.norm.weight"));
  EXPECT_FALSE(model::no_weight_decay(qwen2).count("model.layers.0.self_attn.q_proj.weight"));
}

TEST(ParameterLayout, GatheredAroundUseIsTheUntiedEmbeddingAndAnAdapterFreeHead) {
  auto config = test::tiny_config("llama");
  config["tie_word_embeddings"] = false;
  auto untied = test::random_model(config, 4);
  auto around = model::gathered_around_use(untied);
  ASSERT_EQ(around.size(), 2u);
  EXPECT_TRUE(around[0].is_same(untied->model->embed_tokens->weight));
  EXPECT_TRUE(around[1].is_same(untied->lm_head->weight));
  config["tie_word_embeddings"] = true;
  auto tied = test::random_model(config, 4);
  EXPECT_TRUE(model::gathered_around_use(tied).empty());  // held for the micro-batch instead (one exchange)
  tuners::LoraConfig lora;
  lora.target_modules = {"lm_head", "q_proj"};
  tuners::apply_lora(untied, lora);  // an adapter on the head: the caller gathers it with the adapter
  around = model::gathered_around_use(untied);
  ASSERT_EQ(around.size(), 1u);
  EXPECT_TRUE(around[0].is_same(untied->model->embed_tokens->weight));
}

// The size check before loading counts exactly what the model allocates, for every family's layout.
TEST(ParameterCount, ConfigCountEqualsTheModels) {
  for (const std::string family : {"llama", "qwen2", "qwen3", "mistral"}) {
    for (const bool tied : {false, true}) {
      auto config = test::tiny_config(family);
      config["tie_word_embeddings"] = tied;
      auto m = test::random_model(config, 5);
      EXPECT_EQ(model::parameter_count(m->config()), static_cast<double>(model::count_parameters(m))) << family << tied;
    }
  }
}
