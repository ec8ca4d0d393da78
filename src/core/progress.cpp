// Progress line: in place on a TTY, decile log lines elsewhere.
#include "swift/core/progress.h"

#include <unistd.h>

#include <cstdio>

#include "swift/core/bytes.h"

namespace swift {

Progress::Progress(std::string label, int64_t total, bool enabled, Unit unit)
    : label_(std::move(label)), total_(total), enabled_(enabled && total > 0), unit_(unit),
      tty_(::isatty(STDERR_FILENO) != 0) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { finish(); }

void Progress::advance(int64_t n) {
  done_ += n;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const int decile = static_cast<int>(10 * done_ / total_);
  if (tty_ ? now - last_draw_ > std::chrono::milliseconds(100) : decile != last_decile_) {
    last_decile_ = decile;
    last_draw_ = now;
    draw(false);
  }
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (tty_ || last_decile_ != 10) draw(true);  // a log already has the 100% line
}

void Progress::draw(bool final) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done_) / seconds : 0.0;
  const int width = 30;
  const int filled = static_cast<int>(width * done_ / total_);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : 0.0;
  if (unit_ == Unit::kBytes) {
    std::fprintf(stderr, "%s%s [%s] %s/%s %.0f%% %.1fs elapsed, ETA %.1fs (%s/s)%s", tty_ ? "\r" : "", label_.c_str(),
                 bar.c_str(), format_bytes(static_cast<double>(done_)).c_str(),
                 format_bytes(static_cast<double>(total_)).c_str(), 100.0 * done_ / total_, seconds, eta,
                 format_bytes(rate).c_str(), (!tty_ || final) ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s%s [%s] %lld/%lld %.0f%% %.1fs elapsed, ETA %.1fs (%.2f/s)%s", tty_ ? "\r" : "",
                 label_.c_str(), bar.c_str(), static_cast<long long>(done_), static_cast<long long>(total_),
                 100.0 * done_ / total_, seconds, eta, rate, (!tty_ || final) ? "\n" : "");
  }
  std::fflush(stderr);
}

}  // namespace swift
