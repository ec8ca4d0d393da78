// Routes of the OpenAI-compatible server, on cpp-httplib (the only translation unit that includes httplib.h):
//   GET  /health                 200 when the server is up (no key needed)
//   GET  /v1/models              the served model
//   POST /v1/chat/completions    chat, streamed (SSE) or not
//   POST /v1/completions         text or token-id prompts, streamed or not
// Every handler catches everything: a request can fail, the server cannot.
#include "swift/serve/http_server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/serve/completion_service.h"
#include "swift/serve/connection_probe.h"

using nlohmann::json;

namespace swift::serve {

struct HttpServer::Impl {
  CompletionService& service;
  HttpOptions options;
  httplib::Server server;
  std::atomic<bool> serving{false}, stop_requested{false};
  Impl(CompletionService& s, HttpOptions o) : service(s), options(std::move(o)) {}
};

namespace {

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  // Token texts can be partial UTF-8 (byte-level BPE): replace invalid bytes rather than fail the response.
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  send_json(res, e.status, error_json(e.what(), e.type, e.param, e.code));
}

bool authorized(const httplib::Request& req, const std::string& key) {
  if (key.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  return header == "Bearer " + key;
}

// Runs one route body; whatever escapes becomes an OpenAI error response.
template <typename Fn>
void guarded(const httplib::Request& req, httplib::Response& res, Fn&& fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    send_error(res, e);
  } catch (const std::exception& e) {
    log_warn(req.method, " ", req.path, " failed: ", e.what());
    send_json(res, 500, error_json(std::string("internal error: ") + e.what(), "server_error", "", "internal_error"));
  } catch (...) {
    send_json(res, 500, error_json("internal error", "server_error", "", "internal_error"));
  }
}

// Streams a job as server-sent events; a failed write (client gone) cancels the job.
void stream_job(httplib::Response& res, std::shared_ptr<Job> job) {
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [job](size_t, httplib::DataSink& sink) {
        try {
          const bool ok = job->stream([&](const std::string& data) {
            const std::string event = "data: " + data + "\n\n";
            return sink.write(event.data(), event.size());
          });
          if (ok) sink.done();
          else log_info("client went away: request cancelled");
          return ok;
        } catch (const std::exception& e) {
          log_warn("streaming failed: ", e.what());
          job->cancel();
          return false;
        }
      },
      [job](bool) { job->cancel(); });
}

}  // namespace

HttpServer::HttpServer(CompletionService& service, HttpOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {
  auto& svr = impl_->server;
  auto* impl = impl_.get();
  const int threads = std::max(4, impl->options.threads);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr.set_payload_max_length(impl->options.max_body_bytes);
  svr.set_keep_alive_timeout(5);

  svr.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  // Every /v1 route: the API key first, then the body; whatever escapes becomes an OpenAI error.
  auto v1 = [impl](auto&& body) {
    return [impl, body](const httplib::Request& req, httplib::Response& res) {
      guarded(req, res, [&] {
        if (!authorized(req, impl->options.api_key)) throw ApiError(401, "Incorrect API key provided", "", "invalid_api_key");
        body(req, res);
      });
    };
  };
  // chat and completions differ only in how the request is parsed and started.
  auto completion_route = [impl, v1](auto parse, auto start) {
    return v1([impl, parse, start](const httplib::Request& req, httplib::Response& res) {
      const auto request = parse(req.body, impl->service.options().limits);
      std::shared_ptr<Job> job = (impl->service.*start)(request);
      if (request.sampling.stream) return stream_job(res, job);
      // Nothing is written before the answer, so a vanished client is noticed by peeking at its socket.
      const ConnectionProbe connection(req.remote_addr, req.remote_port, req.local_port);
      try {
        send_json(res, 200, job->result([&] { return connection.closed_by_peer(); }));
      } catch (const ClientGone&) {
        log_info("client went away before its answer: request cancelled");
      }
    });
  };
  svr.Get("/v1/models", v1([impl](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, impl->service.models());
  }));
  if (impl->options.score_chat) {  // a reward model scores conversations; it has nothing to generate with
    svr.Post("/v1/chat/completions", v1([impl](const httplib::Request& req, httplib::Response& res) {
      const auto request = parse_chat_request(req.body, impl->service.options().limits);
      if (request.sampling.stream) throw ApiError(400, "a reward model does not stream: its answer is one score", "stream");
      send_json(res, 200, impl->options.score_chat(request));
    }));
    svr.Post("/v1/completions", v1([](const httplib::Request&, httplib::Response&) {
      throw ApiError(400, "this server runs a reward model: send the conversation to score to /v1/chat/completions");
    }));
  } else {
    svr.Post("/v1/chat/completions", completion_route(parse_chat_request, &CompletionService::start_chat));
    svr.Post("/v1/completions", completion_route(parse_completion_request, &CompletionService::start_completion));
  }
  // Anything else (an unknown path, or a known one with the wrong method): OpenAI's 404 shape.
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      send_json(res, 404, error_json("Not found: " + req.method + " " + req.path, "invalid_request_error", "", "not_found"));
    else
      send_json(res, res.status, error_json("HTTP error " + std::to_string(res.status), "invalid_request_error"));
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_json(res, 500, error_json(what, "server_error", "", "internal_error"));
  });
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  auto& o = impl_->options;
  int port = o.port;
  if (port == 0) {
    port = impl_->server.bind_to_any_port(o.host);
  } else if (!impl_->server.bind_to_port(o.host, port)) {
    port = -1;
  }
  SWIFT_CHECK(port > 0, DataError, "cannot listen on " + o.host + ":" + std::to_string(o.port),
              "is another server using the port? pick another --port (or --host 127.0.0.1)");
  return port;
}

void HttpServer::serve() {
  impl_->serving = true;
  if (!impl_->stop_requested) impl_->server.listen_after_bind();
  impl_->serving = false;
}

void HttpServer::stop() {
  impl_->stop_requested = true;
  // httplib ignores stop() until listen_after_bind() has marked itself running, so a signal arriving just as the
  // server starts would be lost (and a second one would leave it answering 503 forever): wait for that moment.
  while (impl_->serving && !impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->server.stop();
}

}  // namespace swift::serve
