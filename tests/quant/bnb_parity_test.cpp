// bitsandbytes parity: swift's NF4/FP4 and LLM.int8 quantization against bitsandbytes (PyPI, CPU) on the same
// weights, and transformers' bitsandbytes folders (tests/parity/make_bnb_reference.py) loaded, quantized and saved
// by swift.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "swift/core/error.h"
#include "swift/io/hf_config.h"
#include "swift/io/safetensors.h"
#include "swift/io/safetensors_folder.h"
#include "swift/model/checkpoint.h"
#include "swift/quant/bnb_4bit.h"
#include "swift/quant/bnb_tensors.h"
#include "swift/quant/int8_weight.h"
#include "swift/quant/quantized_linear.h"
#include "swift/quant/quantized_loading.h"
#include "test_util.h"
#include "skip.h"

namespace fs = std::filesystem;
using namespace swift;

namespace {

// A folder saved quantized, loaded as it is (no quantization asked for).
model::CausalLM load_saved_quantized(const std::filesystem::path& dir) {
  model::LoadOptions options;
  return quant::load_model(dir, options, std::nullopt);
}


fs::path bnb_dir() {
  const char* env = std::getenv("SWIFT_PARITY_DIR");
  return env ? fs::path(env) / "bnb" : fs::path();
}

std::string skip_reason() {
  if (bnb_dir().empty()) return "SWIFT_PARITY_DIR is not set (run through ctest, which builds the reference first)";
  std::ifstream in(bnb_dir() / "SKIPPED");
  std::string reason;
  std::getline(in, reason);
  return "bitsandbytes reference unavailable: " + (reason.empty() ? std::string("no ") + bnb_dir().string() : reason);
}

class BnbParity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (bnb_dir().empty() || !fs::exists(bnb_dir() / "manifest.json")) SWIFT_REFERENCE_MISSING(skip_reason());
    ref_ = io::SafetensorsFile::open(bnb_dir() / "tensors.safetensors");
    cases_ = io::read_json_file(bnb_dir() / "manifest.json").at("cases").get<std::vector<std::string>>();
  }
  at::Tensor ref(const std::string& key) const { return ref_->get(key); }
  bool has(const std::string& key) const { return ref_->contains(key); }
  std::shared_ptr<io::SafetensorsFile> ref_;
  std::vector<std::string> cases_;
};

quant::FourBitOptions options_of(const std::string& name, bool nested) {
  quant::FourBitOptions o;
  o.type = name.rfind("fp4", 0) == 0 ? quant::FourBitType::kFP4 : quant::FourBitType::kNF4;
  o.blocksize = name.find("b128") != std::string::npos ? 128 : 64;
  o.double_quant = nested;
  return o;
}

}  // namespace

TEST_F(BnbParity, DynamicMapIsBitsandbytes) {
  EXPECT_TRUE(at::equal(quant::dynamic_8bit_code(), ref("dynamic_map")));
}

// The 4-bit codes, the fp32 statistics and the dequantized weights are bitsandbytes' bit for bit; the 8-bit codes
// of double quantization are the exact nearest ones, which bitsandbytes' CPU table search misses by one step on
// a few per mille of the block maxima.
TEST_F(BnbParity, FourBitQuantizationIsBitsandbytes) {
  for (const auto& name : cases_) {
    SCOPED_TRACE(name);
    const bool nested = has(name + ".offset");
    const auto q = quant::quantize_4bit(ref(name + ".weight"), options_of(name, nested));
    EXPECT_TRUE(at::equal(q.packed, ref(name + ".packed"))) << "packed 4-bit codes differ";
    EXPECT_TRUE(at::equal(q.code, ref(name + ".code")));
    if (!nested) {
      EXPECT_TRUE(at::equal(q.absmax, ref(name + ".absmax")));
      EXPECT_TRUE(at::equal(quant::dequantize_4bit(q, q.dtype), ref(name + ".dequantized")));
      continue;
    }
    EXPECT_EQ(q.offset, ref(name + ".offset").item<float>());
    EXPECT_TRUE(at::equal(q.nested_absmax, ref(name + ".nested_absmax")));
    EXPECT_TRUE(at::equal(q.nested_code, ref(name + ".nested_code")));
    EXPECT_TRUE(at::equal(q.absmax, ref(name + ".nested_codes_exact"))) << "8-bit codes differ from exact nearest";
    const at::Tensor steps = (q.absmax.to(at::kInt) - ref(name + ".absmax").to(at::kInt)).abs();
    EXPECT_LE(steps.max().item<int>(), 1);
    EXPECT_LE(steps.gt(0).sum().item<int64_t>() * 100, q.absmax.numel()) << "more than 1% of codes off";
    // bitsandbytes' own statistics, dequantized by swift: bitsandbytes' weights exactly.
    quant::FourBitWeight theirs = q;
    theirs.absmax = ref(name + ".absmax");
    EXPECT_TRUE(at::equal(quant::dequantize_4bit(theirs, theirs.dtype), ref(name + ".dequantized")));
  }
}

