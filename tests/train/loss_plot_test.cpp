// Loss plots: the PNG decoded here (chunk CRCs, zlib inflate, dimensions, series colours) and, when the .venv
// has pillow, opened by PIL (check_png.py).
#include "swift/train/loss_plot.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "python_ref.h"
#include "swift/core/error.h"

namespace swift::train {
namespace {

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

// A strict decoder for what encode_png writes: RGB8, no interlace, filter type 0 rows.
Image decode_png(const std::string& png) {
  Image img;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  size_t at = 8;
  std::string idat;
  std::vector<std::string> order;
  while (at + 12 <= png.size()) {
    const uint32_t len = be32(png, at);
    const std::string type = png.substr(at + 4, 4);
    const std::string body = png.substr(at + 4, 4 + len);
    const uint32_t crc = be32(png, at + 8 + len);
    EXPECT_EQ(crc, ::crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size())) << type << " CRC";
    const std::string data = body.substr(4);
    order.push_back(type);
    if (type == "IHDR") {
      img.width = int(be32(data, 0));
      img.height = int(be32(data, 4));
      EXPECT_EQ(data.substr(8), std::string("\x08\x02\x00\x00\x00", 5));
    } else if (type == "IDAT") {
      idat += data;
    }
    at += 12 + len;
  }
  EXPECT_EQ(at, png.size());
  EXPECT_EQ(order.front(), "IHDR");
  EXPECT_EQ(order.back(), "IEND");
  const size_t stride = size_t(img.width) * 3;
  std::string raw((stride + 1) * img.height, '\0');
  uLongf raw_size = raw.size();
  EXPECT_EQ(::uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_size,
                         reinterpret_cast<const Bytef*>(idat.data()), idat.size()),
            Z_OK);
  EXPECT_EQ(raw_size, raw.size());
  img.rgb.resize(stride * img.height);
  for (int y = 0; y < img.height; ++y) {
    EXPECT_EQ(raw[y * (stride + 1)], '\0') << "row " << y << " filter";
    std::memcpy(img.rgb.data() + y * stride, raw.data() + y * (stride + 1) + 1, stride);
  }
  return img;
}

size_t count_color(const Image& img, Rgb c) {
  size_t n = 0;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) n += img.at(x, y) == c;
  return n;
}

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

PlotSeries make_series(std::string name, std::vector<double> steps, std::vector<double> values) {
  PlotSeries s;
  s.name = std::move(name);
  s.steps = std::move(steps);
  s.values = std::move(values);
  return s;
}

std::vector<PlotSeries> train_and_eval() {
  PlotSeries train = make_series("train/loss", {}, {}), eval = make_series("eval/loss", {}, {});
  for (int s = 1; s <= 200; ++s) {
    train.steps.push_back(s);
    train.values.push_back(2.5 * std::exp(-s / 60.0) + 0.3 + 0.05 * std::sin(s * 0.7));
  }
  for (int s = 20; s <= 200; s += 20) {
    eval.steps.push_back(s);
    eval.values.push_back(2.5 * std::exp(-s / 70.0) + 0.4);
  }
  return {train, eval};
}

TEST(LossPlot, SmoothingMatchesMsSwift) {
  // swift.utils.tb_utils.tensorboard_smoothing([1, 2, 3], 0.5): x = 1, 2.5, 4.25; norm = 1, 1.5, 1.75.
  const auto s = tensorboard_smoothing({1, 2, 3}, 0.5);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_DOUBLE_EQ(s[1], 2.5 / 1.5);
  EXPECT_DOUBLE_EQ(s[2], 4.25 / 1.75);
}

TEST(LossPlot, RejectsMismatchedSeries) {
  EXPECT_THROW(render_loss_plot({make_series("bad", {1, 2}, {1})}), UsageError);
  LossPlotOptions o;
  o.width = 10;
  EXPECT_THROW(render_loss_plot({}, o), UsageError);
}

TEST(LossPlot, PngDecodesWithSeriesColours) {
  test::TrainTempDir dir;
  const auto path = dir.path() / "images" / "train_loss.png";
  LossPlotOptions o;
  o.width = 640;
  o.height = 400;
  write_loss_plot(path, train_and_eval(), o);
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const Image img = decode_png(ss.str());
  ASSERT_EQ(img.width, 640);
  ASSERT_EQ(img.height, 400);
  EXPECT_EQ(img.at(0, 0), (Rgb{255, 255, 255}));  // white background
  EXPECT_GT(count_color(img, series_color(0)), 400u);  // a 2-px polyline across ~550 px
  EXPECT_GT(count_color(img, series_color(1)), 400u);
  EXPECT_NE(series_color(0), series_color(1));
  // Nothing temporary left next to the file (atomic write).
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path.parent_path())) ++files;
  EXPECT_EQ(files, 1u);
}

TEST(LossPlot, SmoothedSeriesDrawsPaleRawAndSmoothedCurves) {
  LossPlotOptions o;
  o.smoothing = 0.9;
  auto series = train_and_eval();
  series[1].smoothing = 0.0;  // per-series override: eval/loss unsmoothed, as ms-swift plots it
  const Image img = render_loss_plot(series, o);
  EXPECT_GT(count_color(img, pale_color(series_color(0))), 100u);
  EXPECT_GT(count_color(img, series_color(0)), 400u);
  EXPECT_GT(count_color(img, series_color(1)), 400u);
  EXPECT_EQ(count_color(img, pale_color(series_color(1))), 0u);
  series[1].smoothing = 1.0;
  EXPECT_THROW(render_loss_plot(series, o), UsageError);
}

TEST(LossPlot, EdgeCasesDoNotCrash) {
  const double nan = std::nan("");
  const Image one = render_loss_plot({make_series("one", {5}, {1.0})});  // a lone point becomes a dot
  EXPECT_GT(count_color(one, series_color(0)), 10u);
  render_loss_plot({make_series("flat", {1, 2, 3}, {2, 2, 2}), make_series("nan", {1, 2, 3}, {nan, 1, nan}),
                    make_series("empty", {}, {})});
  render_loss_plot({});
}

// Reference: PIL.Image.open + load (full decode); counts of the series colours must agree with ours.
TEST(LossPlotParity, OpensWithPil) {
  test::TrainTempDir dir;
  const auto path = dir.path() / "train_loss.png";
  write_loss_plot(path, train_and_eval());
  const Image mine = render_loss_plot(train_and_eval());
  const auto json_out = dir.path() / "pil.json";
  const std::string c0 = hex(series_color(0)), c1 = hex(series_color(1));
  const auto r = test::run_train_script(
      "check_png.py", "'" + path.string() + "' '" + json_out.string() + "' " + c0 + " " + c1, dir.path());
  SWIFT_RUN_REFERENCE_OR_SKIP(r);
  nlohmann::json got;
  std::ifstream(json_out) >> got;
  EXPECT_EQ(got["format"], "PNG");
  EXPECT_EQ(got["mode"], "RGB");
  EXPECT_EQ(got["size"], nlohmann::json::array({800, 500}));
  EXPECT_EQ(got["counts"][c0].get<size_t>(), count_color(mine, series_color(0)));
  EXPECT_EQ(got["counts"][c1].get<size_t>(), count_color(mine, series_color(1)));
  EXPECT_GT(got["counts"][c0].get<size_t>(), 0u);
}

}  // namespace
}  // namespace swift::train
