// The HTTP side of `swift deploy` (Boost.Beast's HTTP/1.1 parser, kept inside http_server.cpp): the route table,
// API-key checks, OpenAI-shaped errors, SSE streaming, bounds on what clients may hold (connections, bodies,
// time), and a stop() that lets in-flight requests finish.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace swift::serve {

class CompletionService;
struct ChatRequest;

struct HttpOptions {
  // A reward model's server: POST /v1/chat/completions answers with score_chat(request) (a chat.completion whose
  // message content is the conversation's reward, as ms-swift) instead of generating; /v1/completions and
  // streaming are refused. Unset: generation.
  std::function<nlohmann::json(const ChatRequest&)> score_chat;
  std::string host = "0.0.0.0";
  int port = 8000;            // 0: any free port (see HttpServer::port)
  std::string api_key;        // "": no authentication; else "Authorization: Bearer <key>" on /v1/*
  int threads = 64;           // connections served at once (each waits on its request); more get 503 at once
  size_t max_body_bytes = 32u << 20;        // one request's body; larger: 413
  size_t max_total_body_bytes = 128u << 20;  // all bodies being received or parsed at once; beyond: 503
  size_t max_header_bytes = 64u << 10;      // request line and headers; larger: 431
  // A request must arrive whole within request_timeout of its first byte (else 408), and a client must take
  // each part of an answer within it (else it is dropped): a slow client cannot hold a thread for long.
  std::chrono::milliseconds request_timeout{60000};
  std::chrono::milliseconds keep_alive_timeout{5000};  // an idle connection between requests is closed after it
};

class HttpServer {
 public:
  HttpServer(CompletionService& service, HttpOptions options);
  ~HttpServer();
  // Binds the socket; DataError when the address is taken or invalid. Returns the bound port.
  int bind();
  // Serves until stop(); returns when every connection's request has finished.
  void serve();
  // Stops accepting; serve() returns once in-flight requests are answered. Safe from any thread.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace swift::serve
