// One training metric against the step as a PNG line chart, drawn with Cairo the way ms-swift's plot_images draws
// it with matplotlib (800x500, a title, ms-swift's orange), plus what matplotlib's default leaves out: axis labels,
// a light grid at round ticks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace swift::train {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
  bool operator!=(const Rgb& o) const { return !(*this == o); }
};

// ms-swift's colours (swift.utils.tb_utils): TB_COLOR_SMOOTH for a curve, a lone point or a smoothed curve;
// TB_COLOR for the raw curve drawn under a smoothed one.
inline constexpr Rgb kCurveColor{0xFF, 0x70, 0x43};
inline constexpr Rgb kRawCurveColor{0xFF, 0xE2, 0xD9};

// One polyline: values[i] at steps[i]. A non-finite value breaks the line; a point with no finite neighbour is a
// dot (ms-swift scatters a one-point series).
struct PlotCurve {
  // Its legend entry. The legend lists the labelled curves; it is left out when none is, or when it would take
  // more than half the plot area's width or height (small pictures).
  std::string label;
  std::vector<double> steps;
  std::vector<double> values;
  Rgb color = kCurveColor;
};

struct MetricPlot {
  std::string title;            // the TensorBoard tag, e.g. "train/loss"
  std::string x_label = "step";
  std::string y_label;          // the metric, e.g. "loss"
  std::vector<PlotCurve> curves;  // drawn in order, the last on top
  int width = 800;              // pixels. Default: 800x500, ms-swift's figsize (8, 5) at dpi 100
  int height = 500;
};

// The chart as PNG bytes (8-bit RGB). Throws UsageError when a curve's steps and values differ in length or the
// size is outside 320x200 .. 8000x8000, DataError when Cairo fails (out of memory).
std::string render_metric_plot(const MetricPlot& plot);
// render_metric_plot + atomic_write_file(path): a crash never leaves a half-written PNG. Creates the folder.
void write_metric_plot(const std::filesystem::path& path, const MetricPlot& plot);

}  // namespace swift::train
