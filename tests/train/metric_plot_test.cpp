// Metric pictures: the PNG read back by Cairo (and, when the .venv has pillow, by PIL: check_png.py), then checked
// for what a reader needs: the curve inside the frame, a title, axis labels, a legend, breaks at NaN, dots.
#include "swift/train/metric_plot.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "png_pixels.h"
#include "python_ref.h"
#include "swift/core/error.h"

namespace swift::train {
namespace {

using test::count_pixels;
using test::dark;
using test::decode_png;
using test::near;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

bool curve_colored(Rgb c) { return near(c, kCurveColor); }
// Tight: kRawCurveColor is about 20% of kCurveColor on white, the shade of the orange curve's faint antialiased
// edge, so a loose match would count that edge as the raw curve.
bool raw_colored(Rgb c) { return near(c, kRawCurveColor, 2); }

PlotCurve curve(std::vector<double> steps, std::vector<double> values, std::string label = "",
                Rgb color = kCurveColor) {
  return {std::move(label), std::move(steps), std::move(values), color};
}

// A falling, noisy loss over 100 steps.
PlotCurve noisy_loss() {
  PlotCurve c = curve({}, {});
  for (int s = 1; s <= 100; ++s) {
    c.steps.push_back(s);
    c.values.push_back(2.0 * std::exp(-s / 30.0) + 0.4 + 0.15 * std::sin(s * 1.7) * std::cos(s * 0.3));
  }
  return c;
}

MetricPlot loss_plot(std::string title = "train/loss", std::string y_label = "loss") {
  MetricPlot p;
  p.title = std::move(title);
  p.y_label = std::move(y_label);
  p.curves = {noisy_loss()};
  return p;
}

test::Pixels render(const MetricPlot& p) { return decode_png(render_metric_plot(p)); }

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

TEST(MetricPlot, PngDecodesAtTheRequestedSize) {
  const std::string png = render_metric_plot(loss_plot());
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  const test::Pixels img = decode_png(png);
  ASSERT_EQ(img.width, 800);
  ASSERT_EQ(img.height, 500);
  EXPECT_EQ(img.at(0, 0), (Rgb{255, 255, 255}));  // white background
  MetricPlot small = loss_plot();
  small.width = 320, small.height = 200;
  const test::Pixels s = render(small);
  EXPECT_EQ(s.width, 320);
  EXPECT_EQ(s.height, 200);
  EXPECT_GT(count_pixels(s, curve_colored), 100u);
}

TEST(MetricPlot, CurveRunsAcrossTheFrameInsideTheMargins) {
  const test::Pixels img = render(loss_plot());
  EXPECT_GT(count_pixels(img, curve_colored), 800u);  // a 2-pixel line over ~650 pixels
  const test::PixelBox box = test::bounding_box(img, curve_colored);
  ASSERT_FALSE(box.empty());
  // Left of it the y tick labels and axis label, below it the x ones, above it the title.
  EXPECT_GT(box.x0, 60);
  EXPECT_LT(box.x1, 790);
  EXPECT_GT(box.y0, 35);
  EXPECT_LT(box.y1, 440);
  EXPECT_GT(box.x1 - box.x0, 550);  // steps 1..100 span the width, less matplotlib's 5% margins
  EXPECT_GT(box.y1 - box.y0, 300);  // the loss falls over most of the height
  // The loss falls: its first points are high (small y), its last ones low.
  EXPECT_GT(count_pixels(img, box.x0, box.y0, box.x0 + 20, box.y0 + 40, curve_colored), 10u);
  EXPECT_EQ(count_pixels(img, box.x0, box.y0 + 200, box.x0 + 20, box.y1 + 1, curve_colored), 0u);
}

TEST(MetricPlot, TitleAndAxisLabelsAreDrawn) {
  const test::Pixels titled = render(loss_plot("train/loss", "loss"));
  MetricPlot bare_plot = loss_plot("", "");
  bare_plot.x_label = "";
  const test::Pixels bare = render(bare_plot);
  // Title band (top rows, centre): text only when there is a title.
  EXPECT_GT(count_pixels(titled, 300, 0, 500, 30, dark), 40u);
  EXPECT_EQ(count_pixels(bare, 0, 0, 800, 10, dark), 0u);
  // y label, rotated along the left edge.
  EXPECT_GT(count_pixels(titled, 0, 150, 30, 350, dark), 20u);
  EXPECT_EQ(count_pixels(bare, 0, 150, 20, 350, dark), 0u);
  // x label ("step") centred under the tick labels.
  EXPECT_GT(count_pixels(titled, 330, 475, 470, 500, dark), 20u);
  EXPECT_EQ(count_pixels(bare, 330, 480, 470, 500, dark), 0u);
  // Tick labels: numbers left of the frame and under it on both.
  EXPECT_GT(count_pixels(bare, 0, 40, 60, 440, dark), 100u);
  EXPECT_GT(count_pixels(bare, 60, 445, 800, 480, dark), 100u);
}

TEST(MetricPlot, SmoothedCurveOverPaleRawOneWithLegend) {
  MetricPlot p;
  p.title = "train/loss";
  p.y_label = "loss";
  PlotCurve raw = noisy_loss();
  raw.label = "original";
  raw.color = kRawCurveColor;
  PlotCurve smooth = raw;
  smooth.label = "smoothed";
  smooth.color = kCurveColor;
  for (size_t i = 1; i < smooth.values.size(); ++i) smooth.values[i] = 0.9 * smooth.values[i - 1] + 0.1 * raw.values[i];
  p.curves = {raw, smooth};
  const test::Pixels img = render(p);
  MetricPlot smoothed_only = p;
  smoothed_only.curves.erase(smoothed_only.curves.begin());
  const size_t edge_shades = count_pixels(render(smoothed_only), raw_colored);
  EXPECT_GT(count_pixels(img, raw_colored), 300 + 3 * edge_shades);
  EXPECT_GT(count_pixels(img, curve_colored), 600u);
  // The legend: its text and samples are what differ from the same curves unlabelled.
  MetricPlot unlabelled = p;
  for (auto& c : unlabelled.curves) c.label.clear();
  const test::Pixels plain = render(unlabelled);
  size_t legend_text = 0;
  for (int y = 40; y < 440; ++y)
    for (int x = 80; x < 790; ++x) legend_text += dark(img.at(x, y)) && !dark(plain.at(x, y));
  EXPECT_GT(legend_text, 60u);  // "original", "smoothed"
}

TEST(MetricPlot, LegendAvoidsTheCurve) {
  // The loss falls from the upper left to the lower right: matplotlib's "best" puts the legend upper right, where
  // it hides no curve pixel.
  MetricPlot labelled = loss_plot();
  labelled.curves[0].label = "loss";
  const test::Pixels with = render(labelled), without = render(loss_plot());
  size_t hidden = 0;
  test::PixelBox legend;
  for (int y = 0; y < with.height; ++y)
    for (int x = 0; x < with.width; ++x) {
      hidden += curve_colored(without.at(x, y)) && !curve_colored(with.at(x, y));
      if (with.at(x, y) != without.at(x, y))
        legend.x0 = std::min(legend.x0, x), legend.x1 = std::max(legend.x1, x), legend.y0 = std::min(legend.y0, y),
        legend.y1 = std::max(legend.y1, y);
    }
  EXPECT_EQ(hidden, 0u);
  ASSERT_FALSE(legend.empty());
  EXPECT_GT(legend.x0, 500);
  EXPECT_LT(legend.y1, 150);
}

TEST(MetricPlot, NonFiniteValuesBreakTheLine) {
  MetricPlot p;
  const double inf = std::numeric_limits<double>::infinity();
  p.curves = {curve({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 1, 1, kNan, inf, 1, 1, 1, 1})};
  const test::Pixels img = render(p);
  const test::PixelBox box = test::bounding_box(img, curve_colored);
  ASSERT_FALSE(box.empty());
  const auto column_has_curve = [&](double fraction) {
    const int x = box.x0 + static_cast<int>(fraction * (box.x1 - box.x0));
    return count_pixels(img, x, 0, x + 1, img.height, curve_colored) > 0;
  };
  EXPECT_TRUE(column_has_curve(0.15));
  EXPECT_TRUE(column_has_curve(0.85));
  EXPECT_FALSE(column_has_curve(0.45));  // steps 3 -> 6 hold no finite pair to join
  EXPECT_FALSE(column_has_curve(0.55));
}

TEST(MetricPlot, LonePointIsADot) {
  MetricPlot p;
  p.curves = {curve({5}, {0.7})};
  const test::Pixels img = render(p);
  const test::PixelBox box = test::bounding_box(img, curve_colored);
  ASSERT_FALSE(box.empty());
  EXPECT_GE(box.x1 - box.x0, 5);  // a disc of radius 4
  EXPECT_LE(box.x1 - box.x0, 10);
  EXPECT_GE(box.y1 - box.y0, 5);
  EXPECT_GT(count_pixels(img, curve_colored), 25u);
  // A finite point between NaNs in a longer series is a dot too, not lost.
  p.curves = {curve({1, 2, 3, 4, 5}, {1, kNan, 2, kNan, 1})};
  const test::Pixels gaps = render(p);
  EXPECT_GT(count_pixels(gaps, curve_colored), 60u);
}

TEST(MetricPlot, ConstantSeriesSitsMidHeight) {
  MetricPlot p;
  p.curves = {curve({1, 2, 3, 4}, {2.5, 2.5, 2.5, 2.5})};
  const test::Pixels img = render(p);
  const test::PixelBox box = test::bounding_box(img, curve_colored);
  ASSERT_FALSE(box.empty());
  EXPECT_LE(box.y1 - box.y0, 4);  // flat
  const int mid = (box.y0 + box.y1) / 2;
  EXPECT_GT(mid, 200);  // halfway down the plot area, which runs from ~40 to ~440
  EXPECT_LT(mid, 280);
  p.curves = {curve({1, 2}, {0, 0})};  // zero: opens around zero
  EXPECT_FALSE(test::bounding_box(render(p), curve_colored).empty());
}

TEST(MetricPlot, EmptyAndNonFiniteSeriesStillDraw) {
  MetricPlot p;
  p.title = "train/loss";
  EXPECT_EQ(render(p).width, 800);
  p.curves = {curve({}, {}), curve({1, 2}, {kNan, kNan})};
  const test::Pixels img = render(p);
  EXPECT_EQ(count_pixels(img, curve_colored), 0u);
  EXPECT_GT(count_pixels(img, 200, 200, 600, 300, [](Rgb c) { return c.r < 200 && c == Rgb{c.r, c.r, c.r}; }), 20u)
      << "says there are no finite values";
  // Extreme but finite values still get an axis: tiny, denormal, flat within rounding, huge.
  for (const std::vector<double>& values : std::vector<std::vector<double>>{
           {1e-7, 3e-7, 2e-7}, {1e-310, 2e-310, 3e-310}, {1.0, 1.0 + 1e-15, 1.0}, {-3e38, 3e38, 0}}) {
    MetricPlot extreme;
    extreme.curves = {curve({1, 2, 3}, values)};
    EXPECT_GT(count_pixels(render(extreme), curve_colored), 20u) << values[0];
  }
}

TEST(MetricPlot, RejectsBadInput) {
  MetricPlot p;
  p.curves = {curve({1, 2}, {1})};
  EXPECT_THROW(render_metric_plot(p), UsageError);
  MetricPlot tiny;
  tiny.width = 100;
  EXPECT_THROW(render_metric_plot(tiny), UsageError);
  tiny.width = 800, tiny.height = 20;
  EXPECT_THROW(render_metric_plot(tiny), UsageError);
  tiny.height = 100000;
  EXPECT_THROW(render_metric_plot(tiny), UsageError);
}

TEST(MetricPlot, WriteIsAtomicAndMakesTheFolder) {
  test::TrainTempDir dir;
  const auto path = dir.path() / "images" / "train_loss.png";
  write_metric_plot(path, loss_plot());
  EXPECT_EQ(decode_png(test::read_file_bytes(path)).width, 800);
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path.parent_path())) ++files;
  EXPECT_EQ(files, 1u);  // nothing temporary left next to it
}

// Reference: PIL.Image.open + load (a second, full decoder); its count of the curve colour must equal Cairo's.
TEST(MetricPlotParity, OpensWithPil) {
  test::TrainTempDir dir;
  const auto path = dir.path() / "train_loss.png";
  write_metric_plot(path, loss_plot());
  const test::Pixels mine = decode_png(test::read_file_bytes(path));
  const auto json_out = dir.path() / "pil.json";
  const std::string color = hex(kCurveColor);
  const auto r = test::run_train_script("check_png.py", "'" + path.string() + "' '" + json_out.string() + "' " + color,
                                        dir.path());
  SWIFT_RUN_REFERENCE_OR_SKIP(r);
  nlohmann::json got;
  std::ifstream(json_out) >> got;
  EXPECT_EQ(got["format"], "PNG");
  EXPECT_EQ(got["mode"], "RGB");
  EXPECT_EQ(got["size"], nlohmann::json::array({800, 500}));
  EXPECT_EQ(got["counts"][color].get<size_t>(), count_pixels(mine, [](Rgb c) { return c == kCurveColor; }));
  EXPECT_GT(got["counts"][color].get<size_t>(), 100u);
}

}  // namespace
}  // namespace swift::train
