// Axis ticks for the run folder's pictures: round positions (1, 2 or 5 times a power of ten) and labels with
// just the decimals the step needs, so a glance reads the scale.
#pragma once

#include <string>
#include <vector>

namespace swift::train {

struct AxisTicks {
  double step = 0;             // the distance between ticks: 1, 2 or 5 x 10^k
  std::vector<double> values;  // every multiple of `step` in [lo, hi], ascending
};

// The smallest step of the form {1, 2, 5} x 10^k (at least 1 with integer_steps, e.g. training steps) that puts at
// most `max_count` ticks in [lo, hi]. Throws UsageError unless lo < hi (both finite) and max_count >= 2.
AxisTicks nice_ticks(double lo, double hi, int max_count, bool integer_steps = false);

struct TickLabels {
  std::vector<std::string> labels;  // one per tick value
  int exponent = 0;                 // the labels show value / 10^exponent; 0: the values themselves
};

// "0.0", "0.2", ..., "1.4" (as many decimals as the step has). Ticks below 1e-3 or from 1e6 on in magnitude share
// a power of ten instead where that shortens them (learning rates: "2", "4", ... with exponent -5), as matplotlib
// writes "1e-5" by the axis.
TickLabels format_ticks(const AxisTicks& ticks);

// "1e-5", how a shared exponent is written next to the axis label.
std::string exponent_text(int exponent);

}  // namespace swift::train