TEST_F(BnbParity, Int8IsBitsandbytes) {
  const auto q = quant::quantize_int8(ref("int8.weight"));
  EXPECT_TRUE(at::equal(q.SCB, ref("int8.SCB")));
  // bitsandbytes divides by a zero row maximum (NaN codes); swift keeps that row zero. Every other row is equal.
  const at::Tensor rows = ref("int8.SCB").ne(0);
  EXPECT_TRUE(at::equal(q.CB.index({rows}), ref("int8.CB").index({rows})));
  EXPECT_TRUE(q.CB.index({rows.logical_not()}).eq(0).all().item<bool>());
  EXPECT_TRUE(at::equal(quant::dequantize_int8(q, at::kFloat).index({rows}), ref("int8.dequantized").index({rows})));
}

// A folder transformers saved with load_in_4bit loads quantized and computes transformers' logits.
TEST_F(BnbParity, LoadsTransformersNf4Folder) {
  torch::NoGradGuard no_grad;
  auto model = load_saved_quantized(bnb_dir() / "llama_nf4");
  const auto [bytes, layers] = model::quantized_bytes(model);
  EXPECT_EQ(layers, 14);  // 2 layers x (q, k, v, o, gate, up, down)
  auto reference = io::SafetensorsFile::open(bnb_dir() / "llama_nf4" / "reference.safetensors");
  model::ForwardArgs args;
  args.input_ids = reference->get("input_ids");
  const at::Tensor logits = model->forward(args);
  // Against transformers on the saved weights dequantized by bitsandbytes (fp32), and against bitsandbytes' own CPU
  // matmul, which may compute in bfloat16.
  const double diff = (logits - reference->get("logits")).abs().max().item<double>();
  const double kernel_diff = (logits - reference->get("bnb_cpu_logits")).abs().max().item<double>();
  std::printf("  transformers nf4 folder: max abs logit diff %.2e (vs bitsandbytes' CPU kernel %.2e)\n", diff, kernel_diff);
  EXPECT_LE(diff, 1e-4);
  EXPECT_LE(kernel_diff, 0.25);
}

// Quantizing the dense folder on load gives the tensors transformers saved, and saving writes them back as
// transformers did: the same keys, shapes, dtypes and values.
TEST_F(BnbParity, QuantizesAndSavesAsTransformers) {
  torch::NoGradGuard no_grad;
  model::LoadOptions options;
  quant::QuantConfig config;  // NF4 with double quantization, as BitsAndBytesConfig(load_in_4bit, nf4, dq)
  auto model = quant::load_model(bnb_dir() / "llama_dense", options, config);
  test::TempDir dir;
  model::save_model(model, dir / "saved");
  auto theirs = io::SafetensorsFolder::open(bnb_dir() / "llama_nf4");
  auto ours = io::SafetensorsFolder::open(dir / "saved");
  EXPECT_EQ(ours.names(), theirs.names());
  for (const auto& name : theirs.names()) {
    SCOPED_TRACE(name);
    const at::Tensor a = ours.get(name), b = theirs.get(name);
    ASSERT_EQ(a.sizes(), b.sizes());
    ASSERT_EQ(a.scalar_type(), b.scalar_type());
    if (name.find("quant_state") != std::string::npos) {
      auto json_of = [](const at::Tensor& t) {
        return nlohmann::json::parse(std::string(reinterpret_cast<const char*>(t.data_ptr<uint8_t>()), t.numel()));
      };
      EXPECT_EQ(json_of(a), json_of(b));
    } else if (name.size() > 7 && name.compare(name.size() - 7, 7, ".absmax") == 0 && a.scalar_type() == at::kByte) {
      EXPECT_LE((a.to(at::kInt) - b.to(at::kInt)).abs().max().item<int>(), 1);  // see FourBitQuantizationIsBitsandbytes
    } else {
      EXPECT_TRUE(at::equal(a, b));
    }
  }
  const auto saved_config = io::read_json_file(dir / "saved" / "config.json");
  EXPECT_EQ(saved_config.at("quantization_config"), io::read_json_file(bnb_dir() / "llama_nf4" / "config.json").at("quantization_config"));
  // And it loads back bit for bit.
  auto again = load_saved_quantized(dir / "saved");
  auto reference = io::SafetensorsFile::open(bnb_dir() / "llama_nf4" / "reference.safetensors");
  model::ForwardArgs args;
  args.input_ids = reference->get("input_ids");
  EXPECT_TRUE(at::equal(again->forward(args), model->forward(args)));
}

