// Draws a MetricPlot with Cairo (https://www.cairographics.org/manual/): antialiased lines, text in DejaVu Sans
// (matplotlib's default face; fontconfig substitutes another sans-serif where it is missing) and the PNG encoder.
// The layout measures its text, so long tick labels widen the margin instead of running into the axis.
#include "swift/train/metric_plot.h"

#include <cairo.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <tuple>
#include <utility>

#include "swift/core/atomic_write.h"
#include "swift/core/error.h"
#include "swift/train/plot_ticks.h"

namespace swift::train {

namespace {

using SurfacePtr = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using ContextPtr = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

constexpr int kMinWidth = 320, kMinHeight = 200, kMaxSide = 8000;  // below that the text crowds the curve out

constexpr const char* kFontFamily = "DejaVu Sans";
constexpr double kTitleSize = 16, kLabelSize = 14, kTickSize = 12, kLegendSize = 13;  // pixels
constexpr double kCurveWidth = 2;    // matplotlib's 1.5 pt at 100 dpi
constexpr double kMarkerRadius = 4;  // matplotlib's default scatter marker (36 pt^2)
constexpr double kTickLength = 4;
constexpr double kPad = 10;  // from the canvas edge to the outermost text
constexpr double kGap = 6;   // between a tick, its label and the axis label
constexpr double kMargin = 0.05;  // data to frame, each side (matplotlib's axes margins)

struct Color {
  double r, g, b;
};
constexpr Color kText{0.1, 0.1, 0.1};
constexpr Color kMuted{0.45, 0.45, 0.45};
constexpr Color kFrame{0.2, 0.2, 0.2};
constexpr Color kGrid{0.91, 0.91, 0.91};
constexpr Color kLegendEdge{0.8, 0.8, 0.8};

Color to_color(Rgb c) { return {c.r / 255.0, c.g / 255.0, c.b / 255.0}; }
void set_color(cairo_t* cr, Color c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

void use_font(cairo_t* cr, double size) {
  cairo_select_font_face(cr, kFontFamily, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

// The current font's line: ascent above the baseline plus descent below it.
double line_height(cairo_t* cr) {
  cairo_font_extents_t e;
  cairo_font_extents(cr, &e);
  return e.ascent + e.descent;
}

double ascent(cairo_t* cr) {
  cairo_font_extents_t e;
  cairo_font_extents(cr, &e);
  return e.ascent;
}

double text_width(cairo_t* cr, const std::string& s) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
}

// Text whose horizontal anchor (0 left, 0.5 centre, 1 right) is at x and whose baseline is at `baseline`.
void show_text(cairo_t* cr, const std::string& s, double x, double baseline, double anchor) {
  cairo_move_to(cr, x - anchor * text_width(cr, s), baseline);
  cairo_show_text(cr, s.c_str());
}

// Text whose ink is centred vertically on y (tick labels beside their tick).
void show_text_centred_on(cairo_t* cr, const std::string& s, double x, double y, double anchor) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  show_text(cr, s, x, y - (e.y_bearing + e.height / 2), anchor);
}

// A 1-pixel line on pixel centres, so it stays crisp instead of smearing over two rows.
double crisp(double v) { return std::floor(v) + 0.5; }

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }
  bool empty() const { return lo > hi; }
};

// The visible range: the data plus kMargin of its span on each side. A range too narrow to tick (one value, or a
// spread below double precision) first opens around its middle: by one step on the step axis, else by 5% of the
// value (0.05 around zero). No data shows [0, 1].
std::pair<double, double> axis_limits(Range r, bool step_axis) {
  if (r.empty()) return {0, 1};
  const double magnitude = std::max(std::abs(r.lo), std::abs(r.hi));
  if (r.hi - r.lo <= std::max(magnitude * 1e-9, 1e-200)) {
    const double mid = r.lo / 2 + r.hi / 2;
    const double pad = step_axis ? 1.0 : magnitude > 1e-200 ? magnitude * 0.05 : 0.05;
    r.lo = mid - pad, r.hi = mid + pad;
  }
  const double margin = (r.hi - r.lo) * kMargin;
  return {r.lo - margin, r.hi + margin};
}

bool finite_point(const PlotCurve& c, size_t i) { return std::isfinite(c.steps[i]) && std::isfinite(c.values[i]); }

// The plot area in canvas pixels and the data ranges it shows.
struct Frame {
  double left = 0, top = 0, right = 0, bottom = 0;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  double px(double x) const { return left + (x - x_lo) / (x_hi - x_lo) * (right - left); }
  double py(double y) const { return bottom - (y - y_lo) / (y_hi - y_lo) * (bottom - top); }
};

struct Axis {
  AxisTicks ticks;
  TickLabels labels;
};

Axis make_axis(double lo, double hi, int max_count, bool integer_steps) {
  Axis a;
  a.ticks = nice_ticks(lo, hi, std::max(2, max_count), integer_steps);
  a.labels = format_ticks(a.ticks);
  return a;
}

double widest(cairo_t* cr, const std::vector<std::string>& texts) {
  double w = 0;
  for (const auto& t : texts) w = std::max(w, text_width(cr, t));
  return w;
}

std::string with_exponent(const std::string& label, int exponent) {
  return exponent == 0 ? label : label + " (\xC3\x97" + exponent_text(exponent) + ")";  // U+00D7 multiplication sign
}

// The x axis's ticks: as many as fit with a label's width of space between neighbours.
Axis fit_x_axis(cairo_t* cr, const Frame& f) {
  const double width = f.right - f.left;
  for (int count = static_cast<int>(width / 60) + 1;; --count) {
    Axis a = make_axis(f.x_lo, f.x_hi, count, true);
    const double spacing = a.ticks.step / (f.x_hi - f.x_lo) * width;
    if (count <= 2 || spacing >= widest(cr, a.labels.labels) + 3 * kGap) return a;
  }
}

// Each curve's finite stretches in pixels; a stretch of one point is drawn as a dot.
std::vector<std::vector<std::pair<double, double>>> pixel_runs(const PlotCurve& c, const Frame& f) {
  std::vector<std::vector<std::pair<double, double>>> runs(1);
  for (size_t i = 0; i < c.steps.size(); ++i) {
    if (!finite_point(c, i)) {
      if (!runs.back().empty()) runs.emplace_back();
      continue;
    }
    runs.back().emplace_back(f.px(c.steps[i]), f.py(c.values[i]));
  }
  if (runs.back().empty()) runs.pop_back();
  return runs;
}

void draw_curve(cairo_t* cr, const PlotCurve& c, const Frame& f) {
  set_color(cr, to_color(c.color));
  for (const auto& run : pixel_runs(c, f)) {
    if (run.size() == 1) {
      cairo_new_sub_path(cr);
      cairo_arc(cr, run[0].first, run[0].second, kMarkerRadius, 0, 2 * M_PI);
      cairo_fill(cr);
      continue;
    }
    cairo_move_to(cr, run[0].first, run[0].second);
    for (size_t i = 1; i < run.size(); ++i) cairo_line_to(cr, run[i].first, run[i].second);
    cairo_stroke(cr);
  }
}

struct Box {
  double x, y, w, h;
  bool contains(double px, double py) const { return px >= x && px <= x + w && py >= y && py <= y + h; }
};

// How much of the curves a legend box would hide: their points, and points every 2 pixels along their segments.
size_t covered_points(const Box& box, const std::vector<PlotCurve>& curves, const Frame& f) {
  size_t n = 0;
  for (const auto& c : curves)
    for (const auto& run : pixel_runs(c, f))
      for (size_t i = 0; i < run.size(); ++i) {
        n += box.contains(run[i].first, run[i].second);
        if (i == 0) continue;
        const double dx = run[i].first - run[i - 1].first, dy = run[i].second - run[i - 1].second;
        const int pieces = static_cast<int>(std::hypot(dx, dy) / 2);
        for (int k = 1; k < pieces; ++k)
          n += box.contains(run[i - 1].first + dx * k / pieces, run[i - 1].second + dy * k / pieces);
      }
  return n;
}

// matplotlib's legend(loc="best"): the first of its candidate places that hides the fewest curve points.
void draw_legend(cairo_t* cr, const std::vector<PlotCurve>& curves, const Frame& f) {
  std::vector<const PlotCurve*> entries;
  for (const auto& c : curves)
    if (!c.label.empty()) entries.push_back(&c);
  if (entries.empty()) return;
  use_font(cr, kLegendSize);
  constexpr double kInset = 8, kSample = 26, kInner = 8;
  const double row = line_height(cr) + 2;
  cairo_text_extents_t x_extents;  // labels sit with their x-height centred on their sample line
  cairo_text_extents(cr, "x", &x_extents);
  const double x_height = x_extents.height;
  double text_w = 0;
  for (const auto* e : entries) text_w = std::max(text_w, text_width(cr, e->label));
  const double w = kInner + kSample + kInner + text_w + kInner, h = 2 * kInner + row * entries.size() - 2;
  if (w > (f.right - f.left) / 2 || h > (f.bottom - f.top) / 2) return;  // it would hide the curves it names
  const double x_left = f.left + kInset, x_right = f.right - kInset - w, x_mid = (f.left + f.right - w) / 2;
  const double y_top = f.top + kInset, y_bottom = f.bottom - kInset - h, y_mid = (f.top + f.bottom - h) / 2;
  // matplotlib's order: upper right, upper left, lower left, lower right, (center) right, center left, lower
  // center, upper center, center.
  const std::array<Box, 9> places = {{{x_right, y_top, w, h}, {x_left, y_top, w, h}, {x_left, y_bottom, w, h},
                                      {x_right, y_bottom, w, h}, {x_right, y_mid, w, h}, {x_left, y_mid, w, h},
                                      {x_mid, y_bottom, w, h}, {x_mid, y_top, w, h}, {x_mid, y_mid, w, h}}};
  Box best = places[0];
  size_t best_covered = std::numeric_limits<size_t>::max();
  for (const auto& b : places) {
    const size_t covered = covered_points(b, curves, f);
    if (covered < best_covered) best = b, best_covered = covered;
  }
  const double x = std::round(best.x) + 0.5, y = std::round(best.y) + 0.5, r = 3;
  cairo_new_sub_path(cr);
  cairo_arc(cr, x + w - r, y + r, r, -M_PI / 2, 0);
  cairo_arc(cr, x + w - r, y + h - r, r, 0, M_PI / 2);
  cairo_arc(cr, x + r, y + h - r, r, M_PI / 2, M_PI);
  cairo_arc(cr, x + r, y + r, r, M_PI, 3 * M_PI / 2);
  cairo_close_path(cr);
  cairo_set_source_rgba(cr, 1, 1, 1, 0.85);  // matplotlib's framealpha 0.8: a curve behind still shows faintly
  cairo_fill_preserve(cr);
  cairo_set_line_width(cr, 1);
  set_color(cr, kLegendEdge);
  cairo_stroke(cr);
  for (size_t i = 0; i < entries.size(); ++i) {
    const double mid = y + kInner + row * i + (row - 2) / 2;
    set_color(cr, to_color(entries[i]->color));
    cairo_set_line_width(cr, kCurveWidth);
    cairo_move_to(cr, x + kInner, mid);
    cairo_line_to(cr, x + kInner + kSample, mid);
    cairo_stroke(cr);
    set_color(cr, kText);
    show_text(cr, entries[i]->label, x + 2 * kInner + kSample, mid + x_height / 2, 0);
  }
}

void check_plot(const MetricPlot& plot) {
  SWIFT_CHECK(plot.width >= kMinWidth && plot.height >= kMinHeight && plot.width <= kMaxSide &&
                  plot.height <= kMaxSide,
              UsageError,
              "plot '" + plot.title + "' size must be between " + std::to_string(kMinWidth) + "x" +
                  std::to_string(kMinHeight) + " and " + std::to_string(kMaxSide) + "x" + std::to_string(kMaxSide) +
                  ", got " + std::to_string(plot.width) + "x" + std::to_string(plot.height),
              "");
  for (const auto& c : plot.curves)
    SWIFT_CHECK(c.steps.size() == c.values.size(), UsageError,
                "plot '" + plot.title + "' curve '" + c.label + "' has " + std::to_string(c.steps.size()) +
                    " steps but " + std::to_string(c.values.size()) + " values",
                "");
}

void check_cairo(cairo_status_t status, const MetricPlot& plot) {
  SWIFT_CHECK(status == CAIRO_STATUS_SUCCESS, DataError,
              "drawing plot '" + plot.title + "': cairo: " + cairo_status_to_string(status), "");
}

cairo_status_t append_png_bytes(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

std::string render_metric_plot(const MetricPlot& plot) {
  check_plot(plot);
  const double width = plot.width, height = plot.height;
  SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, plot.width, plot.height), cairo_surface_destroy);
  check_cairo(cairo_surface_status(surface.get()), plot);
  ContextPtr context(cairo_create(surface.get()), cairo_destroy);
  cairo_t* cr = context.get();
  check_cairo(cairo_status(cr), plot);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);

  Range xs, ys;
  for (const auto& c : plot.curves)
    for (size_t i = 0; i < c.steps.size(); ++i)
      if (finite_point(c, i)) xs.add(c.steps[i]), ys.add(c.values[i]);
  Frame f;
  std::tie(f.x_lo, f.x_hi) = axis_limits(xs, true);
  std::tie(f.y_lo, f.y_hi) = axis_limits(ys, false);

  // Vertical layout: title band, plot area, then tick labels and the x label.
  use_font(cr, kTitleSize);
  const double title_height = plot.title.empty() ? 0 : line_height(cr) + kGap;
  const double title_baseline = kPad + ascent(cr);
  use_font(cr, kLabelSize);
  const double label_height = line_height(cr), label_ascent = ascent(cr);
  use_font(cr, kTickSize);
  const double tick_label_height = line_height(cr);
  f.top = kPad + title_height + kGap;
  f.bottom = height - (kPad + label_height + kGap + tick_label_height + kGap + kTickLength);

  // Horizontal layout: the y tick labels decide the left margin; the x labels may widen the right one.
  const Axis y_axis = make_axis(f.y_lo, f.y_hi, static_cast<int>((f.bottom - f.top) / 55) + 1, false);
  const double y_label_room = widest(cr, y_axis.labels.labels);
  f.left = kPad + label_height + kGap + y_label_room + kGap + kTickLength;
  f.right = width - 2 * kPad;
  Axis x_axis = fit_x_axis(cr, f);
  if (!x_axis.ticks.values.empty()) {
    const double overhang = f.px(x_axis.ticks.values.back()) + text_width(cr, x_axis.labels.labels.back()) / 2 -
                            (width - kPad);
    if (overhang > 0) {
      f.right -= overhang;
      x_axis = fit_x_axis(cr, f);
    }
  }

  // Grid under everything.
  cairo_set_line_width(cr, 1);
  set_color(cr, kGrid);
  for (double v : x_axis.ticks.values) {
    cairo_move_to(cr, crisp(f.px(v)), f.top);
    cairo_line_to(cr, crisp(f.px(v)), f.bottom);
  }
  for (double v : y_axis.ticks.values) {
    cairo_move_to(cr, f.left, crisp(f.py(v)));
    cairo_line_to(cr, f.right, crisp(f.py(v)));
  }
  cairo_stroke(cr);

  // Curves, clipped to the plot area.
  cairo_save(cr);
  cairo_rectangle(cr, f.left, f.top, f.right - f.left, f.bottom - f.top);
  cairo_clip(cr);
  cairo_set_line_width(cr, kCurveWidth);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
  for (const auto& c : plot.curves) draw_curve(cr, c, f);
  cairo_restore(cr);

  // Frame and ticks on top, so a curve at the edge does not hide them.
  cairo_set_line_width(cr, 1);
  set_color(cr, kFrame);
  cairo_rectangle(cr, crisp(f.left), crisp(f.top), std::round(f.right - f.left), std::round(f.bottom - f.top));
  for (double v : x_axis.ticks.values) {
    cairo_move_to(cr, crisp(f.px(v)), crisp(f.bottom));
    cairo_line_to(cr, crisp(f.px(v)), crisp(f.bottom) + kTickLength);
  }
  for (double v : y_axis.ticks.values) {
    cairo_move_to(cr, crisp(f.left), crisp(f.py(v)));
    cairo_line_to(cr, crisp(f.left) - kTickLength, crisp(f.py(v)));
  }
  cairo_stroke(cr);

  set_color(cr, kText);
  use_font(cr, kTickSize);
  const double x_tick_baseline = f.bottom + kTickLength + kGap + ascent(cr);
  for (size_t i = 0; i < x_axis.ticks.values.size(); ++i)
    show_text(cr, x_axis.labels.labels[i], f.px(x_axis.ticks.values[i]), x_tick_baseline, 0.5);
  for (size_t i = 0; i < y_axis.ticks.values.size(); ++i)
    show_text_centred_on(cr, y_axis.labels.labels[i], f.left - kTickLength - kGap, f.py(y_axis.ticks.values[i]), 1);

  use_font(cr, kLabelSize);
  show_text(cr, with_exponent(plot.x_label, x_axis.labels.exponent), (f.left + f.right) / 2,
            height - kPad - (label_height - label_ascent), 0.5);
  cairo_save(cr);
  cairo_translate(cr, kPad + label_ascent, (f.top + f.bottom) / 2);
  cairo_rotate(cr, -M_PI / 2);
  show_text(cr, with_exponent(plot.y_label, y_axis.labels.exponent), 0, 0, 0.5);
  cairo_restore(cr);

  if (!plot.title.empty()) {
    use_font(cr, kTitleSize);
    show_text(cr, plot.title, (f.left + f.right) / 2, title_baseline, 0.5);
  }
  if (ys.empty()) {
    set_color(cr, kMuted);
    use_font(cr, kLabelSize);
    show_text_centred_on(cr, "no finite values", (f.left + f.right) / 2, (f.top + f.bottom) / 2, 0.5);
  }
  draw_legend(cr, plot.curves, f);

  check_cairo(cairo_status(cr), plot);
  cairo_surface_flush(surface.get());
  std::string png;
  check_cairo(cairo_surface_write_to_png_stream(surface.get(), append_png_bytes, &png), plot);
  return png;
}

void write_metric_plot(const std::filesystem::path& path, const MetricPlot& plot) {
  const std::string png = render_metric_plot(plot);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  atomic_write_file(path, png);
}

}  // namespace swift::train
