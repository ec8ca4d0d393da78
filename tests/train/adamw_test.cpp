// The fused AdamW against LibTorch's reference torch::optim::AdamW (same formula, unfused), its state round
// trip (a resumed optimizer continues bit for bit), its load errors, and the fp16 loss scaler.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>

#include <limits>

#include "swift/core/error.h"
#include "swift/io/safetensors.h"
#include "swift/train/adamw.h"
#include "swift/train/grad_scaler.h"
#include "test_util.h"

using namespace swift;

namespace {

struct Params {
  at::Tensor w, b;  // w decays, b does not
};

Params make_params(uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  Params p;
  p.w = at::randn({7, 5}, gen).requires_grad_(true);
  p.b = at::randn({7}, gen).requires_grad_(true);
  return p;
}

// Deterministic pseudo-gradients for step `t`.
void set_grads(const Params& p, int t) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(100 + t);
  p.w.mutable_grad() = at::randn({7, 5}, gen) * (1.0 + t);
  p.b.mutable_grad() = at::randn({7}, gen) * 0.1;
}

std::unique_ptr<train::AdamW> make_fused(const Params& p, double lr) {
  auto opt = std::make_unique<train::AdamW>(
      std::vector<train::AdamWGroup>{{{{"w", p.w}}, 0.1}, {{{"b", p.b}}, 0.0}}, train::AdamWHyper{0.9, 0.95, 1e-8});
  opt->set_lr(lr);
  return opt;
}

double max_rel_diff(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

TEST(AdamW, MatchesLibTorchReferenceOverSteps) {
  Params fused = make_params(1), ref = make_params(1);
  auto opt = make_fused(fused, 1e-2);
  using torch::optim::AdamWOptions;
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{ref.w},
                      std::make_unique<AdamWOptions>(AdamWOptions(1e-2).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1)));
  groups.emplace_back(std::vector<at::Tensor>{ref.b},
                      std::make_unique<AdamWOptions>(AdamWOptions(1e-2).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.0)));
  torch::optim::AdamW reference(groups, AdamWOptions(1e-2));
  for (int t = 0; t < 20; ++t) {
    const double lr = 1e-2 * (1.0 - t / 40.0);  // a changing learning rate, as a schedule does
    opt->set_lr(lr);
    for (auto& g : reference.param_groups()) static_cast<AdamWOptions&>(g.options()).lr(lr);
    set_grads(fused, t);
    set_grads(ref, t);
    opt->step();
    reference.step();
    opt->zero_grad();
    reference.zero_grad();
  }
  EXPECT_LT(max_rel_diff(fused.w, ref.w), 1e-6);
  EXPECT_LT(max_rel_diff(fused.b, ref.b), 1e-6);
  EXPECT_FALSE(fused.w.grad().defined()) << "zero_grad sets gradients to none";
  // The parameters moved: the test is not comparing two untouched copies.
  EXPECT_GT(max_rel_diff(fused.w, make_params(1).w), 1e-2);
}

// ZeRO-Offload's path (the state and fp32 masters on the host, new values copied back): on the CPU the same
// updates bit for bit for fp32 parameters; bf16 parameters keep their dtype and follow the fp32 masters; the
// saved state resumes either way.
TEST(AdamW, OffloadedStateGivesTheSameUpdates) {
  Params plain = make_params(4), offloaded = make_params(4);
  auto a = make_fused(plain, 1e-2);
  auto b = make_fused(offloaded, 1e-2);
  b->offload_to(c10::Device(c10::kCPU));
  EXPECT_TRUE(b->offloaded());
  for (int t = 0; t < 5; ++t) {
    set_grads(plain, t);
    set_grads(offloaded, t);
    a->step();
    b->step();
  }
  EXPECT_TRUE(at::equal(plain.w, offloaded.w));
  EXPECT_TRUE(at::equal(plain.b, offloaded.b));
  test::TempDir dir;
  b->save(dir / "opt.safetensors");
  Params resumed = make_params(4);
  {
    at::NoGradGuard no_grad;
    resumed.w.copy_(offloaded.w);
    resumed.b.copy_(offloaded.b);
  }
  auto c = make_fused(resumed, 1e-2);
  c->offload_to(c10::Device(c10::kCPU));
  c->load(dir / "opt.safetensors");
  set_grads(plain, 5);
  set_grads(resumed, 5);
  a->step();
  c->step();
  EXPECT_TRUE(at::equal(plain.w, resumed.w));

  at::Tensor half = at::randn({4, 3}).to(at::kBFloat16).requires_grad_(true);
  train::AdamW bf16({{{{"h", half}}, 0.0}}, train::AdamWHyper{});
  bf16.offload_to(c10::Device(c10::kCPU));
  bf16.set_lr(1e-1);
  const at::Tensor before = half.detach().clone();
  half.mutable_grad() = at::ones_like(half);
  bf16.step();
  EXPECT_EQ(half.scalar_type(), at::kBFloat16);
  EXPECT_FALSE(at::equal(half.detach(), before));
  EXPECT_EQ(bf16.state_tensors().front().second.scalar_type(), at::kFloat);  // the moments of the fp32 master
}

