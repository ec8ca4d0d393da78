// The run folder's images/: which pictures, their names and how each tag is drawn, as ms-swift's plot_images; the
// names compared with ms-swift's own output on the same TensorBoard scalars (msswift_plot_images.py).
#include "swift/train/run_images.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "png_pixels.h"
#include "python_ref.h"
#include "swift/train/tensorboard_writer.h"

namespace swift::train {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

TEST(RunImages, SmoothingMatchesMsSwift) {
  // swift.utils.tb_utils.tensorboard_smoothing([1, 2, 3], 0.5): x = 1, 2.5, 4.25; norm = 1, 1.5, 1.75.
  const auto s = tensorboard_smoothing({1, 2, 3}, 0.5);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_DOUBLE_EQ(s[1], 2.5 / 1.5);
  EXPECT_DOUBLE_EQ(s[2], 4.25 / 1.75);
}

TEST(RunImages, FileNamesAsMsSwift) {
  EXPECT_EQ(image_file_name("train/loss"), "train_loss.png");
  EXPECT_EQ(image_file_name("train/learning_rate"), "train_learning_rate.png");
  EXPECT_EQ(image_file_name("eval/token_acc"), "eval_token_acc.png");
  EXPECT_EQ(image_file_name("train/rewards/chosen"), "train_rewards_chosen.png");
  EXPECT_EQ(image_file_name("train/a.b"), "train_a_b.png");
}

TEST(RunImages, HistoryKeepsEachTagInFirstLoggedOrder) {
  ScalarHistory h;
  h.add("train/loss", 5, 2.0);
  h.add("train/grad_norm", 5, 1.0);
  h.add("train/loss", 10, 1.5);
  h.add("eval/loss", 10, 1.7);
  ASSERT_EQ(h.series().size(), 3u);
  EXPECT_EQ(h.series()[0].tag, "train/loss");
  EXPECT_EQ(h.series()[0].steps, (std::vector<double>{5, 10}));
  EXPECT_EQ(h.series()[0].values, (std::vector<double>{2.0, 1.5}));
  EXPECT_EQ(h.series()[1].tag, "train/grad_norm");
  EXPECT_EQ(h.series()[2].tag, "eval/loss");
}

TEST(RunImages, SmoothedTagDrawsOriginalUnderSmoothed) {
  const ScalarHistory::Series loss{"train/loss", {1, 2, 3, 4}, {4, 2, 3, 1}};
  const MetricPlot p = metric_plot_for(loss, true);
  EXPECT_EQ(p.title, "train/loss");
  EXPECT_EQ(p.x_label, "step");
  EXPECT_EQ(p.y_label, "loss");
  ASSERT_EQ(p.curves.size(), 2u);
  EXPECT_EQ(p.curves[0].label, "original");
  EXPECT_EQ(p.curves[0].color, kRawCurveColor);
  EXPECT_EQ(p.curves[0].values, loss.values);
  EXPECT_EQ(p.curves[1].label, "smoothed");
  EXPECT_EQ(p.curves[1].color, kCurveColor);
  EXPECT_EQ(p.curves[1].values, tensorboard_smoothing(loss.values, kSmoothingWeight));
  // A NaN loss leaves a gap in the smoothed curve, not NaN from there on (TensorBoard skips it likewise).
  const MetricPlot gap = metric_plot_for({"train/loss", {1, 2, 3}, {4, kNan, 2}}, true);
  EXPECT_TRUE(std::isnan(gap.curves[1].values[1]));
  EXPECT_EQ(gap.curves[1].values[2], tensorboard_smoothing({4, 2}, kSmoothingWeight)[1]);
}

TEST(RunImages, OtherTagsAreOneOrangeCurve) {
  const MetricPlot lr = metric_plot_for({"train/learning_rate", {1, 2}, {1e-4, 5e-5}}, false);
  ASSERT_EQ(lr.curves.size(), 1u);
  EXPECT_EQ(lr.curves[0].color, kCurveColor);
  EXPECT_TRUE(lr.curves[0].label.empty());  // no legend, as ms-swift
  EXPECT_EQ(lr.y_label, "learning_rate");
  EXPECT_EQ(metric_plot_for({"train/rewards/chosen", {1}, {0.5}}, false).y_label, "rewards/chosen");
  // One point, even of a smoothed tag: a dot (ms-swift scatters it).
  EXPECT_EQ(metric_plot_for({"train/loss", {7}, {1.0}}, true).curves.size(), 1u);
}

TEST(RunImages, WritesAPicturePerTag) {
  test::TrainTempDir dir;
  ScalarHistory h;
  for (int step = 5; step <= 100; step += 5) {
    h.add("train/loss", step, 2.0 / std::sqrt(step));
    h.add("train/token_acc", step, 0.3 + step / 200.0);
    h.add("train/grad_norm", step, 1.0 + std::sin(step));
    h.add("train/learning_rate", step, 1e-4 * (1 - step / 100.0));
    if (step % 50 == 0) h.add("eval/loss", step, 1.8 / std::sqrt(step));
  }
  const auto written = write_run_images(dir.path() / "images", h);
  std::vector<std::string> names;
  for (const auto& p : written) names.push_back(p.filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"train_loss.png", "train_token_acc.png", "train_grad_norm.png",
                                             "train_learning_rate.png", "eval_loss.png"}));
  for (const auto& p : written) {
    const test::Pixels img = test::decode_png(test::read_file_bytes(p));
    EXPECT_EQ(img.width, 800) << p;
    EXPECT_EQ(img.height, 500) << p;
    EXPECT_GT(test::count_pixels(img, [](Rgb c) { return test::near(c, kCurveColor); }), 20u) << p;
  }
  // train/loss alone has the pale raw curve (tight match: the orange curve's faint edges have about its shade).
  auto raw_colored = [](Rgb c) { return test::near(c, kRawCurveColor, 2); };
  const size_t raw_in_loss = test::count_pixels(test::decode_png(test::read_file_bytes(written[0])), raw_colored);
  const size_t raw_in_acc = test::count_pixels(test::decode_png(test::read_file_bytes(written[1])), raw_colored);
  EXPECT_GT(raw_in_loss, 300 + 3 * raw_in_acc);
}

