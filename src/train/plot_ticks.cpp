// Tick positions and labels (see plot_ticks.h).
#include "swift/train/plot_ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "swift/core/error.h"

namespace swift::train {

namespace {

// Slack for the floating-point error of lo/step and log10: 0.6 / 0.2 is 2.9999999999999996.
constexpr double kEps = 1e-9;

int decimal_exponent(double v) { return static_cast<int>(std::floor(std::log10(v) + kEps)); }

int64_t tick_count(double lo, double hi, double step) {
  return static_cast<int64_t>(std::floor(hi / step + kEps) - std::ceil(lo / step - kEps)) + 1;
}

TickLabels labels_with_exponent(const AxisTicks& ticks, int exponent) {
  TickLabels out;
  out.exponent = exponent;
  const double scale = std::pow(10.0, exponent);
  const double step = ticks.step / scale;
  const int decimals = step > 0 ? std::max(0, -decimal_exponent(step)) : 0;
  for (double v : ticks.values) {
    double shown = v / scale;
    if (std::abs(shown) < step * 1e-6) shown = 0;  // no "-0.0"
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, shown);
    out.labels.emplace_back(buf);
  }
  return out;
}

size_t longest(const TickLabels& t) {
  size_t n = 0;
  for (const auto& l : t.labels) n = std::max(n, l.size());
  return n;
}

}  // namespace

AxisTicks nice_ticks(double lo, double hi, int max_count, bool integer_steps) {
  SWIFT_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo < hi, UsageError,
              "axis range must be finite with lo < hi, got [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
              "");
  SWIFT_CHECK(max_count >= 2, UsageError, "an axis needs room for at least 2 ticks, got " + std::to_string(max_count),
              "");
  // No step below span / (max_count - 1) can fit; start one decade under it and walk up through 1, 2, 5.
  int exponent = decimal_exponent((hi - lo) / (max_count - 1)) - 1;
  double step = 0;
  for (bool found = false; !found; ++exponent) {
    for (double mantissa : {1.0, 2.0, 5.0}) {
      step = mantissa * std::pow(10.0, exponent);
      if (integer_steps && step < 1) continue;
      if (tick_count(lo, hi, step) <= max_count) {
        found = true;
        break;
      }
    }
  }
  AxisTicks ticks;
  ticks.step = step;
  const auto first = static_cast<int64_t>(std::ceil(lo / step - kEps));
  const auto last = static_cast<int64_t>(std::floor(hi / step + kEps));
  for (int64_t i = first; i <= last; ++i) ticks.values.push_back(static_cast<double>(i) * step);  // i * step: no drift
  return ticks;
}

TickLabels format_ticks(const AxisTicks& ticks) {
  double largest = 0;
  for (double v : ticks.values) largest = std::max(largest, std::abs(v));
  TickLabels plain = labels_with_exponent(ticks, 0);
  if (largest == 0 || (largest >= 1e-3 && largest < 1e6)) return plain;
  // A shared power of ten only where it shortens the labels: "2" for 2e-5, but 1234567 stays as it is.
  TickLabels scaled = labels_with_exponent(ticks, decimal_exponent(largest));
  return longest(scaled) < longest(plain) ? scaled : plain;
}

std::string exponent_text(int exponent) { return "1e" + std::to_string(exponent); }

}  // namespace swift::train
