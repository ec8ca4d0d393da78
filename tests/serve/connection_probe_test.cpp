// ConnectionProbe on real loopback sockets: it sees the client close or reset the accepted socket, and takes
// bytes waiting to be read for a client that is still there.
#include "swift/serve/connection_probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace swift::serve {
namespace {

struct LoopbackPair {
  int listener = -1, client = -1, server = -1;

  LoopbackPair() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listener, 4), 0);
    socklen_t len = sizeof(addr);
    getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
    client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    server = accept(listener, nullptr, nullptr);
  }
  ~LoopbackPair() {
    for (int fd : {listener, client, server})
      if (fd >= 0) close(fd);
  }
};

TEST(ConnectionProbe, SeesTheClientCloseButNotPendingBytes) {
  LoopbackPair pair;
  const ConnectionProbe probe(pair.server);
  EXPECT_FALSE(probe.closed_by_peer());
  // A pipelined byte waiting to be read: still connected, and peeking leaves it there.
  ASSERT_EQ(send(pair.client, "x", 1, 0), 1);
  usleep(20000);
  EXPECT_FALSE(probe.closed_by_peer());
  char byte = 0;
  ASSERT_EQ(recv(pair.server, &byte, 1, 0), 1);
  EXPECT_EQ(byte, 'x');
  close(pair.client);
  pair.client = -1;
  usleep(20000);
  EXPECT_TRUE(probe.closed_by_peer());
}

TEST(ConnectionProbe, SeesAReset) {
  LoopbackPair pair;
  const ConnectionProbe probe(pair.server);
  linger hard{1, 0};  // close with RST instead of FIN
  setsockopt(pair.client, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
  close(pair.client);
  pair.client = -1;
  usleep(20000);
  EXPECT_TRUE(probe.closed_by_peer());
}

}  // namespace
}  // namespace swift::serve
