// Whether the client of an HTTP request has gone away, for answers that take long to compute (non-streamed
// completions: nothing is written until the end, so a failed write cannot tell). It peeks at the connection's
// socket: end-of-stream or a reset means the client closed it.
#pragma once

namespace swift::serve {

class ConnectionProbe {
 public:
  explicit ConnectionProbe(int fd) : fd_(fd) {}

  // True once the peer has closed or reset the connection. Bytes waiting to be read (a pipelined next request)
  // mean it is still there. Valid while the connection is open on our side.
  bool closed_by_peer() const;

 private:
  int fd_;
};

}  // namespace swift::serve
