// HTTPS through libcurl: the well-kept client (TLS with the system's CA store, redirects, proxies from
// https_proxy/no_proxy, Range requests), with bounds so nothing hangs: a connect timeout and an abort when no byte
// arrives for a while. Statuses are the caller's to judge; a transport failure is a DataError naming the URL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "swift/core/error.h"

namespace swift::hub {

// The connection failed or stalled (exit 3 as every I/O error); a download may resume where it stopped.
struct TransferError : DataError {
  using DataError::DataError;
};

struct HttpTimeouts {
  long connect_s = 10;  // a host that does not answer
  long stall_s = 30;    // no byte for this long aborts (a dead connection, a stuck mirror)
};

struct HttpResponse {
  long status = 0;
  std::string url;  // after redirects
  // Each response on the way, redirects first, header names in lower case: Hugging Face puts X-Linked-Etag and
  // X-Repo-Commit on the redirect, the CDN answers the file.
  std::vector<std::map<std::string, std::string>> hops;
  std::string body;  // the whole body (get), or the start of an error body (download)

  std::string header(const std::string& name) const;      // of the last response; "" when absent
  std::string any_header(const std::string& name) const;  // of the last response that has it
  bool ok() const { return status >= 200 && status < 300; }
};

// Where a download's bytes go. `restart` is called when a server answered a Range request with the whole file
// (200): what was written before must be dropped.
struct DownloadSink {
  std::function<void()> restart;
  std::function<void(const char* data, size_t size)> write;
};

class HttpClient {
 public:
  // `headers` go with every request ("Authorization: Bearer ..."); libcurl drops them on a redirect to another
  // host, so a token never reaches a CDN.
  explicit HttpClient(HttpTimeouts timeouts, std::vector<std::string> headers = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // GET, following redirects, the body in memory (API answers); DataError past `max_body` bytes.
  HttpResponse get(const std::string& url, size_t max_body = size_t{64} << 20);
  // HEAD without following redirects (the hub's own headers, not the CDN's).
  HttpResponse head(const std::string& url);
  // GET from byte `offset` (a Range request when > 0), a 2xx body streamed into `sink`.
  HttpResponse download(const std::string& url, int64_t offset, const DownloadSink& sink);

 private:
  struct Handle;
  HttpResponse perform(const std::string& url, bool head, int64_t offset, const DownloadSink* sink, size_t max_body);
  HttpTimeouts timeouts_;
  std::vector<std::string> headers_;
  std::unique_ptr<Handle> handle_;
};

// Percent-encoding for URL paths (each '/'-separated part encoded, '/' kept) and query values (as Python's
// quote_plus: ' ' -> '+').
std::string url_encode_path(const std::string& path);
std::string url_encode_component(const std::string& text);
std::string url_encode_query_value(const std::string& text);

}  // namespace swift::hub
