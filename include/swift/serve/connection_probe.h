// Whether the client of an HTTP request has gone away, for answers that take long to compute (non-streamed
// completions: nothing is written until the end, so a failed write cannot tell). cpp-httplib 0.11 hands route
// handlers no socket, so the probe finds the connection's socket among this process's open sockets by the
// request's peer and local address, then peeks at it: end-of-stream or a reset means the client closed it.
// Linux only (it reads /proc/self/fd); elsewhere, and when no socket matches, found() is false and the probe
// never reports a disconnect.
#pragma once

#include <string>

namespace swift::serve {

class ConnectionProbe {
 public:
  ConnectionProbe(const std::string& peer_addr, int peer_port, int local_port);

  bool found() const { return fd_ >= 0; }
  // True once the peer has closed or reset the connection. Bytes waiting to be read (a pipelined next request)
  // mean it is still there. Valid while the connection is open on our side, i.e. inside the route handler.
  bool closed_by_peer() const;

 private:
  int fd_ = -1;
};

}  // namespace swift::serve
