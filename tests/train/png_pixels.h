// PNG bytes decoded by Cairo (libpng underneath) into RGB pixels, and pixel queries for the picture tests.
#pragma once

#include <cairo.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "swift/train/metric_plot.h"

namespace swift::test {

struct Pixels {
  int width = 0, height = 0;
  std::vector<train::Rgb> rgb;  // row-major
  train::Rgb at(int x, int y) const { return rgb[static_cast<size_t>(y) * width + x]; }
};

// Decodes `png`; an undecodable file fails the test (width and height stay 0).
inline Pixels decode_png(const std::string& png) {
  struct Reader {
    const std::string* bytes;
    size_t at = 0;
  } reader{&png};
  auto read = [](void* closure, unsigned char* data, unsigned int length) {
    auto* r = static_cast<Reader*>(closure);
    if (r->at + length > r->bytes->size()) return CAIRO_STATUS_READ_ERROR;
    r->bytes->copy(reinterpret_cast<char*>(data), length, r->at);
    r->at += length;
    return CAIRO_STATUS_SUCCESS;
  };
  cairo_surface_t* surface = cairo_image_surface_create_from_png_stream(read, &reader);
  Pixels p;
  const cairo_status_t status = cairo_surface_status(surface);
  EXPECT_EQ(status, CAIRO_STATUS_SUCCESS) << cairo_status_to_string(status);
  if (status == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(surface);
    p.width = cairo_image_surface_get_width(surface);
    p.height = cairo_image_surface_get_height(surface);
    const int stride = cairo_image_surface_get_stride(surface);
    const unsigned char* data = cairo_image_surface_get_data(surface);
    p.rgb.reserve(static_cast<size_t>(p.width) * p.height);
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < p.width; ++x) {
        uint32_t v;  // Cairo's RGB24/ARGB32: one native-endian 32-bit word per pixel, 0xAARRGGBB (opaque here)
        std::memcpy(&v, data + static_cast<size_t>(y) * stride + 4 * x, 4);
        p.rgb.push_back({static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)});
      }
  }
  cairo_surface_destroy(surface);
  return p;
}

inline std::string read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Within `tolerance` per channel: antialiased edges blend with white, the inside of a 2-pixel line does not.
inline bool near(train::Rgb a, train::Rgb b, int tolerance = 12) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance && std::abs(a.b - b.b) <= tolerance;
}

inline bool dark(train::Rgb c) { return c.r < 110 && c.g < 110 && c.b < 110; }

// Pixels in [x0, x1) x [y0, y1) for which `pred` holds.
inline size_t count_pixels(const Pixels& p, int x0, int y0, int x1, int y1,
                           const std::function<bool(train::Rgb)>& pred) {
  size_t n = 0;
  for (int y = std::max(0, y0); y < std::min(p.height, y1); ++y)
    for (int x = std::max(0, x0); x < std::min(p.width, x1); ++x) n += pred(p.at(x, y));
  return n;
}

inline size_t count_pixels(const Pixels& p, const std::function<bool(train::Rgb)>& pred) {
  return count_pixels(p, 0, 0, p.width, p.height, pred);
}

// The smallest box holding every pixel for which `pred` holds; empty (x0 > x1) when none does.
struct PixelBox {
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;
  bool empty() const { return x0 > x1; }
};
inline PixelBox bounding_box(const Pixels& p, const std::function<bool(train::Rgb)>& pred) {
  PixelBox b;
  for (int y = 0; y < p.height; ++y)
    for (int x = 0; x < p.width; ++x)
      if (pred(p.at(x, y))) b.x0 = std::min(b.x0, x), b.x1 = std::max(b.x1, x), b.y0 = std::min(b.y0, y),
                            b.y1 = std::max(b.y1, y);
  return b;
}

}  // namespace swift::test
