// LoRA and DoRA parity with PEFT (PyPI): adapters PEFT writes load in swift with PEFT's logits and gradients, and
// adapters swift writes load in PEFT (PeftModel.from_pretrained) with swift's logits. Reference:
// tests/parity/peft_reference.py, PEFT on transformers' eager attention, fp32 on CPU. Tolerance, max abs diff on
// logits (|logits| <= ~6): 1e-4 for the LoRA cases (adapters 10x the size of W: PEFT's own fp32 logits are 3e-6 off
// its fp64 ones), 1e-5 for the DoRA cases (trained-size adapters); 1e-5 * max(1, max |grad|) on the gradients of
// mean(logits^2).
// Skipped (visibly) when the reference Python lacks peft; a failure in CI (CI=true), where scripts/setup.sh
// --tests installs it.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "swift/io/hf_config.h"
#include "swift/io/safetensors.h"
#include "swift/model/checkpoint.h"
#include "swift/tuners/lora.h"
#include "swift/tuners/lora_experts.h"
#include "swift/tuners/lora_linear.h"
#include "test_util.h"
#include "skip.h"

namespace fs = std::filesystem;
using namespace swift;

namespace {

class PeftParityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    python_ = test::reference_python();
    const std::string probe = "'" + python_ + "' -c 'import peft, transformers, safetensors' >/dev/null 2>&1";
    if (std::system(probe.c_str()) != 0) {
      skip_ = python_ + " cannot import peft+transformers+safetensors (run scripts/setup.sh --tests)";
      return;
    }
    dir_ = new test::TempDir("swift-peft");
    const std::string script = std::string(SWIFT_SOURCE_DIR) + "/tests/parity/peft_reference.py";
    const std::string cmd = "'" + python_ + "' '" + script + "' make '" + dir_->path().string() +
                            "' 2>&1 | grep -v -E 'Writing model shards|FutureWarning|warnings.warn|deprecated'";
    std::system(cmd.c_str());
    if (!fs::exists(dir_->path() / "manifest.json")) failed_ = "peft_reference.py make failed (see output above)";
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!failed_.empty()) FAIL() << failed_;
    if (!skip_.empty()) SWIFT_REFERENCE_MISSING("PEFT reference unavailable: " << skip_);
  }
  static std::vector<std::string> cases() {
    return io::read_json_file(dir_->path() / "manifest.json").at("cases").get<std::vector<std::string>>();
  }

  static inline std::string python_;
  static inline std::string skip_;    // the reference cannot be made here (a missing package)
  static inline std::string failed_;  // the reference script failed
  static inline test::TempDir* dir_ = nullptr;
};

double tolerance(const std::string& case_name) { return case_name.find("dora") != std::string::npos ? 1e-5 : 1e-4; }

at::Tensor logits_for(model::CausalLM& m, const at::Tensor& ids) {
  torch::NoGradGuard no_grad;
  model::ForwardArgs args;
  args.input_ids = ids;
  return m->forward(args);
}

}  // namespace

TEST_F(PeftParityTest, SwiftLoadsPeftAdapters) {
  for (const auto& name : cases()) {
    SCOPED_TRACE(name);
    const fs::path folder = dir_->path() / name;
    auto m = model::load_model(folder / "base");
    const auto config = tuners::load_adapter(m, folder / "adapter");
    m->eval();
    auto ref = io::SafetensorsFile::open(folder / "reference.safetensors");
    const double diff = (logits_for(m, ref->get("input_ids")) - ref->get("logits")).abs().max().item<double>();
    std::printf("  %-28s swift on PEFT's adapter: max abs diff %.2e (%zu %s layers, %zu expert weights)\n", name.c_str(),
                diff, tuners::lora_modules(m).size(), config.use_dora ? "DoRA" : "LoRA",
                tuners::expert_lora_weights(m).size());
    EXPECT_LE(diff, tolerance(name));
    EXPECT_FALSE(tuners::lora_modules(m).empty() && tuners::expert_lora_weights(m).empty());
    EXPECT_EQ(tuners::expert_lora_weights(m).empty(), config.target_parameters.empty());
    EXPECT_EQ(config.use_dora, name.find("dora") != std::string::npos);
    if (!config.use_dora) continue;
    // The magnitudes matter: put them back at ||W + sBA|| (plain LoRA's function) and PEFT's logits are far away.
    {
      torch::NoGradGuard no_grad;
      for (const auto& item : m->named_modules("", false))
        if (auto* linear = item.value()->as<model::LinearImpl>())
          if (auto lora = std::dynamic_pointer_cast<tuners::LoraLinear>(linear->adapter))
            lora->magnitude.copy_(lora->weight_norm(*linear, lora->magnitude.scalar_type()));
    }
    const double as_lora = (logits_for(m, ref->get("input_ids")) - ref->get("logits")).abs().max().item<double>();
    std::printf("  %-28s the same adapter without its magnitudes: max abs diff %.2e\n", name.c_str(), as_lora);
    EXPECT_GT(as_lora, 0.1);
  }
}

