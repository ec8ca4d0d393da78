// Parts of `swift deploy` (src/recipes/deploy.cpp) worth testing on their own.
#pragma once

#include <cstdint>

namespace swift::model {
struct ModelConfig;
}

namespace swift::recipes {

// The default --max_model_len, as vLLM derives it: max_position_embeddings, times rope_scaling.factor for linear
// and dynamic scaling; original_max_position_embeddings (else max_position_embeddings) times the factor for yarn;
// unscaled otherwise (llama3 configs already state their extended length).
int64_t default_max_model_len(const model::ModelConfig& config);

}  // namespace swift::recipes