// Broken quantized folders are DataErrors naming the tensor, not garbage.
TEST_F(BnbParity, BrokenStatisticsAreClearErrors) {
  test::TempDir dir;
  fs::copy(bnb_dir() / "llama_nf4", dir / "m", fs::copy_options::recursive);
  auto folder = io::SafetensorsFolder::open(dir / "m");
  io::NamedTensors tensors;
  for (const auto& name : folder.names())
    if (name != "model.layers.0.mlp.up_proj.weight.absmax") tensors.emplace_back(name, folder.get(name).clone());
  io::save_safetensors(dir / "m" / "model.safetensors", tensors);
  try {
    load_saved_quantized(dir / "m");
    FAIL() << "a missing absmax loaded";
  } catch (const swift::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.0.mlp.up_proj.weight.absmax"), std::string::npos) << e.what();
  }
}

// The other direction: quantized folders swift writes load in transformers + bitsandbytes and give swift's logits
// (4-bit NF4 with double quantization, FP4, and 8-bit; Llama and Qwen3).
TEST_F(BnbParity, TransformersLoadsWhatSwiftQuantizes) {
  const std::string python = test::reference_python();
  torch::NoGradGuard no_grad;
  test::TempDir root;
  std::string folders;
  struct Variant {
    const char* name;
    int bits;
    quant::FourBitType type;
    bool nested;
  };
  for (const std::string family : {"llama", "qwen3"}) {
    for (const Variant v : {Variant{"nf4", 4, quant::FourBitType::kNF4, true}, Variant{"fp4", 4, quant::FourBitType::kFP4, false},
                            Variant{"int8", 8, quant::FourBitType::kNF4, false}}) {
      const fs::path dense = root / (family + "_dense");
      if (!fs::exists(dense)) {
        auto config = test::tiny_config(family);
        // bitsandbytes' CPU matmul needs input widths that are multiples of 64 and outputs multiples of 32.
        config["intermediate_size"] = 128;
        if (family == "qwen3") config["head_dim"] = 32;
        auto model = test::random_model(config, 41);
        model::save_model(model, dense);
      }
      model::LoadOptions options;
      quant::QuantConfig config;
      config.bits = v.bits;
      config.four_bit.type = v.type;
      config.four_bit.double_quant = v.nested;
      auto model = quant::load_model(dense, options, config);
      const fs::path folder = root / (family + "_" + v.name);
      model::save_model(model, folder);
      auto ids = at::arange(0, 24, at::kLong).remainder(128).view({2, 12});
      model::ForwardArgs args;
      args.input_ids = ids;
      io::save_safetensors(folder / "swift_logits.safetensors", {{"input_ids", ids}, {"logits", model->forward(args)}});
      folders += " '" + folder.string() + "'";
    }
  }
  const std::string script = std::string(SWIFT_SOURCE_DIR) + "/tests/parity/check_swift_save.py";
  const int rc = std::system(("'" + python + "' '" + script + "'" + folders + " 2>&1").c_str());
  EXPECT_EQ(rc, 0) << "transformers disagrees with a quantized folder swift saved (see output above)";
}
