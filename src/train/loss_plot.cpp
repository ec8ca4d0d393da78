// Rasterises training curves with integer line drawing (no anti-aliasing, so every series pixel has exactly
// its series colour) and encodes them as PNG with zlib. PNG layout: https://www.w3.org/TR/png/ (5.2-5.6, 11.2).
#include "swift/train/loss_plot.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

#include "swift/core/atomic_write.h"
#include "swift/core/error.h"

namespace swift::train {

namespace {

constexpr Rgb kWhite{255, 255, 255};
constexpr Rgb kAxis{64, 64, 64};
constexpr Rgb kGrid{232, 232, 232};

// Plot-area margins: room on the left and bottom for the axis labels.
constexpr int kLeft = 72, kRight = 20, kTop = 20, kBottom = 36;

// A 3x5 font for axis extents: each glyph is 5 rows of 3 bits (MSB = left column).
struct Glyph {
  char c;
  std::array<uint8_t, 5> rows;
};
constexpr std::array<Glyph, 15> kFont = {{
    {'0', {7, 5, 5, 5, 7}}, {'1', {2, 6, 2, 2, 7}}, {'2', {7, 1, 7, 4, 7}}, {'3', {7, 1, 7, 1, 7}},
    {'4', {5, 5, 7, 1, 1}}, {'5', {7, 4, 7, 1, 7}}, {'6', {7, 4, 7, 5, 7}}, {'7', {7, 1, 1, 1, 1}},
    {'8', {7, 5, 7, 5, 7}}, {'9', {7, 5, 7, 1, 7}}, {'.', {0, 0, 0, 0, 2}}, {'-', {0, 0, 7, 0, 0}},
    {'e', {0, 7, 7, 4, 7}}, {'+', {0, 2, 7, 2, 0}}, {' ', {0, 0, 0, 0, 0}},
}};
constexpr int kScale = 2;                      // glyph pixels per font bit
constexpr int kGlyphW = 3 * kScale, kGlyphH = 5 * kScale, kAdvance = kGlyphW + kScale;

int text_width(const std::string& s) { return static_cast<int>(s.size()) * kAdvance - kScale; }

void draw_text(Image& img, int x, int y, const std::string& s, Rgb color) {
  for (char c : s) {
    auto g = std::find_if(kFont.begin(), kFont.end(), [c](const Glyph& gl) { return gl.c == c; });
    if (g != kFont.end())
      for (int row = 0; row < 5; ++row)
        for (int col = 0; col < 3; ++col)
          if (g->rows[row] & (4 >> col))
            for (int dy = 0; dy < kScale; ++dy)
              for (int dx = 0; dx < kScale; ++dx) img.set(x + col * kScale + dx, y + row * kScale + dy, color);
    x += kAdvance;
  }
}

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A square brush of side `width` centred on the pixel.
void stamp(Image& img, int x, int y, int width, Rgb c) {
  const int lo = -(width - 1) / 2, hi = width / 2;
  for (int dy = lo; dy <= hi; ++dy)
    for (int dx = lo; dx <= hi; ++dx) img.set(x + dx, y + dy, c);
}

// Bresenham's line with the brush.
void draw_line(Image& img, int x0, int y0, int x1, int y1, int width, Rgb c) {
  const int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
  const int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  while (true) {
    stamp(img, x0, y0, width, c);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) { err += dy; x0 += sx; }
    if (e2 <= dx) { err += dx; y0 += sy; }
  }
}

void put_be32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xFF));
}

