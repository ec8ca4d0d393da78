// Quantization without a reference library: the 4-bit packing, NF4's error bound, the quantized Linear's forward
// and backward, saving and loading quantized models, and clear errors for bad configurations.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "swift/core/error.h"
#include "swift/io/hf_config.h"
#include "swift/io/safetensors_folder.h"
#include "swift/model/checkpoint.h"
#include "swift/quant/bnb_4bit.h"
#include "swift/quant/bnb_tensors.h"
#include "swift/quant/int8_weight.h"
#include "swift/quant/quant_config.h"
#include "swift/quant/quantized_linear.h"
#include "swift/quant/quantized_loading.h"
#include "swift/quant/quant_flags.h"
#include "test_util.h"
#include "skip.h"

namespace swift::quant {
namespace {

// A folder saved quantized, loaded as it is (no quantization asked for).
model::CausalLM load_saved_quantized(const std::filesystem::path& dir) {
  model::LoadOptions options;
  return quant::load_model(dir, options, std::nullopt);
}


TEST(FourBit, PacksTwoCodesPerByteHighNibbleFirst) {
  // One block of 64: -max, +max, 0 then zeros: NF4 codes 0 (-1), 15 (+1), 7 (0).
  at::Tensor w = at::zeros({1, 64});
  w[0][0] = -2.0;
  w[0][1] = 2.0;
  FourBitOptions o;
  o.double_quant = false;
  const auto q = quantize_4bit(w, o);
  ASSERT_EQ(q.packed.sizes(), at::IntArrayRef({32, 1}));
  EXPECT_EQ(q.packed[0][0].item<uint8_t>(), 0x0F);
  EXPECT_EQ(q.packed[1][0].item<uint8_t>(), 0x77);
  EXPECT_FLOAT_EQ(q.absmax[0].item<float>(), 2.0f);
  EXPECT_TRUE(at::equal(dequantize_4bit(q, at::kFloat), w));
  // An odd count pads the last byte's low nibble.
  const auto odd = quantize_4bit(at::ones({1, 65}), o);
  EXPECT_EQ(odd.packed.size(0), 33);
  EXPECT_EQ(odd.absmax.numel(), 2);
  EXPECT_TRUE(at::equal(dequantize_4bit(odd, at::kFloat), at::ones({1, 65})));
}

TEST(FourBit, Nf4ErrorWithinHalfTheLargestCodeGap) {
  at::manual_seed(0);
  const at::Tensor w = at::randn({128, 256}) * 0.02;
  for (const bool nested : {false, true}) {
    FourBitOptions o;
    o.double_quant = nested;
    const auto q = quantize_4bit(w, o);
    const at::Tensor back = dequantize_4bit(q, at::kFloat);
    // Per block, the error is at most half the widest NF4 gap (-1 to -0.6962) times the block's maximum (plus
    // the 8-bit rounding of that maximum under double quantization).
    const at::Tensor absmax = w.reshape({-1, 64}).abs().amax(1, true);
    const at::Tensor err = (back - w).reshape({-1, 64}).abs() / absmax;
    EXPECT_LE(err.max().item<double>(), 0.1520 + (nested ? 0.01 : 1e-6)) << nested;
    EXPECT_LE(((back - w).abs().mean() / w.abs().mean()).item<double>(), 0.12) << nested;
    // Packed data and per-block statistics: 4.127 bits per value (4.5 without double quantization), besides the
    // code tables every weight carries (16 + 256 floats).
    const int64_t tables = 64 + (nested ? 1024 : 0);
    EXPECT_NEAR((q.bytes() - tables) * 8.0 / w.numel(), nested ? 4 + 8.0 / 64 + 32.0 / (64 * 256) : 4.5, 1e-3);
  }
}

TEST(FourBit, Fp4RoundTripsItsOwnCodes) {
  const at::Tensor code = four_bit_code(FourBitType::kFP4);
  at::Tensor w = code.index_select(0, at::arange(16)).repeat({4}).view({1, 64}) * 3.0;
  FourBitOptions o;
  o.type = FourBitType::kFP4;
  o.double_quant = false;
  EXPECT_TRUE(at::allclose(dequantize_4bit(quantize_4bit(w, o), at::kFloat), w));
}

TEST(FourBit, BadConfigurationsAreClearErrors) {
  EXPECT_THROW(parse_four_bit_type("nf5", "--bnb_4bit_quant_type"), UsageError);
  EXPECT_THROW(check_four_bit_blocksize(100, "--bnb_4bit_blocksize"), UsageError);
  EXPECT_THROW(check_four_bit_blocksize(16, "--bnb_4bit_blocksize"), UsageError);
  EXPECT_NO_THROW(check_four_bit_blocksize(4096, "--bnb_4bit_blocksize"));
  FourBitOptions o;
  o.blocksize = 48;
  EXPECT_THROW(quantize_4bit(at::ones({4, 48}), o), UsageError);
  EXPECT_THROW(quantize_4bit(at::ones({4, 64}, at::kInt), FourBitOptions{}), UsageError);
}

// Saved tensors whose pieces do not fit each other are refused, naming the weight.
TEST(FourBit, MismatchedSavedStatisticsAreDataErrors) {
  const auto q = quantize_4bit(at::randn({32, 64}), FourBitOptions{});
  io::NamedTensors saved;
  append_four_bit_tensors("layer.weight", q, saved);
  std::map<std::string, at::Tensor> by_key(saved.begin(), saved.end());
  auto lookup = [&](const std::string& key) { return by_key.count(key) ? by_key[key] : at::Tensor(); };
  const auto back = four_bit_from_tensors("layer.weight", lookup, "test");
  EXPECT_TRUE(at::equal(dequantize_4bit(back, at::kFloat), dequantize_4bit(q, at::kFloat)));
  by_key["layer.weight"] = by_key["layer.weight"].narrow(0, 0, 100);  // fewer packed bytes than the shape needs
  try {
    four_bit_from_tensors("layer.weight", lookup, "test");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("layer.weight"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("packed bytes"), std::string::npos) << e.what();
  }
  by_key.erase("layer.weight.quant_state.bitsandbytes__nf4");
  EXPECT_THROW(four_bit_from_tensors("layer.weight", lookup, "test"), DataError);
}

TEST(Int8, RowwiseAbsmaxCodes) {
  at::Tensor w = at::tensor({1.0f, -0.5f, 0.25f, 2.0f, 0.0f, -4.0f}).view({2, 3});
  const auto q = quantize_int8(w);
  EXPECT_TRUE(at::equal(q.SCB, at::tensor({1.0f, 4.0f})));
  EXPECT_TRUE(at::equal(q.CB, at::tensor({127, -64, 32, 64, 0, -127}, at::kChar).view({2, 3})));
  EXPECT_TRUE(at::allclose(dequantize_int8(q, at::kFloat), w, 0, 4.0 / 127));
}

TEST(QuantConfigJson, RoundTripsTransformersKeys) {
  QuantConfig c;
  c.four_bit.type = FourBitType::kFP4;
  c.four_bit.double_quant = false;
  c.compute_dtype = c10::kBFloat16;
  const nlohmann::json config = {{"quantization_config", quantization_config_json(c)}};
  EXPECT_EQ(config["quantization_config"]["bnb_4bit_compute_dtype"], "bfloat16");
  EXPECT_EQ(config["quantization_config"]["load_in_4bit"], true);
  const auto back = read_quantization_config(config, "config.json");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->bits, 4);
  EXPECT_EQ(back->four_bit.type, FourBitType::kFP4);
  EXPECT_FALSE(back->four_bit.double_quant);
  EXPECT_FALSE(read_quantization_config(nlohmann::json::object(), "config.json"));
  EXPECT_THROW(read_quantization_config({{"quantization_config", {{"quant_method", "gptq"}}}}, "config.json"), DataError);
  EXPECT_THROW(read_quantization_config({{"quantization_config", {{"quant_method", "bitsandbytes"}}}}, "config.json"),
               DataError);  // neither 4 nor 8 bits
}

// llm_int8_skip_modules as transformers reads it: a prefix up to a module boundary (also as a regex), or a suffix.
TEST(QuantConfigJson, SkipModulesFollowTransformers) {
  QuantConfig c;
  c.skip_modules = {"model.layers.1.mlp", "o_proj", "model.layers.3.*"};
  EXPECT_TRUE(skipped(c, "model.layers.1.mlp.up_proj"));
  EXPECT_FALSE(skipped(c, "model.layers.11.mlp.up_proj"));  // "1" is not "11": a module boundary
  EXPECT_TRUE(skipped(c, "model.layers.0.self_attn.o_proj"));
  EXPECT_TRUE(skipped(c, "model.layers.3.self_attn.q_proj"));
  EXPECT_FALSE(skipped(c, "model.layers.0.self_attn.q_proj"));
  c.skip_modules = {"mlp.gate"};
  EXPECT_FALSE(skipped(c, "model.layers.0.mlp.gate_proj"));
}

// What an adapter's args.json says about its base: ms-swift quantizes only with a quant_method (its args.json may
// say quant_bits 4 without one), swift's qlora records its method, torch dtype spellings are read.
TEST(QuantConfigJson, AdapterArgsAsMsSwiftAndSwiftWriteThem) {
  EXPECT_FALSE(quant::quant_config_from_args({{"quant_method", nullptr}, {"quant_bits", 4}, {"train_type", "lora"}}));
  const auto bnb = quant::quant_config_from_args(
      {{"quant_method", "bnb"}, {"quant_bits", 4}, {"bnb_4bit_quant_type", "fp4"}, {"bnb_4bit_compute_dtype", "torch.bfloat16"},
       {"bnb_4bit_use_double_quant", false}});
  ASSERT_TRUE(bnb);
  EXPECT_EQ(bnb->four_bit.type, FourBitType::kFP4);
  EXPECT_FALSE(bnb->four_bit.double_quant);
  EXPECT_EQ(bnb->compute_dtype, c10::kBFloat16);
  const auto qlora = quant::quant_config_from_args({{"train_type", "qlora"}, {"quant_bits", 0}});
  ASSERT_TRUE(qlora);
  EXPECT_EQ(qlora->bits, 4);
  EXPECT_EQ(quant::quant_config_from_args({{"quant_method", "bnb"}, {"quant_bits", 8}})->bits, 8);
}

// The quantized matmul: the dense layer's output and input gradient with the dequantized weight, no gradient for
// the weight, and nothing but the packed weight kept for backward.
TEST(QuantizedLinear, ForwardAndBackwardUseTheDequantizedWeight) {
  at::manual_seed(1);
  model::Linear linear(64, 32, /*bias=*/true, at::TensorOptions());
  {
    at::NoGradGuard no_grad;
    linear->weight.normal_(0, 0.1);
    linear->bias.normal_(0, 0.1);
  }
  QuantConfig config;
  linear->set_quantized(quantize_weight(linear->weight, config));
  EXPECT_EQ(linear->weight.numel(), 0);
  EXPECT_FALSE(linear->weight.requires_grad());
  const at::Tensor dense = linear->dense_weight(at::kFloat);
  ASSERT_EQ(dense.sizes(), at::IntArrayRef({32, 64}));

  const at::Tensor x = at::randn({3, 5, 64}).requires_grad_(true);
  const at::Tensor y = linear->forward(x);
  const at::Tensor x2 = x.detach().clone().requires_grad_(true);
  const at::Tensor y2 = at::linear(x2, dense, linear->bias.detach());
  EXPECT_TRUE(at::allclose(y, y2, 1e-5, 1e-6));
  const at::Tensor g = at::randn_like(y);
  y.backward(g);
  y2.backward(g);
  EXPECT_TRUE(at::allclose(x.grad(), x2.grad(), 1e-5, 1e-6));
  EXPECT_FALSE(linear->weight.grad().defined());
  // bfloat16 input, float32 compute: the output comes back in the input's dtype.
  EXPECT_EQ(linear->forward(x.detach().to(at::kBFloat16)).scalar_type(), at::kBFloat16);
}

// A model quantized in memory saves as transformers' bitsandbytes folders and loads back bit for bit; merging
// a LoRA on a quantized base gives a dense layer.
TEST(QuantizedModel, SaveLoadIsBitExactAndDequantizeMakesItDense) {
  torch::NoGradGuard no_grad;
  test::TempDir dir;
  const auto config_json = test::tiny_config("qwen3");
  io::write_json_file(dir / "config.json", config_json);
  for (const int bits : {4, 8}) {
    SCOPED_TRACE(bits);
    model::LoadOptions options;
    options.init_strategy = "normal";
    QuantConfig config;
    config.bits = bits;
    auto model = quant::load_model(dir.path(), options, config);
    EXPECT_EQ(model::quantized_bytes(model).second, 14);
    const std::filesystem::path saved = dir / ("saved" + std::to_string(bits));
    model::save_model(model, saved);
    EXPECT_TRUE(io::read_json_file(saved / "config.json").contains("quantization_config"));
    auto again = load_saved_quantized(saved);  // no quantization asked: the folder says it is quantized
    model::ForwardArgs args;
    args.input_ids = at::arange(0, 12, at::kLong).view({2, 6});
    EXPECT_TRUE(at::equal(model->forward(args), again->forward(args)));
    EXPECT_EQ(model::count_parameters(again), model::count_parameters(model));
    const at::Tensor before = again->forward(args);
    EXPECT_EQ(dequantize_model(again), 14);
    EXPECT_TRUE(at::allclose(again->forward(args), before, 1e-5, 1e-5));
    model::save_model(again, dir / "dense");
    EXPECT_FALSE(io::read_json_file(dir / "dense" / "config.json").contains("quantization_config"));
    EXPECT_EQ(io::SafetensorsFolder::open(dir / "dense").get("model.layers.0.mlp.up_proj.weight").scalar_type(), at::kFloat);
    std::filesystem::remove_all(dir / "dense");
  }
}

}  // namespace
}  // namespace swift::quant

