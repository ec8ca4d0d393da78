// Routes of the OpenAI-compatible server, on Boost.Beast's HTTP/1.1 parser and serializer (the only translation unit
// that includes Beast):
//   GET  /health                 200 when the server is up (no key needed)
//   GET  /v1/models              the served model
//   POST /v1/chat/completions    chat, streamed (SSE) or not
//   POST /v1/completions         text or token-id prompts, streamed or not
// A known path with another method is 405 (with Allow), anything else 404, both at once.
//
// One thread per connection, at most HttpOptions::threads of them (more get 503 at once). A connection reads its
// requests one after another from one buffer, so pipelined requests are answered in order. Every wait is bounded
// (TimedSocket): an idle connection closes after keep_alive_timeout, a request must arrive whole within
// request_timeout, and each body is bounded alone (413) and with all others held at once (503). Beast rejects
// what RFC 9112 calls malformed (conflicting Content-Length, Content-Length with chunked, bad chunks): 400 and
// the connection closes, since nothing after such a request can be trusted. Every handler catches everything: a
// request can fail, the server cannot.
#include "swift/serve/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/core/memory.h"
#include "swift/serve/completion_service.h"
#include "swift/serve/connection_probe.h"
#include "timed_socket.h"

using nlohmann::json;
namespace asio = boost::asio;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace swift::serve {

namespace {

// How long a read waits before the connection looks at its deadlines and at stop() again.
constexpr auto kPollInterval = 100ms;
// After an error answer, how long the client may go on sending (dropped) before the socket closes.
constexpr auto kLinger = 1000ms;
// A request whose body was at least this large gives the allocator's free pages back once answered.
constexpr size_t kLargeBody = 1u << 20;
// How much a connection reads at once beyond the header limit (its buffer's capacity).
constexpr size_t kReadChunk = 64u << 10;

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
using Parser = http::request_parser<http::string_body>;

std::string dump(const json& body) {
  // Token texts can be partial UTF-8 (byte-level BPE): replace invalid bytes rather than fail the response.
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

Response json_response(const Request& req, http::status status, const json& body) {
  Response res(status, req.version());
  res.set(http::field::content_type, "application/json");
  res.body() = dump(body);
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return res;
}

// The answer to a request that could not be read whole (its version and keep-alive are unknown): HTTP/1.1 with
// Connection: close, since the connection closes after it.
Response refusal(http::status status, const std::string& message, const std::string& code) {
  Response res(status, 11);
  res.set(http::field::content_type, "application/json");
  res.body() = dump(error_json(message, "invalid_request_error", "", code));
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

bool authorized(const Request& req, const std::string& key) {
  if (key.empty()) return true;
  const auto it = req.find(http::field::authorization);
  // The whole value, bytes after a NUL included: "Bearer <key>\0junk" is not the key.
  return it != req.end() && std::string(it->value()) == "Bearer " + key;
}

template <typename Message>
bool send(TimedSocket& socket, Message& message) {
  boost::system::error_code ec;
  http::write(socket, message, ec);
  return !ec;
}

// The bytes of request bodies held at once, bounded: each request leases its body's bytes as they become known
// and gives them back once the body is parsed and dropped.
class BodyBudget {
 public:
  explicit BodyBudget(size_t limit) : limit_(static_cast<int64_t>(limit)) {}

  class Lease {
   public:
    explicit Lease(BodyBudget& budget) : budget_(budget) {}
    ~Lease() { release(); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // False, holding what it held, when `bytes` would take the server past its limit.
    bool grow_to(size_t bytes) {
      const int64_t more = static_cast<int64_t>(bytes) - held_;
      if (more <= 0) return true;
      if (budget_.held_.fetch_add(more) + more > budget_.limit_) {
        budget_.held_ -= more;
        return false;
      }
      held_ += more;
      return true;
    }
    void release() {
      budget_.held_ -= held_;
      held_ = 0;
    }

   private:
    BodyBudget& budget_;
    int64_t held_ = 0;
  };

 private:
  const int64_t limit_;
  std::atomic<int64_t> held_{0};
};

}  // namespace

struct HttpServer::Impl {
  CompletionService& service;
  HttpOptions options;
  BodyBudget bodies;
  int listener = -1;
  std::atomic<bool> stopping{false};
  std::mutex mutex;
  std::condition_variable idle;  // notified when a connection ends
  int connections = 0;           // being served

  Impl(CompletionService& s, HttpOptions o) : service(s), options(std::move(o)), bodies(options.max_total_body_bytes) {}
  ~Impl() {
    if (listener >= 0) ::close(listener);
  }

  void serve_connection(int fd);
  // Reads one request into `parser` within the deadlines. False when the connection is to close without an
  // answer (the peer left, stayed quiet, or the server stops); a request that cannot be taken (400, 408, 413,
  // 431, 503) is answered here before returning false.
  bool read_request(TimedSocket& socket, boost::beast::flat_buffer& buffer, Parser& parser, BodyBudget::Lease& lease);
  // Answers one request; false when the connection must close afterwards.
  bool answer(TimedSocket& socket, Request& req, BodyBudget::Lease& lease);
  Response route(TimedSocket& socket, Request& req, BodyBudget::Lease& lease, bool& answered);
  // Streams a job as server-sent events: chunked on HTTP/1.1; HTTP/1.0 has no chunks, so there the body runs
  // until the connection closes. A failed write (the client went away or stopped reading) cancels the job.
  void stream(TimedSocket& socket, const Request& req, const std::shared_ptr<Job>& job);
};

bool HttpServer::Impl::read_request(TimedSocket& socket, boost::beast::flat_buffer& buffer, Parser& parser,
                                    BodyBudget::Lease& lease) {
  parser.header_limit(static_cast<std::uint32_t>(options.max_header_bytes));
  parser.body_limit(options.max_body_bytes);
  const auto waiting_since = Clock::now();
  std::optional<Clock::time_point> begun;  // the request's first byte
  bool header_checked = false;
  auto refuse = [&](http::status status, const std::string& message, const std::string& code) {
    auto res = refusal(status, message, code);
    send(socket, res);
    return false;
  };
  for (;;) {
    boost::system::error_code ec;
    http::read_some(socket, buffer, parser, ec);
    if (!begun && (buffer.size() > 0 || parser.got_some())) begun = Clock::now();
    if (!ec || ec == asio::error::would_block) {
      if (parser.is_header_done() && !header_checked) {
        header_checked = true;
        const auto& header = parser.get();
        // RFC 9112 6.3: a request body whose length cannot be told (a coding other than chunked) is refused.
        if (header.count(http::field::transfer_encoding) > 0 && !parser.chunked())
          return refuse(http::status::bad_request, "Transfer-Encoding must end in chunked", "bad_request");
        if (parser.content_length() && !lease.grow_to(*parser.content_length()))
          return refuse(http::status::service_unavailable, "the server holds too many request bodies now; retry",
                        "server_busy");
        if (!parser.is_done() && header.version() >= 11 && boost::beast::iequals(header[http::field::expect], "100-continue")) {
          http::response<http::empty_body> go_on(http::status::continue_, header.version());
          if (!send(socket, go_on)) return false;
        }
      }
      if (parser.is_header_done() && parser.chunked() && !lease.grow_to(parser.get().body().size()))
        return refuse(http::status::service_unavailable, "the server holds too many request bodies now; retry",
                      "server_busy");
      if (!ec && parser.is_done()) return true;
      const auto now = Clock::now();
      if (!begun) {
        if (stopping || now - waiting_since > options.keep_alive_timeout) return false;  // idle: close quietly
      } else if (now - *begun > options.request_timeout) {
        return refuse(http::status::request_timeout, "the request did not arrive whole within " +
                                                         std::to_string(options.request_timeout.count()) + " ms",
                      "request_timeout");
      }
      continue;
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset) return false;
    if (ec == http::error::body_limit)
      return refuse(http::status::payload_too_large,
                    "the request body is larger than " + std::to_string(options.max_body_bytes) + " bytes",
                    "request_too_large");
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow)
      return refuse(http::status::request_header_fields_too_large,
                    "the request line and headers are larger than " + std::to_string(options.max_header_bytes) +
                        " bytes",
                    "headers_too_large");
    // Malformed (bad or conflicting Content-Length, a bad chunk or header): nothing after it can be trusted.
    return refuse(http::status::bad_request, "malformed HTTP request: " + ec.message(), "bad_request");
  }
}

void HttpServer::Impl::stream(TimedSocket& socket, const Request& req, const std::shared_ptr<Job>& job) {
  const bool chunked = req.version() >= 11;
  http::response<http::empty_body> head(http::status::ok, req.version());
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  if (chunked) head.chunked(true);
  else head.keep_alive(false);
  http::response_serializer<http::empty_body> serializer(head);
  boost::system::error_code ec;
  http::write_header(socket, serializer, ec);
  if (ec) return job->cancel();
  auto write = [&](const std::string& bytes) {
    boost::system::error_code e;
    if (chunked) asio::write(socket, http::make_chunk(asio::buffer(bytes)), e);
    else asio::write(socket, asio::buffer(bytes), e);
    return !e;
  };
  try {
    const bool ok = job->stream([&](const std::string& data) { return write("data: " + data + "\n\n"); });
    if (!ok) return log_info("client went away: request cancelled");
    if (chunked) asio::write(socket, http::make_chunk_last(), ec);
  } catch (const std::exception& e) {
    log_warn("streaming failed: ", e.what());
    job->cancel();
  }
}

Response HttpServer::Impl::route(TimedSocket& socket, Request& req, BodyBudget::Lease& lease, bool& answered) {
  const std::string target(req.target());
  const std::string path = target.substr(0, target.find('?'));
  const std::string method(req.method_string());
  const bool known = path == "/health" || path == "/v1/models" || path == "/v1/chat/completions" || path == "/v1/completions";
  if (!known)
    return json_response(req, http::status::not_found,
                         error_json("Not found: " + method + " " + path, "invalid_request_error", "", "not_found"));
  const http::verb wanted = path == "/health" || path == "/v1/models" ? http::verb::get : http::verb::post;
  if (req.method() != wanted) {
    const std::string allowed(http::to_string(wanted));
    auto res = json_response(req, http::status::method_not_allowed,
                             error_json("Method not allowed: " + method + " " + path + " (use " + allowed + ")",
                                        "invalid_request_error", "", "method_not_allowed"));
    res.set(http::field::allow, allowed);
    return res;
  }
  if (path == "/health") {
    Response res(http::status::ok, req.version());
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    return res;
  }
  if (!authorized(req, options.api_key)) throw ApiError(401, "Incorrect API key provided", "", "invalid_api_key");
  if (path == "/v1/models") return json_response(req, http::status::ok, service.models());

  // The body is parsed once; its bytes are dropped before the model runs, so a large prompt is not held twice.
  auto drop_body = [&] {
    Request::body_type::value_type().swap(req.body());
    lease.release();
  };
  if (options.score_chat) {  // a reward model scores conversations; it has nothing to generate with
    if (path == "/v1/completions")
      throw ApiError(400, "this server runs a reward model: send the conversation to score to /v1/chat/completions");
    const auto request = parse_chat_request(req.body(), service.options().limits);
    drop_body();
    if (request.sampling.stream) throw ApiError(400, "a reward model does not stream: its answer is one score", "stream");
    return json_response(req, http::status::ok, options.score_chat(request));
  }
  std::shared_ptr<Job> job;
  bool streamed = false;
  if (path == "/v1/chat/completions") {
    const auto request = parse_chat_request(req.body(), service.options().limits);
    drop_body();
    streamed = request.sampling.stream;
    job = service.start_chat(request);
  } else {
    const auto request = parse_completion_request(req.body(), service.options().limits);
    drop_body();
    streamed = request.sampling.stream;
    job = service.start_completion(request);
  }
  if (streamed) {
    stream(socket, req, job);
    answered = true;
    return {};
  }
  // Nothing is written before the answer, so a vanished client is noticed by peeking at its socket.
  const ConnectionProbe connection(socket.native_handle());
  try {
    return json_response(req, http::status::ok, job->result([&] { return connection.closed_by_peer(); }));
  } catch (const ClientGone&) {
    log_info("client went away before its answer: request cancelled");
    answered = true;
    req.keep_alive(false);
    return {};
  }
}

bool HttpServer::Impl::answer(TimedSocket& socket, Request& req, BodyBudget::Lease& lease) {
  const bool large = req.body().size() >= kLargeBody;
  bool answered = false;  // by route() itself: a stream, or nobody left to answer
  Response res;
  try {
    res = route(socket, req, lease, answered);
  } catch (const ApiError& e) {
    res = json_response(req, static_cast<http::status>(e.status), error_json(e.what(), e.type, e.param, e.code));
  } catch (const std::exception& e) {
    log_warn(req.method_string(), " ", req.target(), " failed: ", e.what());
    res = json_response(req, http::status::internal_server_error,
                        error_json(std::string("internal error: ") + e.what(), "server_error", "", "internal_error"));
  }
  lease.release();
  bool keep_alive = req.keep_alive() && !stopping;
  if (answered) {
    keep_alive = keep_alive && req.version() >= 11;
  } else {
    res.keep_alive(keep_alive);
    keep_alive = send(socket, res) && keep_alive;
  }
  if (large) {
    Request::body_type::value_type().swap(req.body());
    return_free_memory();  // the body, its parse and its tokens were freed: give the pages back
  }
  return keep_alive;
}

void HttpServer::Impl::serve_connection(int fd) {
  TimedSocket socket(fd);
  socket.set_read_wait(std::chrono::duration_cast<std::chrono::milliseconds>(kPollInterval));
  socket.set_write_wait(options.request_timeout);
  // Holds at most a header block and one read: a body goes straight into its request as it is parsed.
  boost::beast::flat_buffer buffer(options.max_header_bytes + kReadChunk);
  try {
    for (;;) {
      BodyBudget::Lease lease(bodies);
      Parser parser;
      if (!read_request(socket, buffer, parser, lease)) break;
      Request req = parser.release();
      if (!answer(socket, req, lease) || stopping) break;
    }
  } catch (const std::exception& e) {
    log_warn("connection failed: ", e.what());
  }
  socket.close_gracefully(std::chrono::duration_cast<std::chrono::milliseconds>(kLinger));
}

HttpServer::HttpServer(CompletionService& service, HttpOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  auto& o = impl_->options;
  const std::string where = o.host + ":" + std::to_string(o.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int lookup = ::getaddrinfo(o.host.c_str(), std::to_string(o.port).c_str(), &hints, &found);
  SWIFT_CHECK(lookup == 0 && found, UsageError, "--host " + o.host + " is not an address of this machine (" +
                                                    std::string(gai_strerror(lookup)) + ")",
              "e.g. --host 0.0.0.0 (every interface) or --host 127.0.0.1");
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  const int yes = 1;
  int failed = fd < 0;
  if (!failed) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  if (!failed) failed = ::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0;
  if (failed) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw DataError("cannot listen on " + where + ": " + why,
                    "is another server using the port? pick another --port (or --host 127.0.0.1)");
  }
  impl_->listener = fd;
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  return bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

void HttpServer::serve() {
  Impl& impl = *impl_;
  if (impl.listener < 0) throw std::logic_error("HttpServer::serve() before bind()");
  while (!impl.stopping) {
    pollfd p{impl.listener, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kPollInterval.count())) <= 0 || impl.stopping) continue;
    const int fd = ::accept4(impl.listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) {  // out of descriptors: the waiting clients are served when some close
        log_warn("cannot accept a connection: ", std::strerror(errno));
        std::this_thread::sleep_for(kPollInterval);
      }
      continue;
    }
    const int yes = 1;  // a streamed token goes out at once instead of waiting to be coalesced with the next
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    {
      std::unique_lock<std::mutex> lock(impl.mutex);
      if (impl.connections >= impl.options.threads) {  // every thread is busy: say so at once, hold nothing
        lock.unlock();
        TimedSocket socket(fd);
        socket.set_write_wait(std::chrono::milliseconds(100));
        auto res = refusal(http::status::service_unavailable, "the server has no free connection now; retry",
                           "server_busy");
        send(socket, res);
        socket.close_gracefully(std::chrono::milliseconds(0));
        continue;
      }
      ++impl.connections;
    }
    std::thread([&impl, fd] {
      impl.serve_connection(fd);
      std::lock_guard<std::mutex> lock(impl.mutex);
      --impl.connections;
      impl.idle.notify_all();
    }).detach();
  }
  // In-flight requests finish; idle connections notice `stopping` within a poll interval.
  std::unique_lock<std::mutex> lock(impl.mutex);
  impl.idle.wait(lock, [&] { return impl.connections == 0; });
}

void HttpServer::stop() { impl_->stopping = true; }

}  // namespace swift::serve
