// A progress line on stderr for long loops (batch inference, dataset encoding, training): redrawn in place
// on a terminal, a log line every 10% otherwise (CI logs, Slurm output files).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace swift {

class Progress {
 public:
  enum class Unit { kCount, kBytes };  // kBytes: "12.0 MiB/1.5 GiB" and a rate in bytes per second (downloads)
  Progress(std::string label, int64_t total, bool enabled = true, Unit unit = Unit::kCount);
  ~Progress();
  void advance(int64_t n = 1);
  void finish();

 private:
  void draw(bool final);
  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  bool enabled_;
  Unit unit_;
  bool tty_;
  bool finished_ = false;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace swift
