// LoRA parity with PEFT (PyPI): adapters PEFT writes load in swift with PEFT's logits, and adapters swift writes
// load in PEFT (PeftModel.from_pretrained) with swift's logits. Reference: tests/parity/peft_reference.py, PEFT on
// transformers' eager attention, fp32 on CPU. Tolerance: 1e-4 max abs diff on logits. Skipped (visibly) when the
// reference Python lacks peft; a failure in CI (CI=true), where scripts/setup.sh --tests installs it.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>

#include "swift/io/hf_config.h"
#include "swift/io/safetensors.h"
#include "swift/model/checkpoint.h"
#include "swift/tuners/lora.h"
#include "test_util.h"

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
    if (!fs::exists(dir_->path() / "manifest.json")) skip_ = "peft_reference.py make failed (see output above)";
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (skip_.empty()) return;
    if (const char* ci = std::getenv("CI"); ci && std::string(ci) == "true") FAIL() << skip_;
    GTEST_SKIP() << "PEFT reference unavailable: " << skip_;
  }
  static std::vector<std::string> cases() {
    return io::read_json_file(dir_->path() / "manifest.json").at("cases").get<std::vector<std::string>>();
  }

  static inline std::string python_;
  static inline std::string skip_;
  static inline test::TempDir* dir_ = nullptr;
};

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
    std::printf("  %-26s swift on PEFT's adapter: max abs diff %.2e (%zu LoRA layers)\n", name.c_str(), diff,
                tuners::lora_modules(m).size());
    EXPECT_LE(diff, 1e-4);
    EXPECT_FALSE(tuners::lora_modules(m).empty());
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
      for (auto& [pname, p] : tuners::trainable_parameters(m))
        if (pname.find("lora_") == std::string::npos) p.add_(0.05);  // a modules_to_save module that trained
    }
    m->eval();
    const fs::path out = folder / "swift_adapter";
    tuners::save_adapter(m, config, out);
    auto ids = at::arange(0, 20, at::kLong).mul(3).remainder(128).view({2, 10});
    io::save_safetensors(folder / "swift_logits.safetensors", {{"input_ids", ids}, {"logits", logits_for(m, ids)}});
    const std::string cmd = "'" + python_ + "' '" + std::string(SWIFT_SOURCE_DIR) + "/tests/parity/peft_reference.py' check '" +
                            (folder / "base").string() + "' '" + out.string() + "' '" +
                            (folder / "swift_logits.safetensors").string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << "PEFT disagrees with the adapter swift saved in " << out;
  }
}
