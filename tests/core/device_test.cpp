// --device, --torch_dtype and --num_threads parsing.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include "swift/core/device.h"
#include "swift/core/error.h"

using namespace swift;

TEST(Device, ParsesSpellings) {
  EXPECT_EQ(parse_device("cpu"), c10::Device(c10::kCPU));
  EXPECT_EQ(parse_device("CPU"), c10::Device(c10::kCPU));
  EXPECT_THROW(parse_device("tpu"), UsageError);
  EXPECT_THROW(parse_device("cuda:x"), UsageError);
  if (!torch::cuda::is_available()) {
    EXPECT_EQ(parse_device("auto"), c10::Device(c10::kCPU));
    try {
      parse_device("cuda:0");
      FAIL();
    } catch (const DeviceError& e) {
      EXPECT_EQ(e.code(), ExitCode::kDevice);
      EXPECT_NE(e.hint().find("--device cpu"), std::string::npos);
    }
  } else {
    EXPECT_EQ(parse_device("cuda"), c10::Device(c10::kCUDA, 0));
  }
}

TEST(Device, ParsesDtypes) {
  EXPECT_FALSE(parse_dtype("auto").has_value());
  EXPECT_EQ(parse_dtype("bfloat16"), c10::kBFloat16);
  EXPECT_EQ(parse_dtype("bf16"), c10::kBFloat16);
  EXPECT_EQ(parse_dtype("float16"), c10::kHalf);
  EXPECT_EQ(parse_dtype("fp32"), c10::kFloat);
  EXPECT_THROW(parse_dtype("int4"), UsageError);
  EXPECT_EQ(dtype_name(c10::kBFloat16), "bfloat16");
}

TEST(Device, ThreadCountFollowsFlagThenEnvironment) {
  EXPECT_EQ(configure_threads(1), 1);
  EXPECT_EQ(at::get_num_threads(), 1);
  setenv("OMP_NUM_THREADS", "2", 1);
  EXPECT_EQ(configure_threads(0), 2);
  unsetenv("OMP_NUM_THREADS");
  EXPECT_GE(configure_threads(0), 1);
}
