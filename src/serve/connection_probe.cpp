// Peeking at a connection's socket (see the header for why).
#include "swift/serve/connection_probe.h"

#include <sys/socket.h>

#include <cerrno>

namespace swift::serve {

bool ConnectionProbe::closed_by_peer() const {
  char byte;
  const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;   // data waiting: the client is there
  if (n == 0) return true;   // orderly shutdown by the peer
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset, or the socket is gone
}

}  // namespace swift::serve
