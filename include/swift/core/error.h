// Errors: a UserError is something the user can fix (bad flag, bad file, no GPU) and carries the exit code
// and a hint; anything else escaping to main is our bug (exit 1).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace swift {

enum class ExitCode : int { kOk = 0, kInternal = 1, kUsage = 2, kData = 3, kDevice = 4 };

class UserError : public std::runtime_error {
 public:
  UserError(ExitCode code, std::string message, std::string hint = {})
      : std::runtime_error(message), code_(code), message_(std::move(message)), hint_(std::move(hint)) {}
  const char* what() const noexcept override { return message_.c_str(); }
  ExitCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }
  // Prefixes the message with where it happened ("loading model-00001-of-00002.safetensors: ...").
  void add_context(const std::string& context) { message_ = context + ": " + message_; }

 private:
  ExitCode code_;
  std::string message_;
  std::string hint_;
};

// Usage/config error: exit 2.
struct UsageError : UserError {
  explicit UsageError(std::string message, std::string hint = {})
      : UserError(ExitCode::kUsage, std::move(message), std::move(hint)) {}
};
// Data/IO error (missing or corrupt file, bad dataset row): exit 3.
struct DataError : UserError {
  explicit DataError(std::string message, std::string hint = {})
      : UserError(ExitCode::kData, std::move(message), std::move(hint)) {}
};
// Device/distributed error (no CUDA, rendezvous failed): exit 4.
struct DeviceError : UserError {
  explicit DeviceError(std::string message, std::string hint = {})
      : UserError(ExitCode::kDevice, std::move(message), std::move(hint)) {}
};

// Runs fn(); a UserError escaping it gets `context` prepended, so the message says where it happened.
template <typename Fn>
decltype(auto) with_context(const std::string& context, Fn&& fn) {
  try {
    return fn();
  } catch (UserError& e) {
    e.add_context(context);
    throw;
  }
}

}  // namespace swift

// SWIFT_CHECK(cond, ErrorType, message, hint): for anything a user can cause. message/hint are
// std::string expressions, evaluated only on failure.
#define SWIFT_CHECK(cond, ErrorType, message, hint) \
  do {                                              \
    if (!(cond)) throw ::swift::ErrorType((message), (hint)); \
  } while (0)

// Our own invariant; a failure is a bug in swift (exit 1).
#define SWIFT_ASSERT(cond, message)                                                            \
  do {                                                                                         \
    if (!(cond))                                                                               \
      throw std::logic_error(std::string("internal error at ") + __FILE__ + ":" +              \
                             std::to_string(__LINE__) + ": " + (message));                     \
  } while (0)
