// swift rlhf --rlhf_type gkd's loss against ms-swift 4.6's gkd_loss and TRL's generalized_jsd_loss on fixed logits
// (tests/parity/make_gkd_reference.py): forward KL, reverse KL and two JSD mixtures at temperatures 1 and 0.9,
// the loss and its gradient with respect to the student's logits.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>

#include "swift/io/hf_config.h"
#include "swift/io/safetensors.h"
#include "swift/rlhf/gkd_loss.h"
#include "swift/rlhf/grpo_loss.h"
#include "skip.h"

namespace fs = std::filesystem;
using namespace swift;

namespace {

fs::path gkd_dir() {
  const char* env = std::getenv("SWIFT_PARITY_DIR");
  return env ? fs::path(env) / "gkd" : fs::path();
}

std::string skip_reason() {
  if (gkd_dir().empty()) return "SWIFT_PARITY_DIR is not set (run through ctest, which builds the reference first)";
  std::ifstream in(gkd_dir() / "SKIPPED");
  std::string reason;
  std::getline(in, reason);
  return "GKD reference unavailable: " + (reason.empty() ? "no " + gkd_dir().string() : reason);
}

}  // namespace

// The student's logits at the positions that predict completion tokens (the objective's selection: position t
// predicts labels[t + 1]), their divergence from the teacher's summed and divided by the tokens.
TEST(GkdParity, LossAndGradientsAreMsSwiftsAndTrls) {
  if (gkd_dir().empty() || !fs::exists(gkd_dir() / "manifest.json")) SWIFT_REFERENCE_MISSING(skip_reason());
  const auto manifest = io::read_json_file(gkd_dir() / "manifest.json");
  const auto batch = io::SafetensorsFile::open(gkd_dir() / "batch.safetensors");
  const at::Tensor student = batch->get("student"), teacher = batch->get("teacher"), labels = batch->get("labels");
  const int64_t T = student.size(1);
  const at::Tensor mask = rlhf::completion_mask(labels);  // [B, T - 1]
  int i = 0;
  for (const auto& c : manifest.at("cases")) {
    SCOPED_TRACE("beta " + std::to_string(c.at("beta").get<double>()) + " temperature " +
                 std::to_string(c.at("temperature").get<double>()));
    const at::Tensor logits = student.clone().set_requires_grad(true);
    const at::Tensor s = logits.narrow(1, 0, T - 1).index({mask}), t = teacher.narrow(1, 0, T - 1).index({mask});
    ASSERT_EQ(s.size(0), c.at("tokens").get<int64_t>());
    const at::Tensor loss = rlhf::generalized_jsd_sum(s, t, c.at("beta"), c.at("temperature")) / s.size(0);
    loss.backward();
    const double want = c.at("loss");
    EXPECT_NEAR(loss.item<double>(), want, 1e-5 * (1 + std::abs(want)));
    EXPECT_NEAR(loss.item<double>(), c.at("trl_loss").get<double>(), 1e-5 * (1 + std::abs(want)));
    const at::Tensor grad = batch->get("grad_" + std::to_string(i));
    EXPECT_LT((logits.grad() - grad).abs().max().item<double>(), 1e-6);
    ++i;
  }
  EXPECT_EQ(i, 8);
}