void put_chunk(std::string& out, const char* type, const std::string& data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  std::string body = std::string(type, 4) + data;
  out += body;
  put_be32(out, static_cast<uint32_t>(
                    ::crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
  // A flat or empty range still needs a span to map onto pixels.
  void widen_if_flat() {
    if (empty()) lo = 0, hi = 1;
    if (lo == hi) {
      const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
      lo -= pad, hi += pad;
    }
  }
};

}  // namespace

Rgb series_color(size_t index) {
  static constexpr std::array<Rgb, 8> kPalette = {{
      {0xFF, 0x70, 0x43},  // ms-swift TB_COLOR_SMOOTH
      {0x1f, 0x77, 0xb4}, {0x2c, 0xa0, 0x2c}, {0xd6, 0x27, 0x28},
      {0x94, 0x67, 0xbd}, {0x8c, 0x56, 0x4b}, {0xe3, 0x77, 0xc2}, {0x17, 0xbe, 0xcf},
  }};
  return kPalette[index % kPalette.size()];
}

Rgb pale_color(Rgb c) {
  auto mix = [](uint8_t v) { return static_cast<uint8_t>((v * 3 + 255 * 7 + 5) / 10); };
  return {mix(c.r), mix(c.g), mix(c.b)};
}

std::vector<double> tensorboard_smoothing(const std::vector<double>& values, double weight) {
  std::vector<double> out;
  out.reserve(values.size());
  double x = 0, norm = 0;
  for (double v : values) {
    x = x * weight + v;
    norm = norm * weight + 1;
    out.push_back(x / norm);
  }
  return out;
}

Rgb Image::at(int x, int y) const {
  const size_t i = (static_cast<size_t>(y) * width + x) * 3;
  return {rgb[i], rgb[i + 1], rgb[i + 2]};
}

void Image::set(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= width || y >= height) return;
  const size_t i = (static_cast<size_t>(y) * width + x) * 3;
  rgb[i] = c.r, rgb[i + 1] = c.g, rgb[i + 2] = c.b;
}

Image render_loss_plot(const std::vector<PlotSeries>& series, const LossPlotOptions& options) {
  SWIFT_CHECK(options.width >= 64 && options.height >= 64, UsageError,
              "plot size must be at least 64x64, got " + std::to_string(options.width) + "x" +
                  std::to_string(options.height),
              "");
  SWIFT_CHECK(options.smoothing >= 0 && options.smoothing < 1, UsageError,
              "plot smoothing must be in [0, 1), got " + std::to_string(options.smoothing), "e.g. 0.9");
  for (const auto& s : series) {
    const double w = s.smoothing.value_or(options.smoothing);
    SWIFT_CHECK(w >= 0 && w < 1, UsageError,
                "plot series '" + s.name + "' smoothing must be in [0, 1), got " + std::to_string(w), "e.g. 0.9");
    SWIFT_CHECK(s.steps.size() == s.values.size(), UsageError,
                "plot series '" + s.name + "' has " + std::to_string(s.steps.size()) + " steps but " +
                    std::to_string(s.values.size()) + " values",
                "");
  }

  Image img{options.width, options.height,
            std::vector<uint8_t>(static_cast<size_t>(options.width) * options.height * 3, 255)};
  Range xr, yr;
  for (const auto& s : series)
    for (size_t i = 0; i < s.steps.size(); ++i)
      if (std::isfinite(s.values[i])) xr.add(s.steps[i]), yr.add(s.values[i]);
  xr.widen_if_flat();
  yr.widen_if_flat();
  const double ypad = (yr.hi - yr.lo) * 0.05;  // keep the extremes off the frame
  const double ylo = yr.lo - ypad, yhi = yr.hi + ypad;

  const int x0 = kLeft, x1 = options.width - 1 - kRight, y0 = kTop, y1 = options.height - 1 - kBottom;
  auto px = [&](double x) { return x0 + static_cast<int>(std::lround((x - xr.lo) / (xr.hi - xr.lo) * (x1 - x0))); };
  auto py = [&](double y) { return y1 - static_cast<int>(std::lround((y - ylo) / (yhi - ylo) * (y1 - y0))); };

  constexpr int kTicks = 5;
  for (int t = 1; t < kTicks; ++t) {
    const int gx = x0 + (x1 - x0) * t / kTicks, gy = y0 + (y1 - y0) * t / kTicks;
    draw_line(img, gx, y0, gx, y1, 1, kGrid);
    draw_line(img, x0, gy, x1, gy, 1, kGrid);
  }

  auto draw_series = [&](const std::vector<double>& xs, const std::vector<double>& ys, Rgb color) {
    bool have_prev = false;
    int prev_x = 0, prev_y = 0;
    size_t finite = 0;
    for (double y : ys) finite += std::isfinite(y) ? 1 : 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!std::isfinite(ys[i]) || !std::isfinite(xs[i])) {
        have_prev = false;  // a NaN loss breaks the curve rather than dragging it to the frame
        continue;
      }
      const int cx = px(xs[i]), cy = py(ys[i]);
      if (finite == 1) stamp(img, cx, cy, options.line_width + 4, color);  // a lone point: a dot, as ms-swift scatters
      if (have_prev) draw_line(img, prev_x, prev_y, cx, cy, options.line_width, color);
      prev_x = cx, prev_y = cy, have_prev = true;
    }
  };
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& s = series[i];
    const Rgb color = s.color.value_or(series_color(i));
    const double smoothing = s.smoothing.value_or(options.smoothing);
    if (smoothing > 0 && s.values.size() > 1) {
      draw_series(s.steps, s.values, pale_color(color));
      draw_series(s.steps, tensorboard_smoothing(s.values, smoothing), color);
    } else {
      draw_series(s.steps, s.values, color);
    }
  }

  // The frame last, so curves touching the edge do not hide it.
  draw_line(img, x0, y0, x0, y1, 1, kAxis);
  draw_line(img, x0, y1, x1, y1, 1, kAxis);
  draw_line(img, x0, y0, x1, y0, 1, kAxis);
  draw_line(img, x1, y0, x1, y1, 1, kAxis);
  for (int t = 0; t <= kTicks; ++t) {
    const int gx = x0 + (x1 - x0) * t / kTicks, gy = y0 + (y1 - y0) * t / kTicks;
    draw_line(img, gx, y1, gx, y1 + 4, 1, kAxis);
    draw_line(img, x0 - 4, gy, x0, gy, 1, kAxis);
  }
  if (options.axis_labels) {
    const std::string xmin = format_number(xr.lo), xmax = format_number(xr.hi);
    draw_text(img, x0, y1 + 10, xmin, kAxis);
    draw_text(img, x1 - text_width(xmax), y1 + 10, xmax, kAxis);
    const std::string ymin = format_number(ylo), ymax = format_number(yhi);
    draw_text(img, x0 - 8 - text_width(ymin), y1 - kGlyphH / 2, ymin, kAxis);
    draw_text(img, x0 - 8 - text_width(ymax), y0 - kGlyphH / 2, ymax, kAxis);
  }
  return img;
}

