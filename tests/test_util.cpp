// Temporary folders and tiny random models for tests.
#include "test_util.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace swift::test {

TempDir::TempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          (tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string reference_python() {
  if (const char* python = std::getenv("SWIFT_TEST_PYTHON")) return python;
  return std::string(SWIFT_SOURCE_DIR) + "/.venv/bin/python";
}

nlohmann::json tiny_config(const std::string& family) {
  nlohmann::json j = {{"model_type", family}, {"vocab_size", 128},          {"hidden_size", 64},
                      {"intermediate_size", 96}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                      {"num_key_value_heads", 2}, {"max_position_embeddings", 256}, {"rms_norm_eps", 1e-6},
                      {"rope_theta", 10000.0},   {"torch_dtype", "float32"}, {"tie_word_embeddings", false}};
  if (family == "qwen3" || family == "qwen3_moe") j["head_dim"] = 24;
  if (family == "mistral") j["sliding_window"] = 6;
  if (family == "qwen2_moe" || family == "qwen3_moe") {  // 4 experts, top 2; layer 0 dense, layer 1 sparse
    j["num_experts"] = 4;
    j["num_experts_per_tok"] = 2;
    j["moe_intermediate_size"] = 32;
    j["mlp_only_layers"] = {0};
    j["norm_topk_prob"] = family == "qwen3_moe";
    if (family == "qwen2_moe") j["shared_expert_intermediate_size"] = 48;
  }
  if (family.rfind("gemma", 0) == 0) j["head_dim"] = 16;
  if (family == "gemma2" || family == "gemma3_text") {  // layer 0 slides (window 6), layer 1 is global
    j["sliding_window"] = 6;
    j["query_pre_attn_scalar"] = 24;
  }
  if (family == "gemma2") {  // caps small enough to bite
    j["attn_logit_softcapping"] = 5.0;
    j["final_logit_softcapping"] = 3.0;
  }
  if (family == "gemma3_text") {  // as Gemma 3's released configs: the local layers' own RoPE base, a layer pattern
    j["sliding_window_pattern"] = 2;
    j["rope_theta"] = 1e6;
    j["rope_local_base_freq"] = 1e4;
  }
  if (family == "phi3") {  // fused qkv/gate_up; RoPE over 0.75 of each head (Phi-4-mini's share); a window everywhere
    j["sliding_window"] = 6;
    j["partial_rotary_factor"] = 0.75;
    j["pad_token_id"] = 0;
  }
  if (family == "glm4") {  // RoPE over the first half of each head, in adjacent pairs; GLM's sandwich norms
    j["head_dim"] = 16;
    j["partial_rotary_factor"] = 0.5;
    j["pad_token_id"] = 0;
    j["eos_token_id"] = 2;
  }
  if (family == "internlm3") {  // an explicit head_dim; biases on q/k/v only (Qwen2's shape)
    j["head_dim"] = 24;
    j["qkv_bias"] = true;
  }
  if (family == "mixtral") {  // 4 experts of intermediate_size, top 2, on every layer
    j["num_local_experts"] = 4;
    j["num_experts_per_tok"] = 2;
    j["intermediate_size"] = 32;
    j["sliding_window"] = nullptr;
  }
  if (family == "deepseek_v2" || family == "deepseek_v3") {  // MLA; layer 0 dense, layer 1 sparse with shared experts
    j["num_key_value_heads"] = 4;  // transformers expects every head its own key
    j["kv_lora_rank"] = 16;
    j["qk_nope_head_dim"] = 8;
    j["qk_rope_head_dim"] = 8;
    j["v_head_dim"] = 12;
    j["moe_intermediate_size"] = 16;
    j["num_experts_per_tok"] = 2;
    j["first_k_dense_replace"] = 1;
  }
  if (family == "deepseek_v2") {  // V2-Lite's shape: q_proj without a bottleneck, greedy softmax routing
    j["q_lora_rank"] = nullptr;
    j["n_routed_experts"] = 4;
    j["n_shared_experts"] = 2;
    j["topk_method"] = "greedy";
  }
  if (family == "deepseek_v3") {  // sigmoid routing within the 2 best of 4 groups, the correction bias, scaled weights
    j["q_lora_rank"] = 24;
    j["n_routed_experts"] = 8;
    j["n_shared_experts"] = 1;
    j["n_group"] = 4;
    j["topk_group"] = 2;
    j["routed_scaling_factor"] = 2.5;
    j["norm_topk_prob"] = true;
  }
  return j;
}

model::CausalLM random_model(const nlohmann::json& config, uint64_t seed, c10::ScalarType dtype) {
  auto cfg = model::parse_model_config(config, "test config");
  model::CausalLM m(cfg, at::TensorOptions().dtype(at::kFloat));
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (auto& item : m->named_parameters()) {
    auto& p = item.value();
    auto noise = at::randn(p.sizes(), gen, at::TensorOptions().dtype(at::kFloat));
    // Norm scales about 1 (Gemma's norms scale by 1 + weight).
    if (item.key().find("norm") != std::string::npos) p.copy_((cfg.norm_unit_offset ? 0 : 1) + 0.2 * noise);
    else p.copy_(0.15 * noise);
  }
  if (dtype != c10::kFloat) {
    m->to(dtype);
    for (auto& item : m->named_parameters())  // DeepSeek-V3's router bias stays fp32, as a loaded model keeps it
      if (item.key().find("e_score_correction_bias") != std::string::npos) item.value().set_data(item.value().to(at::kFloat));
  }
  m->eval();
  return m;
}

std::vector<data::Example> half_prompt_examples(const std::vector<int64_t>& lengths, uint64_t seed) {
  std::vector<data::Example> out;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  for (int64_t len : lengths) {
    data::Example e;
    auto ids = at::randint(0, 128, {len}, gen, at::TensorOptions().dtype(at::kLong));
    for (int64_t i = 0; i < len; ++i) {
      e.input_ids.push_back(ids[i].item<int64_t>());
      e.labels.push_back(i < len / 2 ? -100 : e.input_ids.back());
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace swift::test
