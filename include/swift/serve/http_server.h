// The HTTP side of `swift deploy` (cpp-httplib, kept inside http_server.cpp): the route table, API-key checks,
// OpenAI-shaped errors, SSE streaming, and a stop() that lets in-flight requests finish.
#pragma once

#include <nlohmann/json.hpp>

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
  int threads = 64;           // connections served at once (each waits on its request)
  size_t max_body_bytes = 32u << 20;
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
