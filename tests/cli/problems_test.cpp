// Validation that reports every problem at once (cli/problems.h): one problem is raised as it was (its type and
// exit code), several together in one error that lists each with its hint.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "swift/cli/problems.h"

using namespace swift;

TEST(Problems, NoneRaisesNothing) {
  cli::Problems problems;
  problems.check(true, "never");
  EXPECT_TRUE(problems.empty());
  EXPECT_NO_THROW(problems.raise());
}

TEST(Problems, OneIsRaisedAsItWas) {
  cli::Problems problems;
  problems.add(DataError("--resume_from_checkpoint x is not a folder", "give a checkpoint folder"));
  try {
    problems.raise();
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(e.code(), ExitCode::kData);
    EXPECT_EQ(e.message(), "--resume_from_checkpoint x is not a folder");
    EXPECT_EQ(e.hint(), "give a checkpoint folder");
  }
}

TEST(Problems, SeveralAreListedTogether) {
  cli::Problems problems;
  problems.check(false, "--train_type foo is not available", "use full, lora or qlora");
  const int value = problems.collect([]() -> int { throw UsageError("--lora_dtype fp8 is not a dtype", "float32"); }, 7);
  EXPECT_EQ(value, 7);  // the fallback, so the other checks go on
  problems.check(false, "swift sft needs --model");
  EXPECT_EQ(problems.size(), 3u);
  try {
    problems.raise();
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    const std::string m = e.message();
    EXPECT_NE(m.find("3 problems"), std::string::npos) << m;
    EXPECT_NE(m.find("--train_type foo is not available (use full, lora or qlora)"), std::string::npos) << m;
    EXPECT_NE(m.find("--lora_dtype fp8 is not a dtype (float32)"), std::string::npos) << m;
    EXPECT_NE(m.find("swift sft needs --model"), std::string::npos) << m;
  }
}

TEST(Problems, RangeChecksNameTheFlagTheRangeAndTheValue) {
  cli::Problems problems;
  problems.at_least("save_steps", 0, 1, "e.g. 500");
  problems.in_range("adam_beta1", 2.0, 0, 1, "", false, /*max_open=*/true);
  problems.in_range("learning_rate", std::numeric_limits<double>::infinity(), 0, 1e300);
  problems.in_range("max_grad_norm", std::nan(""), 0, 1e300);
  problems.in_range("warmup_ratio", 0.5, 0, 1);  // fine
  problems.at_least("logging_steps", 5, 1);      // fine
  ASSERT_EQ(problems.size(), 4u);
  try {
    problems.raise();
  } catch (const UserError& e) {
    const std::string m = e.message();
    EXPECT_NE(m.find("--save_steps must be at least 1, got 0 (e.g. 500)"), std::string::npos) << m;
    EXPECT_NE(m.find("--adam_beta1 must be a finite number in [0, 1), got 2"), std::string::npos) << m;
    EXPECT_NE(m.find("--learning_rate must be a finite number in [0, 1e+300], got inf"), std::string::npos) << m;
    EXPECT_NE(m.find("--max_grad_norm must be a finite number in [0, 1e+300], got nan"), std::string::npos) << m;
  }
}
