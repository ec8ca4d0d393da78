// --attn_impl / --use_flash_attn onto LibTorch's SDPA switches: the spellings, the contradictions, and that the
// switch changes the kernel LibTorch picks (on the CPU: its fused flash kernel or the unfused math one) without
// changing the result.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include "swift/core/attention_kernel.h"
#include "swift/core/error.h"

using namespace swift;

namespace {

// The switches are process-wide: every test leaves them as LibTorch starts.
class AttentionKernelTest : public ::testing::Test {
 protected:
  void TearDown() override { use_attention_kernel(AttentionKernel::kAuto); }
};

int64_t chosen_backend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return at::_fused_sdp_choice(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
}

}  // namespace

TEST_F(AttentionKernelTest, ParsesMsSwiftSpellings) {
  EXPECT_EQ(parse_attention_kernel(""), AttentionKernel::kAuto);
  EXPECT_EQ(parse_attention_kernel("sdpa"), AttentionKernel::kAuto);
  for (const char* flash : {"flash_attn", "flash_attention_2", "flash_attention_3"})
    EXPECT_EQ(parse_attention_kernel(flash), AttentionKernel::kFlash) << flash;
  EXPECT_EQ(parse_attention_kernel("memory_efficient"), AttentionKernel::kMemoryEfficient);
  EXPECT_EQ(parse_attention_kernel("eager"), AttentionKernel::kMath);
  EXPECT_THROW(parse_attention_kernel("flex_attention"), UsageError);
}

TEST_F(AttentionKernelTest, UseFlashAttnSwitch) {
  EXPECT_EQ(resolve_attention_kernel("", true, true), AttentionKernel::kFlash);
  EXPECT_EQ(resolve_attention_kernel("flash_attention_2", true, true), AttentionKernel::kFlash);
  EXPECT_EQ(resolve_attention_kernel("", true, false), AttentionKernel::kAuto);
  EXPECT_EQ(resolve_attention_kernel("eager", true, false), AttentionKernel::kMath);
  EXPECT_EQ(resolve_attention_kernel("eager", false, false), AttentionKernel::kMath);
  EXPECT_THROW(resolve_attention_kernel("eager", true, true), UsageError);
  EXPECT_THROW(resolve_attention_kernel("flash_attn", true, false), UsageError);
}

TEST_F(AttentionKernelTest, SetsLibTorchSwitches) {
  auto& ctx = at::globalContext();
  use_attention_kernel(AttentionKernel::kMath);
  EXPECT_FALSE(ctx.userEnabledFlashSDP());
  EXPECT_FALSE(ctx.userEnabledMemEfficientSDP());
  EXPECT_FALSE(ctx.userEnabledCuDNNSDP());
  EXPECT_TRUE(ctx.userEnabledMathSDP());
  use_attention_kernel(AttentionKernel::kFlash);
  EXPECT_TRUE(ctx.userEnabledFlashSDP());
  EXPECT_TRUE(ctx.userEnabledMemEfficientSDP());
  EXPECT_FALSE(ctx.userEnabledCuDNNSDP());
  use_attention_kernel(AttentionKernel::kMemoryEfficient);
  EXPECT_FALSE(ctx.userEnabledFlashSDP());
  EXPECT_TRUE(ctx.userEnabledMemEfficientSDP());
  use_attention_kernel(AttentionKernel::kAuto);
  EXPECT_TRUE(ctx.userEnabledFlashSDP() && ctx.userEnabledMemEfficientSDP() && ctx.userEnabledCuDNNSDP() &&
              ctx.userEnabledMathSDP());
}

TEST_F(AttentionKernelTest, ChangesTheKernelNotTheResult) {
  at::manual_seed(0);
  const auto q = at::randn({1, 2, 16, 8}), k = at::randn({1, 2, 16, 8}), v = at::randn({1, 2, 16, 8});
  use_attention_kernel(AttentionKernel::kFlash);
  EXPECT_EQ(chosen_backend(q, k, v), static_cast<int64_t>(at::SDPBackend::flash_attention));
  const auto flash = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
  use_attention_kernel(AttentionKernel::kMath);
  EXPECT_EQ(chosen_backend(q, k, v), static_cast<int64_t>(at::SDPBackend::math));
  const auto math = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
  EXPECT_TRUE(at::allclose(flash, math, 1e-5, 1e-5));
}
