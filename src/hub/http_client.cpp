// libcurl easy interface: one handle per client (connections reused across requests), statuses left to callers.
#include "swift/hub/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <mutex>

#include "swift/core/error.h"

namespace swift::hub {

namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// What one transfer collects; the callbacks' user data.
struct Transfer {
  CURL* curl = nullptr;
  HttpResponse* response = nullptr;
  const DownloadSink* sink = nullptr;
  int64_t offset = 0;
  size_t max_body = 0;
  bool body_started = false;
  bool writing_to_sink = false;
  std::exception_ptr error;  // thrown by the sink; rethrown after curl returns
  bool too_large = false;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->hops.emplace_back();
  } else if (const auto colon = line.find(':'); colon != std::string::npos && !t->response->hops.empty()) {
    t->response->hops.back()[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return size * count;
}

constexpr size_t kErrorBodyBytes = 4096;  // enough of an error page to quote

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  try {
    if (!t->body_started) {
      t->body_started = true;
      long status = 0;
      curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
      t->writing_to_sink = t->sink != nullptr && status >= 200 && status < 300;
      if (t->writing_to_sink && t->offset > 0 && status == 200) t->sink->restart();
      if (t->writing_to_sink && t->offset > 0 && status == 206) {
        // "bytes START-END/TOTAL" must start where the partial file ends, or the bytes would land in the wrong place.
        const std::string range = t->response->header("content-range");
        const auto start = range.find_first_of("0123456789");
        if (start == std::string::npos || std::stoll(range.substr(start)) != t->offset) {
          t->sink->restart();
          throw DataError("asked to resume at byte " + std::to_string(t->offset) + ", the server answered '" + range + "'",
                          "run the command again: the download starts over");
        }
      }
    }
    if (t->writing_to_sink) {
      t->sink->write(data, n);
      return n;
    }
    std::string& body = t->response->body;
    const size_t limit = t->sink ? kErrorBodyBytes : t->max_body;
    if (body.size() + n > limit) {
      if (t->sink) {
        body.append(data, std::min(n, limit - std::min(limit, body.size())));
        return n;
      }
      t->too_large = true;
      return 0;
    }
    body.append(data, n);
    return n;
  } catch (...) {
    t->error = std::current_exception();
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
}

// A download counts as stalled below 1 byte/s for stall_s seconds; the transfer then fails instead of hanging.
void set_common_options(CURL* curl, const HttpTimeouts& timeouts, curl_slist* headers, char* errbuf) {
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, timeouts.connect_s);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, timeouts.stall_s);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "swift-hub/1 (libcurl; a C++ ms-swift)");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: the string forms
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
}

}  // namespace

std::string HttpResponse::header(const std::string& name) const {
  if (hops.empty()) return "";
  const auto it = hops.back().find(lower(name));
  return it == hops.back().end() ? "" : it->second;
}

std::string HttpResponse::any_header(const std::string& name) const {
  const std::string key = lower(name);
  for (auto hop = hops.rbegin(); hop != hops.rend(); ++hop)
    if (const auto it = hop->find(key); it != hop->end()) return it->second;
  return "";
}

struct HttpClient::Handle {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  ~Handle() {
    curl_slist_free_all(headers);
    if (curl) curl_easy_cleanup(curl);
  }
};

HttpClient::HttpClient(HttpTimeouts timeouts, std::vector<std::string> headers)
    : timeouts_(timeouts), headers_(std::move(headers)), handle_(std::make_unique<Handle>()) {
  global_init();
  handle_->curl = curl_easy_init();
  SWIFT_ASSERT(handle_->curl != nullptr, "curl_easy_init failed");
  for (const auto& h : headers_) handle_->headers = curl_slist_append(handle_->headers, h.c_str());
}

HttpClient::~HttpClient() = default;

HttpResponse HttpClient::get(const std::string& url, size_t max_body) { return perform(url, false, 0, nullptr, max_body); }

HttpResponse HttpClient::head(const std::string& url) { return perform(url, true, 0, nullptr, 0); }

HttpResponse HttpClient::download(const std::string& url, int64_t offset, const DownloadSink& sink) {
  return perform(url, false, offset, &sink, 0);
}

HttpResponse HttpClient::perform(const std::string& url, bool head, int64_t offset, const DownloadSink* sink,
                                 size_t max_body) {
  CURL* curl = handle_->curl;
  curl_easy_reset(curl);  // options only; open connections stay for reuse
  char errbuf[CURL_ERROR_SIZE] = {0};
  set_common_options(curl, timeouts_, handle_->headers, errbuf);
  HttpResponse response;
  Transfer transfer;
  transfer.curl = curl;
  transfer.response = &response;
  transfer.sink = sink;
  transfer.offset = offset;
  transfer.max_body = max_body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  if (head) {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  }
  // CURLOPT_RANGE rather than RESUME_FROM: curl then hands over a 200 (a server ignoring the range) instead of
  // failing, and on_body starts the file over.
  const std::string range = std::to_string(offset) + "-";
  if (offset > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  const CURLcode code = curl_easy_perform(curl);
  if (transfer.error) std::rethrow_exception(transfer.error);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  char* effective = nullptr;
  curl_easy_getinfo(curl, CURLINFO_EFFECTIVE_URL, &effective);
  response.url = effective ? effective : url;
  SWIFT_CHECK(!transfer.too_large, DataError,
              "the answer of " + url + " is larger than " + std::to_string(max_body >> 20) + " MiB",
              "check HF_ENDPOINT / MODELSCOPE_ENDPOINT: this does not look like a hub's API");
  if (code != CURLE_OK) {
    const std::string detail = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(code));
    throw TransferError("cannot download " + url + ": " + detail,
                    code == CURLE_OPERATION_TIMEDOUT
                        ? "the server stopped sending; run the command again to resume where it stopped"
                        : "check the network (and https_proxy), or HF_ENDPOINT / MODELSCOPE_ENDPOINT; an interrupted "
                          "download resumes when the command runs again");
  }
  return response;
}

namespace {
std::string percent_encode(const std::string& text, const std::string& keep, bool plus_for_space) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || keep.find(static_cast<char>(c)) != std::string::npos) {
      out += static_cast<char>(c);
    } else if (c == ' ' && plus_for_space) {
      out += '+';
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}
}  // namespace

std::string url_encode_path(const std::string& path) { return percent_encode(path, "/", false); }
std::string url_encode_component(const std::string& text) { return percent_encode(text, "", false); }
std::string url_encode_query_value(const std::string& text) { return percent_encode(text, "", true); }

}  // namespace swift::hub