namespace swift::quant {
namespace {

// The fused CUDA dequantization (builds with SWIFT_WITH_CUDA_KERNELS) against the CPU path: the same values.
TEST(QuantizedCuda, DequantizeOnTheGpuEqualsTheCpu) {
  SWIFT_REQUIRE_GPU_OR_SKIP(torch::cuda::is_available(), "no CUDA device: the GPU path is checked by scripts/gpu_check.sh");
  at::manual_seed(3);
  for (const auto type : {FourBitType::kNF4, FourBitType::kFP4}) {
    for (const bool nested : {false, true}) {
      for (const auto dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
        FourBitOptions o;
        o.type = type;
        o.double_quant = nested;
        const at::Tensor w = (at::randn({96, 130}) * 0.05).to(dtype);  // an odd last block
        const auto gpu = quantize_4bit(w.to(at::kCUDA), o);
        EXPECT_TRUE(at::equal(gpu.packed.cpu(), quantize_4bit(w, o).packed));  // the 4-bit codes
        FourBitWeight on_cpu = gpu;  // the same state on the CPU: the kernel against the CPU loop
        for (at::Tensor* t : {&on_cpu.packed, &on_cpu.absmax, &on_cpu.code, &on_cpu.nested_absmax, &on_cpu.nested_code})
          if (t->defined()) *t = t->cpu();
        EXPECT_TRUE(at::equal(dequantize_4bit(gpu, dtype).cpu(), dequantize_4bit(on_cpu, dtype)));
      }
    }
  }
}

}  // namespace
}  // namespace swift::quant

