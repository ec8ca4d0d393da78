// A connected TCP socket whose reads and writes never wait longer than they are allowed to: Beast's
// SyncReadStream and SyncWriteStream over POSIX calls. A blocking socket would let a client that stops sending
// (or stops reading) hold a server thread forever, and Asio's synchronous calls ignore socket timeouts; here
// every wait is a poll() with a limit.
//   read_some:  waits at most read_wait for the first byte; nothing by then is `would_block` (the caller looks at
//               its deadlines and at stop(), then reads again).
//   write_some: waits at most write_wait for room in the socket; no room by then is `timed_out` (a client that
//               reads nothing is dropped).
// Private to src/serve: only http_server.cpp uses it.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <sys/uio.h>

#include <array>
#include <chrono>
#include <cstddef>

namespace swift::serve {

class TimedSocket {
 public:
  using error_code = boost::system::error_code;

  explicit TimedSocket(int fd);  // takes the descriptor; closes it when destroyed
  ~TimedSocket();
  TimedSocket(const TimedSocket&) = delete;
  TimedSocket& operator=(const TimedSocket&) = delete;

  int native_handle() const { return fd_; }
  void set_read_wait(std::chrono::milliseconds wait) { read_wait_ = wait; }
  void set_write_wait(std::chrono::milliseconds wait) { write_wait_ = wait; }

  // Ends our side of the connection politely: stops sending, then reads and drops what the client still sends
  // (for at most `linger`), so an error answered before the client finished sending reaches it instead of
  // being lost to a reset.
  void close_gracefully(std::chrono::milliseconds linger);

  template <typename MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& buffers, error_code& ec) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
      const boost::asio::mutable_buffer b = *it;
      if (b.size() > 0) return receive(b.data(), b.size(), ec);
    }
    ec = {};
    return 0;
  }
  template <typename MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& buffers) {
    error_code ec;
    return or_throw(read_some(buffers, ec), ec);
  }

  template <typename ConstBufferSequence>
  std::size_t write_some(const ConstBufferSequence& buffers, error_code& ec) {
    int count = 0;  // a chunk is a few pieces (size line, data, CRLF); beyond kMaxPieces, the next call sends them
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && count < kMaxPieces; ++it) {
      const boost::asio::const_buffer b = *it;
      if (b.size() > 0) pieces_[count++] = {const_cast<void*>(b.data()), b.size()};
    }
    if (count == 0) {
      ec = {};
      return 0;
    }
    return send(count, ec);
  }
  template <typename ConstBufferSequence>
  std::size_t write_some(const ConstBufferSequence& buffers) {
    error_code ec;
    return or_throw(write_some(buffers, ec), ec);
  }

 private:
  // The throwing overloads (Beast's SyncStream concept has both forms).
  static std::size_t or_throw(std::size_t n, const error_code& ec) {
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
  std::size_t receive(void* data, std::size_t size, error_code& ec);
  std::size_t send(int count, error_code& ec);
  static constexpr int kMaxPieces = 16;

  int fd_;
  std::chrono::milliseconds read_wait_{100}, write_wait_{30000};
  std::array<::iovec, kMaxPieces> pieces_{};
};

}  // namespace swift::serve
