// swift deploy's default context length follows vLLM's derivation from config.json.
#include <gtest/gtest.h>

#include "swift/model/model_config.h"
#include "swift/recipes/deploy.h"

using namespace swift;

TEST(Deploy, DefaultMaxModelLenScalesWhereRopeScalingExtendsTheContext) {
  model::ModelConfig c;
  c.max_position_embeddings = 4096;
  EXPECT_EQ(recipes::default_max_model_len(c), 4096);
  c.rope.type = "linear";
  c.rope.factor = 2.0;
  EXPECT_EQ(recipes::default_max_model_len(c), 8192);
  c.rope.type = "dynamic";
  EXPECT_EQ(recipes::default_max_model_len(c), 8192);
  c.rope.type = "yarn";  // Qwen's long-context recipe: 32768 x 4
  c.rope.factor = 4.0;
  c.max_position_embeddings = 32768;
  EXPECT_EQ(recipes::default_max_model_len(c), 131072);
  c.rope.original_max_position_embeddings = 8192;
  EXPECT_EQ(recipes::default_max_model_len(c), 32768);
  c.rope.type = "llama3";  // Llama 3.1 states 131072 already
  c.max_position_embeddings = 131072;
  c.rope.factor = 8.0;
  EXPECT_EQ(recipes::default_max_model_len(c), 131072);
}
