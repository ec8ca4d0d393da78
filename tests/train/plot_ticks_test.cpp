// Axis ticks: round steps, every multiple inside the range, labels with the step's decimals or a shared exponent.
#include "swift/train/plot_ticks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "swift/core/error.h"

namespace swift::train {
namespace {

void expect_values(const AxisTicks& t, const std::vector<double>& want) {
  ASSERT_EQ(t.values.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.values[i], want[i], 1e-12 * std::max(1.0, std::abs(want[i])));
}

TEST(PlotTicks, LossRangeGetsTenthsInStepsOfTwo) {
  // 0.2 is the smallest 1-2-5 step with at most 8 ticks in [0, 1.37]: 0.1 would need 14.
  const AxisTicks t = nice_ticks(0, 1.37, 8);
  EXPECT_DOUBLE_EQ(t.step, 0.2);
  expect_values(t, {0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2});
  EXPECT_EQ(format_ticks(t).labels, (std::vector<std::string>{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0", "1.2"}));
  EXPECT_EQ(format_ticks(t).exponent, 0);
  EXPECT_DOUBLE_EQ(nice_ticks(0, 1.37, 14).step, 0.1);
}

TEST(PlotTicks, StepsAreOneTwoOrFiveTimesAPowerOfTen) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-8, 8), unit(-1, 1);
  for (int trial = 0; trial < 2000; ++trial) {
    const double scale = std::pow(10.0, exponent(rng));
    double lo = unit(rng) * scale, hi = unit(rng) * scale;
    if (lo > hi) std::swap(lo, hi);
    if (!(hi - lo > scale * 1e-6)) continue;
    const int max_count = 2 + trial % 10;
    const AxisTicks t = nice_ticks(lo, hi, max_count);
    const double mantissa = t.step / std::pow(10.0, std::floor(std::log10(t.step) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9)
        << t.step;
    EXPECT_LE(t.values.size(), size_t(max_count)) << lo << " " << hi;
    EXPECT_GE(t.values.size(), 1u) << lo << " " << hi;
    for (double v : t.values) {
      EXPECT_GE(v, lo - t.step * 1e-6);
      EXPECT_LE(v, hi + t.step * 1e-6);
      EXPECT_NEAR(v / t.step, std::round(v / t.step), 1e-6);
    }
    // The next smaller 1-2-5 step would not fit: the ticks are as dense as allowed.
    const double smaller = std::abs(mantissa - 1) < 1e-9 ? t.step / 2 : std::abs(mantissa - 2) < 1e-9 ? t.step / 2
                                                                                                        : t.step * 0.4;
    const double fits = std::floor(hi / smaller + 1e-9) - std::ceil(lo / smaller - 1e-9) + 1;
    EXPECT_GT(fits, max_count) << lo << " " << hi << " step " << t.step;
  }
}

TEST(PlotTicks, NegativeRangesAndZeroWithoutSign) {
  const AxisTicks t = nice_ticks(-3.2, 4.9, 6);
  EXPECT_DOUBLE_EQ(t.step, 2);
  expect_values(t, {-2, 0, 2, 4});
  EXPECT_EQ(format_ticks(nice_ticks(-1, 1, 5)).labels,
            (std::vector<std::string>{"-1.0", "-0.5", "0.0", "0.5", "1.0"}));
  // 0.6 / 0.2 is 2.9999999999999996 in doubles: 0.6 must still be a tick.
  expect_values(nice_ticks(0, 1, 6), {0, 0.2, 0.4, 0.6, 0.8, 1.0});
}

TEST(PlotTicks, TrainingStepsTickOnWholeSteps) {
  const AxisTicks few = nice_ticks(0.5, 3.2, 10, true);
  EXPECT_DOUBLE_EQ(few.step, 1);
  expect_values(few, {1, 2, 3});
  EXPECT_EQ(format_ticks(few).labels, (std::vector<std::string>{"1", "2", "3"}));
  const AxisTicks many = nice_ticks(-5, 1055, 6, true);
  EXPECT_DOUBLE_EQ(many.step, 200);
  EXPECT_EQ(format_ticks(many).labels, (std::vector<std::string>{"0", "200", "400", "600", "800", "1000"}));
}

TEST(PlotTicks, LearningRatesShareAnExponent) {
  const AxisTicks t = nice_ticks(-5e-6, 1.05e-4, 6);
  EXPECT_DOUBLE_EQ(t.step, 2e-5);
  const TickLabels labels = format_ticks(t);
  EXPECT_EQ(labels.exponent, -4);
  EXPECT_EQ(labels.labels, (std::vector<std::string>{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}));
  EXPECT_EQ(exponent_text(labels.exponent), "1e-4");
  const TickLabels small = format_ticks(nice_ticks(1.5e-5, 8.5e-5, 4));  // 2e-5 .. 8e-5
  EXPECT_EQ(small.exponent, -5);
  EXPECT_EQ(small.labels, (std::vector<std::string>{"2", "4", "6", "8"}));
  const TickLabels huge = format_ticks(nice_ticks(0, 3.2e6, 4));
  EXPECT_EQ(huge.exponent, 6);
  EXPECT_EQ(huge.labels, (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(format_ticks(nice_ticks(0, 5000, 6)).exponent, 0);  // plain numbers below a million
  // Large values that vary little: "1.2345690" (x 1e6) says no more than "1234569.0", so they stay plain.
  const TickLabels close = format_ticks(nice_ticks(1234566.0, 1234569.0, 4));
  EXPECT_EQ(close.exponent, 0);
  EXPECT_EQ(close.labels.front(), "1234566");
}

TEST(PlotTicks, RejectsEmptyOrNonFiniteRanges) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW(nice_ticks(1, 1, 5), UsageError);
  EXPECT_THROW(nice_ticks(2, 1, 5), UsageError);
  EXPECT_THROW(nice_ticks(nan, 1, 5), UsageError);
  EXPECT_THROW(nice_ticks(0, inf, 5), UsageError);
  EXPECT_THROW(nice_ticks(0, 1, 1), UsageError);
}

}  // namespace
}  // namespace swift::train