TEST_F(PeftParityTest, PeftLoadsSwiftAdapters) {
  for (const auto& name : cases()) {
    SCOPED_TRACE(name);
    const fs::path folder = dir_->path() / name;
    // The same adapter shape as PEFT's case, with swift's own random weights.
    auto m = model::load_model(folder / "base");
    auto config = tuners::parse_adapter_config(io::read_json_file(folder / "adapter" / "adapter_config.json"), name);
    config.init_weights = tuners::LoraInit::kRandom;
    tuners::apply_lora(m, config, 77);
    {
      torch::NoGradGuard no_grad;
      auto gen = at::make_generator<at::CPUGeneratorImpl>(78);
      for (auto& [pname, p] : tuners::trainable_parameters(m))
        if (pname.find("lora_magnitude_vector") != std::string::npos)  // trained off ||W + sBA||: DoRA != LoRA
          p.mul_(1 + 0.3 * (at::rand(p.sizes(), gen, at::kFloat) - 0.5));
        else if (pname.find("lora_") == std::string::npos)
          p.add_(0.05);  // a modules_to_save module that trained
    }
    m->eval();
    const fs::path out = folder / "swift_adapter";
    tuners::save_adapter(m, config, out);
    auto ids = at::arange(0, 20, at::kLong).mul(3).remainder(128).view({2, 10});
    io::save_safetensors(folder / "swift_logits.safetensors", {{"input_ids", ids}, {"logits", logits_for(m, ids)}});
    const std::string cmd = "'" + python_ + "' '" + std::string(SWIFT_SOURCE_DIR) + "/tests/parity/peft_reference.py' check '" +
                            (folder / "base").string() + "' '" + out.string() + "' '" +
                            (folder / "swift_logits.safetensors").string() + "' " + std::to_string(tolerance(name)) +
                            " 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << "PEFT disagrees with the adapter swift saved in " << out;
  }
}

// Gradients of mean(logits^2) for every trainable tensor (lora_A, lora_B, DoRA magnitudes, modules_to_save) in eval
// mode, against PEFT's on the same adapter; DoRA's detached weight norm shows here if it were not detached.
TEST_F(PeftParityTest, GradientsMatchPeft) {
  for (const auto& name : cases()) {
    SCOPED_TRACE(name);
    const fs::path folder = dir_->path() / name;
    auto m = model::load_model(folder / "base");
    tuners::load_adapter(m, folder / "adapter");
    m->eval();
    auto ref = io::SafetensorsFile::open(folder / "reference.safetensors");
    model::ForwardArgs args;
    args.input_ids = ref->get("input_ids");
    m->forward(args).pow(2).mean().backward();
    double worst = 0, largest = 0;
    size_t compared = 0;
    for (const auto& [pname, p] : tuners::trainable_parameters(m)) {
      const std::string key = "grad:base_model.model." + pname;
      ASSERT_TRUE(ref->contains(key)) << key;
      ASSERT_TRUE(p.grad().defined()) << pname;
      const auto want = ref->get(key);
      ASSERT_EQ(p.grad().sizes(), want.sizes()) << pname;
      const double diff = (p.grad() - want).abs().max().item<double>();
      const double size = want.abs().max().item<double>();
      EXPECT_LE(diff, 1e-5 * std::max(1.0, size)) << pname;  // relative for gradients above 1
      worst = std::max(worst, diff);
      largest = std::max(largest, size);
      ++compared;
    }
    size_t in_reference = 0;
    for (const auto& e : ref->entries()) in_reference += e.name.rfind("grad:", 0) == 0;
    EXPECT_EQ(compared, in_reference);  // no trainable tensor of PEFT's is missing here
    std::printf("  %-28s gradients vs PEFT: max abs diff %.2e over %zu tensors (max |grad| %.2f)\n", name.c_str(),
                worst, compared, largest);
  }
}
