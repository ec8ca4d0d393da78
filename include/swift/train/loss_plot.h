// Line charts of training curves (loss, eval loss, lr against step) as PNG files, like ms-swift's
// images/train_loss.png, without matplotlib: a white canvas, axes, one polyline per series, PNG via zlib.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace swift::train {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb& o) const { return r == o.r && g == o.g && b == o.b; }
  bool operator!=(const Rgb& o) const { return !(*this == o); }
};

// One curve: values[i] at steps[i] (same length; non-finite values break the line).
struct PlotSeries {
  std::string name;            // for the caller's bookkeeping; no legend text is drawn
  std::vector<double> steps;   // x
  std::vector<double> values;  // y
  std::optional<Rgb> color;    // Default: series_color(index)
  // Overrides LossPlotOptions::smoothing for this series (ms-swift smooths train/loss only, not eval/loss).
  std::optional<double> smoothing;
};

struct LossPlotOptions {
  int width = 800;   // pixels. Default: 800 (ms-swift: figsize (8, 5) at dpi 100)
  int height = 500;  // pixels. Default: 500
  // TensorBoard's debiased exponential smoothing weight in [0, 1). Default: 0 (none). When > 0 each series is
  // drawn raw in a pale tint of its colour and smoothed in its colour, as ms-swift does for smoothed keys (0.9).
  double smoothing = 0.0;
  int line_width = 2;        // pixels. Default: 2
  bool axis_labels = true;   // min/max of both axes in a built-in 3x5 digit font. Default: true
};

// The colour of the i-th series: ms-swift's #FF7043 first, then matplotlib's tab10 blue, green, red, ...
Rgb series_color(size_t index);
// The pale tint drawn under a smoothed series (30% colour on white).
Rgb pale_color(Rgb color);

// TensorBoard/ms-swift smoothing (swift.utils.tb_utils.tensorboard_smoothing): debiased EMA with `weight`.
std::vector<double> tensorboard_smoothing(const std::vector<double>& values, double weight);

// An 8-bit RGB raster, row-major.
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3]
  Rgb at(int x, int y) const;
  void set(int x, int y, Rgb c);  // ignores out-of-range pixels
};

// Draws the chart. Throws UsageError when a series has steps/values of different lengths or the size is
// smaller than 64x64.
Image render_loss_plot(const std::vector<PlotSeries>& series, const LossPlotOptions& options = {});
// PNG bytes (IHDR colour type 2, 8 bit, one zlib IDAT, IEND).
std::string encode_png(const Image& image);
// render + encode + atomic_write_file(path): a crash never leaves a half-written PNG.
void write_loss_plot(const std::filesystem::path& path, const std::vector<PlotSeries>& series,
                     const LossPlotOptions& options = {});

}  // namespace swift::train
