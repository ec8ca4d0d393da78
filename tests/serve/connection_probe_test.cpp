// ConnectionProbe on real loopback sockets: it finds the accepted socket by the client's address and sees the
// client close or reset it.
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
  int server_port = -1, client_port = -1;

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
    server_port = ntohs(addr.sin_port);
    client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    server = accept(listener, nullptr, nullptr);
    sockaddr_in mine{};
    len = sizeof(mine);
    getsockname(client, reinterpret_cast<sockaddr*>(&mine), &len);
    client_port = ntohs(mine.sin_port);
  }
  ~LoopbackPair() {
    for (int fd : {listener, client, server})
      if (fd >= 0) close(fd);
  }
};

TEST(ConnectionProbe, FindsTheAcceptedSocketAndSeesTheClientClose) {
  LoopbackPair pair;
  ConnectionProbe probe("127.0.0.1", pair.client_port, pair.server_port);
  ASSERT_TRUE(probe.found());
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
  ConnectionProbe probe("127.0.0.1", pair.client_port, pair.server_port);
  ASSERT_TRUE(probe.found());
  linger hard{1, 0};  // close with RST instead of FIN
  setsockopt(pair.client, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
  close(pair.client);
  pair.client = -1;
  usleep(20000);
  EXPECT_TRUE(probe.closed_by_peer());
}

TEST(ConnectionProbe, UnknownConnectionIsNotFoundAndNeverReportsAClose) {
  LoopbackPair pair;
  ConnectionProbe probe("127.0.0.1", pair.client_port, 1);  // no socket of ours has local port 1
  EXPECT_FALSE(probe.found());
  close(pair.client);
  pair.client = -1;
  usleep(20000);
  EXPECT_FALSE(probe.closed_by_peer());
}

}  // namespace
}  // namespace swift::serve