// Reference: ms-swift's plot_images on a TensorBoard file holding the same scalars writes the same file names.
TEST(RunImagesParity, SameFileNamesAsMsSwift) {
  test::TrainTempDir dir;
  ScalarHistory h;
  {
    TensorBoardWriter tb(dir.path() / "runs");
    auto log = [&](const std::string& tag, int64_t step, double v) {
      tb.add_scalar(tag, v, step);
      h.add(tag, step, v);
    };
    for (int step = 2; step <= 20; step += 2) {
      for (const char* tag : {"train/loss", "train/token_acc", "train/grad_norm", "train/learning_rate",
                              "train/rewards/chosen", "train/logps/rejected"})
        log(tag, step, 1.0 / step);
      if (step % 10 == 0) log("eval/loss", step, 2.0 / step);
    }
    log("eval/token_acc", 20, 0.5);  // one point
  }
  const auto written = write_run_images(dir.path() / "images", h);
  std::vector<std::string> ours;
  for (const auto& p : written) ours.push_back(p.filename().string());
  std::sort(ours.begin(), ours.end());
  const auto json_out = dir.path() / "msswift.json";
  const auto r = test::run_train_script("msswift_plot_images.py",
                                        "'" + (dir.path() / "runs").string() + "' '" +
                                            (dir.path() / "msswift_images").string() + "' '" + json_out.string() + "'",
                                        dir.path());
  SWIFT_RUN_REFERENCE_OR_SKIP(r);
  nlohmann::json got;
  std::ifstream(json_out) >> got;
  EXPECT_EQ(got["files"].get<std::vector<std::string>>(), ours);
  EXPECT_EQ(ours.size(), 8u);
}

}  // namespace
}  // namespace swift::train
