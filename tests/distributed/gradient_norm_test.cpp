// The gradient norm clipping and the logs use: the norm of all gradients together (parameters without one count
// as zero), and scaling them in place.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "swift/distributed/gradient_norm.h"

using namespace swift;

TEST(GradientNorm, IsTheNormOfAllGradientsTogether) {
  at::Tensor w = at::zeros({2, 2}).requires_grad_(true), b = at::zeros({3}).requires_grad_(true);
  at::Tensor frozen = at::zeros({4});
  EXPECT_EQ(distributed::gradient_norm({w, b}), 0.0);  // no gradients yet
  w.mutable_grad() = at::full({2, 2}, 1.0);             // four 1s
  b.mutable_grad() = at::tensor({2.0, 2.0, 1.0});       // 4 + 4 + 1
  EXPECT_NEAR(distributed::gradient_norm({w, b, frozen}), std::sqrt(4.0 + 9.0), 1e-6);
}

TEST(GradientNorm, ScalingMultipliesEveryGradient) {
  at::Tensor w = at::zeros({2}).requires_grad_(true), frozen = at::zeros({2});
  w.mutable_grad() = at::tensor({3.0, 4.0});
  distributed::scale_gradients({w, frozen}, 0.5);
  EXPECT_TRUE(at::equal(w.grad(), at::tensor({1.5, 2.0})));
  EXPECT_FALSE(frozen.grad().defined());
  EXPECT_NEAR(distributed::gradient_norm({w}), 2.5, 1e-6);
}
