// Learning-rate schedules against transformers' get_scheduler (lr_reference.py), every step, |diff| <= 1e-12
// relative; plus the flag errors.
#include "swift/train/lr_schedule.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "python_ref.h"
#include "swift/core/error.h"

namespace swift::train {
namespace {

TEST(LrSchedule, UnknownTypeNamesTheFlagAndListsTypes) {
  try {
    parse_lr_scheduler_type("cosine_with_restart");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(e.message().find("--lr_scheduler_type"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("cosine_with_restart"), std::string::npos) << e.message();
    for (const char* t : {"linear", "cosine", "constant", "constant_with_warmup", "cosine_with_min_lr"})
      EXPECT_NE(e.hint().find(t), std::string::npos) << e.hint();
    EXPECT_EQ(e.code(), ExitCode::kUsage);
  }
}

TEST(LrSchedule, NamesRoundTrip) {
  for (auto t : {LrSchedulerType::kLinear, LrSchedulerType::kCosine, LrSchedulerType::kConstant,
                 LrSchedulerType::kConstantWithWarmup, LrSchedulerType::kCosineWithMinLr})
    EXPECT_EQ(parse_lr_scheduler_type(lr_scheduler_type_name(t)), t);
}

TEST(LrSchedule, CosineWithMinLrNeedsExactlyOneFloor) {
  LrScheduleOptions o;
  o.type = LrSchedulerType::kCosineWithMinLr;
  o.total_steps = 10;
  EXPECT_THROW(LrSchedule{o}, UsageError);
  o.min_lr = 1e-6;
  o.min_lr_rate = 0.1;
  EXPECT_THROW(LrSchedule{o}, UsageError);
  o.min_lr_rate.reset();
  EXPECT_NO_THROW(LrSchedule{o});
}

TEST(LrSchedule, DecayingTypesNeedTotalSteps) {
  LrScheduleOptions o;
  o.type = LrSchedulerType::kCosine;
  EXPECT_THROW(LrSchedule{o}, UsageError);
  o.type = LrSchedulerType::kConstantWithWarmup;
  EXPECT_NO_THROW(LrSchedule{o});
}

TEST(LrSchedule, HandComputedLinear) {
  // warmup 2, total 6, lr 1: 0, 0.5, then (6 - s) / 4.
  LrScheduleOptions o;
  o.learning_rate = 1.0;
  o.warmup_steps = 2;
  o.total_steps = 6;
  const LrSchedule s(o);
  const double expected[] = {0.0, 0.5, 1.0, 0.75, 0.5, 0.25, 0.0, 0.0};
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(s.lr(i), expected[i]) << "step " << i;
}

TEST(LrSchedule, WarmupStepsAndRatio) {
  EXPECT_EQ(resolve_warmup_steps(5, 0.5, 100), 5);      // steps win over the ratio
  EXPECT_EQ(resolve_warmup_steps(0, 0.05, 100), 5);
  EXPECT_EQ(resolve_warmup_steps(0, 0.05, 7), 1);       // ceil, never 0 for a positive ratio
  EXPECT_EQ(resolve_warmup_steps(0, 0.07, 100), 8);     // 100 * 0.07 == 7.000000000000001, ceil -> 8 (as Python)
  EXPECT_EQ(resolve_warmup_steps(0.1, 0.0, 30), 3);     // transformers 5: warmup_steps < 1 is a ratio
  EXPECT_EQ(resolve_warmup_steps(0, 0, 100), 0);
  EXPECT_THROW(resolve_warmup_steps(0, 1.5, 100), UsageError);
  EXPECT_THROW(resolve_warmup_steps(-1, 0, 100), UsageError);
}

// Reference: transformers.get_scheduler over torch.optim.SGD, get_last_lr() after each step (lr_reference.py).
// Tolerance: 1e-12 relative (the C++ is an operation-for-operation transcription; in practice bit-equal).
TEST(LrScheduleParity, MatchesTransformersAtEveryStep) {
  test::TrainTempDir dir;
  const auto out = dir.path() / "lr.json";
  const auto r = test::run_train_script("lr_reference.py", "'" + out.string() + "'", dir.path());
  SWIFT_RUN_REFERENCE_OR_SKIP(r);
  nlohmann::json ref;
  std::ifstream(out) >> ref;
  ASSERT_GE(ref["cases"].size(), 10u);
  int compared = 0;
  for (const auto& c : ref["cases"]) {
    LrScheduleOptions o;
    o.type = parse_lr_scheduler_type(c["type"].get<std::string>());
    o.learning_rate = c["lr"].get<double>();
    o.warmup_steps = c["warmup"].get<int64_t>();
    o.total_steps = c["total"].get<int64_t>();
    if (c["kwargs"].contains("min_lr")) o.min_lr = c["kwargs"]["min_lr"].get<double>();
    if (c["kwargs"].contains("min_lr_rate")) o.min_lr_rate = c["kwargs"]["min_lr_rate"].get<double>();
    const LrSchedule schedule(o);
    const auto& lrs = c["lrs"];
    for (size_t step = 0; step < lrs.size(); ++step) {
      const double want = lrs[step].get<double>(), got = schedule.lr(static_cast<int64_t>(step));
      EXPECT_LE(std::abs(got - want), 1e-12 * std::max(std::abs(want), 1e-300))
          << c["type"] << " warmup " << o.warmup_steps << " total " << o.total_steps << " step " << step
          << ": swift " << got << " transformers " << want;
      ++compared;
    }
  }
  for (const auto& w : ref["ratios"])
    EXPECT_EQ(resolve_warmup_steps(0, w["ratio"].get<double>(), w["total"].get<int64_t>()), w["warmup"].get<int64_t>())
        << "ratio " << w["ratio"] << " total " << w["total"];
  RecordProperty("steps_compared", compared);
}

}  // namespace
}  // namespace swift::train
