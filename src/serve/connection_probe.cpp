// Finding a connection's socket by address and peeking at it (see the header for why).
#include "swift/serve/connection_probe.h"

#include <cerrno>
#include <cstdlib>
#include <vector>

#if defined(__linux__)
#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace swift::serve {

#if defined(__linux__)
namespace {

struct Endpoint {
  std::string addr;
  int port = -1;
};

// The numeric host and port of a socket address, spelled as cpp-httplib spells Request::remote_addr.
Endpoint endpoint_of(const sockaddr_storage& sa, socklen_t len) {
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&sa), len, host, sizeof(host), serv, sizeof(serv),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return {};
  return {host, std::atoi(serv)};
}

std::vector<int> open_sockets() {
  std::vector<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return fds;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) == 0 && S_ISSOCK(st.st_mode)) fds.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  return fds;
}

}  // namespace

ConnectionProbe::ConnectionProbe(const std::string& peer_addr, int peer_port, int local_port) {
  // Several clients may use the same port number from different hosts: the address decides; a spelling
  // difference (an IPv4-mapped IPv6 address, say) is forgiven when only one socket has both port numbers.
  int only_by_ports = -1, matches_by_ports = 0;
  for (const int fd : open_sockets()) {
    sockaddr_storage peer{}, local{};
    socklen_t peer_len = sizeof(peer), local_len = sizeof(local);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
    const Endpoint p = endpoint_of(peer, peer_len), l = endpoint_of(local, local_len);
    if (p.port != peer_port || l.port != local_port) continue;
    if (p.addr == peer_addr) {
      fd_ = fd;
      return;
    }
    only_by_ports = fd;
    ++matches_by_ports;
  }
  if (matches_by_ports == 1) fd_ = only_by_ports;
}

bool ConnectionProbe::closed_by_peer() const {
  if (fd_ < 0) return false;
  char byte;
  const ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;   // data waiting: the client is there
  if (n == 0) return true;   // orderly shutdown by the peer
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset, or the socket is gone
}

#else

ConnectionProbe::ConnectionProbe(const std::string&, int, int) {}
bool ConnectionProbe::closed_by_peer() const { return false; }

#endif

}  // namespace swift::serve