std::string encode_png(const Image& image) {
  SWIFT_ASSERT(image.width > 0 && image.height > 0 &&
                   image.rgb.size() == static_cast<size_t>(image.width) * image.height * 3,
               "encode_png: image size does not match its buffer");
  // Scanlines, each prefixed with filter type 0 (None).
  const size_t stride = static_cast<size_t>(image.width) * 3;
  std::string raw;
  raw.reserve((stride + 1) * image.height);
  for (int y = 0; y < image.height; ++y) {
    raw.push_back('\0');
    raw.append(reinterpret_cast<const char*>(image.rgb.data()) + y * stride, stride);
  }
  uLongf compressed_size = ::compressBound(static_cast<uLong>(raw.size()));
  std::string compressed(compressed_size, '\0');
  const int rc = ::compress2(reinterpret_cast<Bytef*>(compressed.data()), &compressed_size,
                             reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), 6);
  SWIFT_ASSERT(rc == Z_OK, "zlib compress2 failed with " + std::to_string(rc));
  compressed.resize(compressed_size);

  std::string ihdr;
  put_be32(ihdr, static_cast<uint32_t>(image.width));
  put_be32(ihdr, static_cast<uint32_t>(image.height));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // bit depth 8, colour type 2 (RGB), deflate, filter 0, no interlace

  std::string png("\x89PNG\r\n\x1a\n", 8);
  put_chunk(png, "IHDR", ihdr);
  put_chunk(png, "IDAT", compressed);
  put_chunk(png, "IEND", "");
  return png;
}

void write_loss_plot(const std::filesystem::path& path, const std::vector<PlotSeries>& series,
                     const LossPlotOptions& options) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  atomic_write_file(path, encode_png(render_loss_plot(series, options)));
}

}  // namespace swift::train