namespace swift::quant {
namespace {

// --bnb_4bit_quant_storage: the packed bytes stored as another dtype (bitsandbytes' option for FSDP) save, load
// and compute the same; a weight whose bytes do not fill whole elements of it is a clear error.
TEST(QuantizedModel, QuantStorageDtypeRoundTrips) {
  torch::NoGradGuard no_grad;
  test::TempDir dir;
  io::write_json_file(dir / "config.json", test::tiny_config("llama"));
  model::LoadOptions options;
  options.init_strategy = "normal";
  QuantConfig config;
  config.four_bit.storage = at::kBFloat16;
  auto model = quant::load_model(dir.path(), options, config);
  model::save_model(model, dir / "saved");
  const auto folder = io::SafetensorsFolder::open(dir / "saved");
  const at::Tensor packed = folder.get("model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(packed.scalar_type(), at::kBFloat16);
  EXPECT_EQ(packed.numel() * 2, 96 * 64 / 2);  // 4 bits per value in 2-byte elements
  auto again = load_saved_quantized(dir / "saved");
  model::ForwardArgs args;
  args.input_ids = at::arange(0, 8, at::kLong).view({1, 8});
  EXPECT_TRUE(at::equal(model->forward(args), again->forward(args)));
  FourBitOptions odd;
  odd.storage = at::kFloat;
  EXPECT_THROW(quantize_4bit(at::ones({1, 66}), odd), UsageError);  // 33 bytes: not whole float32 elements
}

}  // namespace
}  // namespace swift::quant
