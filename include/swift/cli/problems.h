// Validation that reports every problem at once: option parsers add what is wrong with the flags to one list
// instead of stopping at the first, and the command raises them together, so a user fixes a command line in one
// round instead of one error per run.
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "swift/core/error.h"

namespace swift::cli {

class Problems {
 public:
  // A problem unless `ok`: the message says what was wrong and where (the flag), the hint how to fix it.
  void check(bool ok, std::string message, std::string hint = {}) {
    if (!ok) add(UsageError(std::move(message), std::move(hint)));
  }
  template <typename Error>
  void add(const Error& error) {
    found_.push_back({std::make_exception_ptr(error), error});
  }
  // Runs `parse` (a parser that throws a UserError on bad input) and keeps its error; returns its value, or
  // `fallback` when it threw, so the other checks still run.
  template <typename T, typename Parse>
  T collect(Parse&& parse, T fallback) {
    try {
      return parse();
    } catch (const UserError&) {
      found_.push_back({std::current_exception(), current_user_error()});
      return fallback;
    }
  }
  // Range checks of numeric flags, each naming the flag, what it must be and what it got.
  // An integer flag below `min`.
  void at_least(const std::string& flag, int64_t value, int64_t min, std::string hint = {}) {
    check(value >= min, "--" + flag + " must be at least " + std::to_string(min) + ", got " + std::to_string(value),
          std::move(hint));
  }
  // A number flag that is not finite or outside [min, max] (an end in `open` excluded: "(" or ")" style).
  void in_range(const std::string& flag, double value, double min, double max, std::string hint = {},
                bool min_open = false, bool max_open = false) {
    const bool ok = std::isfinite(value) && (min_open ? value > min : value >= min) && (max_open ? value < max : value <= max);
    const std::string range = std::string(min_open ? "(" : "[") + number_text(min) + ", " + number_text(max) + (max_open ? ")" : "]");
    check(ok, "--" + flag + " must be a finite number in " + range + ", got " + number_text(value), std::move(hint));
  }
  bool empty() const { return found_.empty(); }
  size_t size() const { return found_.size(); }
  // Throws when there is any problem: the only one as it was raised (its type and exit code), several as one
  // error with the first one's exit code that lists each with its hint.
  void raise() const {
    if (found_.empty()) return;
    if (found_.size() == 1) std::rethrow_exception(found_.front().exception);
    std::string message = std::to_string(found_.size()) + " problems with the command line:";
    for (const auto& f : found_) {
      message += "\n  - " + f.error.message();
      if (!f.error.hint().empty()) message += " (" + f.error.hint() + ")";
    }
    throw UserError(found_.front().error.code(), message, "fix each of them; `swift <command> --help` lists every flag");
  }

 private:
  struct Found {
    std::exception_ptr exception;  // as thrown, to rethrow a single problem unchanged
    UserError error;               // its message, hint and exit code
  };
  static std::string number_text(double v) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::ostringstream out;
    out << v;
    return out.str();
  }
  static UserError current_user_error() {
    try {
      throw;
    } catch (const UserError& e) {
      return e;
    }
  }
  std::vector<Found> found_;
};

}  // namespace swift::cli