TEST(AdamW, SkipsParametersWithoutGradient) {
  Params p = make_params(2);
  auto opt = make_fused(p, 1e-2);
  const at::Tensor b_before = p.b.detach().clone();
  p.w.mutable_grad() = at::ones({7, 5});
  opt->step();
  EXPECT_TRUE(at::equal(p.b, b_before));
  const auto state = opt->state_tensors();
  ASSERT_EQ(state.size(), 3u);  // only w has state
  EXPECT_EQ(state[0].first, "w.exp_avg");
  EXPECT_EQ(state[2].second.item<float>(), 1.0f);  // one step counted
}

TEST(AdamW, SavedStateContinuesBitExact) {
  test::TempDir dir;
  Params straight = make_params(3);
  auto opt = make_fused(straight, 1e-2);
  for (int t = 0; t < 6; ++t) {
    set_grads(straight, t);
    opt->step();
    opt->zero_grad();
    if (t == 2) opt->save(dir / "optimizer.safetensors");
  }
  // Replay: three steps, then a fresh optimizer that loads the saved state does the last three.
  Params resumed = make_params(3);
  {
    auto first = make_fused(resumed, 1e-2);
    for (int t = 0; t < 3; ++t) {
      set_grads(resumed, t);
      first->step();
      first->zero_grad();
    }
  }
  auto second = make_fused(resumed, 1e-2);
  second->load(dir / "optimizer.safetensors");
  for (int t = 3; t < 6; ++t) {
    set_grads(resumed, t);
    second->step();
    second->zero_grad();
  }
  EXPECT_TRUE(at::equal(straight.w, resumed.w));
  EXPECT_TRUE(at::equal(straight.b, resumed.b));
}

TEST(AdamW, LoadRejectsForeignOrMismatchedState) {
  test::TempDir dir;
  Params p = make_params(4);
  auto opt = make_fused(p, 1e-2);
  set_grads(p, 0);
  opt->step();
  opt->save(dir / "ok.safetensors");

  io::save_safetensors(dir / "foreign.safetensors", {{"w.exp_avg", at::zeros({7, 5})}});
  EXPECT_THROW(make_fused(make_params(4), 1e-2)->load(dir / "foreign.safetensors"), DataError);

  io::save_safetensors(dir / "shape.safetensors",
                       {{"w.exp_avg", at::zeros({5, 7})}, {"w.exp_avg_sq", at::zeros({5, 7})}, {"w.step", at::ones({})}},
                       {{"format", "swift-adamw"}});
  EXPECT_THROW(make_fused(make_params(4), 1e-2)->load(dir / "shape.safetensors"), DataError);

  // State for a parameter this optimizer does not train (another --target_modules).
  Params other = make_params(4);
  train::AdamW only_b({{{{"b", other.b}}, 0.0}}, {});
  try {
    only_b.load(dir / "ok.safetensors");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("w.exp_avg"), std::string::npos) << e.what();
  }
}

TEST(GradScaler, UnscalesDetectsOverflowAndAdjustsScale) {
  train::GradScaler scaler(train::GradScalerOptions{1024.0, 2.0, 0.5, 2});
  EXPECT_EQ(scaler.scale(at::ones({})).item<double>(), 1024.0);

  auto p = at::zeros({3}).requires_grad_(true);
  p.mutable_grad() = at::full({3}, 2048.0);
  EXPECT_FALSE(scaler.unscale({p}));
  EXPECT_TRUE(at::allclose(p.grad(), at::full({3}, 2.0)));
  scaler.update();
  EXPECT_EQ(scaler.current_scale(), 1024.0);  // one clean step of the two growth needs
  p.mutable_grad() = at::ones({3});
  EXPECT_FALSE(scaler.unscale({p}));
  scaler.update();
  EXPECT_EQ(scaler.current_scale(), 2048.0);  // grew after growth_interval clean steps

  p.mutable_grad() = at::tensor({1.0f, std::numeric_limits<float>::infinity(), 0.0f});
  EXPECT_TRUE(scaler.unscale({p}));
  scaler.update();
  EXPECT_EQ(scaler.current_scale(), 1024.0);  // backed off
  EXPECT_EQ(scaler.growth_tracker().item<int>(), 0);

  train::GradScaler restored;
  restored.restore(at::tensor(4096.0f), at::tensor(1, at::kInt));
  EXPECT_EQ(restored.current_scale(), 4096.0);
  EXPECT_EQ(restored.growth_tracker().item<int>(), 1);
}

}  // namespace
