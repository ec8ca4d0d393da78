// poll()-bounded reads and writes on a connected socket (see the header for why).
#include "timed_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace swift::serve {

namespace {

using Clock = std::chrono::steady_clock;

// Waits for `events` on fd for at most `wait`; true when they came (or the socket failed: the call after tells).
bool wait_for(int fd, short events, std::chrono::milliseconds wait) {
  const auto until = Clock::now() + wait;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return true;  // let the read or write report the error
  }
}

boost::system::error_code from_errno(int e) {
  if (e == EAGAIN || e == EWOULDBLOCK) return boost::asio::error::would_block;
  if (e == ECONNRESET || e == EPIPE) return boost::asio::error::connection_reset;
  return {e, boost::system::system_category()};
}

}  // namespace

TimedSocket::TimedSocket(int fd) : fd_(fd) {}

TimedSocket::~TimedSocket() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t TimedSocket::receive(void* data, std::size_t size, error_code& ec) {
  ec = {};
  if (!wait_for(fd_, POLLIN, read_wait_)) {
    ec = boost::asio::error::would_block;
    return 0;
  }
  for (;;) {
    const ssize_t n = ::recv(fd_, data, size, MSG_DONTWAIT);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0) {
      ec = boost::asio::error::eof;
      return 0;
    }
    if (errno == EINTR) continue;
    ec = from_errno(errno);
    return 0;
  }
}

std::size_t TimedSocket::send(int count, error_code& ec) {
  ec = {};
  msghdr message{};
  message.msg_iov = pieces_.data();
  message.msg_iovlen = static_cast<decltype(message.msg_iovlen)>(count);
  const auto until = Clock::now() + write_wait_;
  for (;;) {
    // MSG_NOSIGNAL: a client gone mid-answer is an error here, not a SIGPIPE that ends the server.
    const ssize_t n = ::sendmsg(fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      ec = from_errno(errno);
      return 0;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0 || !wait_for(fd_, POLLOUT, left)) {
      ec = boost::asio::error::timed_out;  // the client has read nothing for write_wait
      return 0;
    }
  }
}

void TimedSocket::close_gracefully(std::chrono::milliseconds linger) {
  ::shutdown(fd_, SHUT_WR);
  const auto until = Clock::now() + linger;
  char drop[16384];
  for (;;) {  // what is there is dropped at once; then the client gets until `until` to send the rest or close
    const ssize_t n = ::recv(fd_, drop, sizeof(drop), MSG_DONTWAIT);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) break;
    if (n < 0 && !wait_for(fd_, POLLIN, left)) break;
  }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace swift::serve
