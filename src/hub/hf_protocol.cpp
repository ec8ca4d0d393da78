// Hugging Face Hub: the repository info API and file URLs.
#include "swift/hub/hf_protocol.h"

#include <nlohmann/json.hpp>

#include <cctype>

#include "swift/core/error.h"
#include "swift/hub/hub_errors.h"
#include "swift/hub/sha256.h"

using nlohmann::json;

namespace swift::hub {

namespace {
std::string type_segment(RepoType type) { return type == RepoType::kDataset ? "datasets" : "models"; }

bool is_hex_name(const std::string& text) {
  if (text.empty() || text.size() > 128) return false;
  for (unsigned char c : text)
    if (!std::isxdigit(c)) return false;
  return true;
}
}  // namespace

std::string hf_info_url(const std::string& endpoint, RepoType type, const std::string& repo_id, const std::string& revision) {
  return endpoint + "/api/" + type_segment(type) + "/" + repo_id + "/revision/" + url_encode_component(revision) +
         "?blobs=true";
}

std::string hf_file_url(const std::string& endpoint, RepoType type, const std::string& repo_id, const std::string& revision,
                        const std::string& path) {
  return endpoint + (type == RepoType::kDataset ? "/datasets/" : "/") + repo_id + "/resolve/" +
         url_encode_component(revision) + "/" + url_encode_path(path);
}

std::string normalize_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  while (!etag.empty() && etag.front() == '"') etag.erase(0, 1);
  while (!etag.empty() && etag.back() == '"') etag.pop_back();
  return etag;
}

RepoListing hf_parse_info(const std::string& text, const std::string& endpoint, RepoType type, const std::string& repo_id,
                          const std::string& revision) {
  const json j = json::parse(text, nullptr, false);
  const std::string where = endpoint + "'s answer for " + repo_id;
  SWIFT_CHECK(j.is_object() && j.contains("sha") && j["sha"].is_string() && j.contains("siblings") &&
                  j["siblings"].is_array(),
              DataError, where + " is not a Hugging Face repository description (no \"sha\" and \"siblings\")",
              "check HF_ENDPOINT: it must be a Hugging Face Hub or a mirror of its API");
  RepoListing listing;
  listing.hub = Hub::kHuggingFace;
  listing.type = type;
  listing.repo_id = repo_id;
  listing.revision = revision;
  listing.commit = j["sha"].get<std::string>();
  for (const auto& s : j["siblings"]) {
    if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) continue;
    RemoteFile f;
    f.path = s["rfilename"].get<std::string>();
    // A path that climbs out of the snapshot would write outside the cache.
    SWIFT_CHECK(!f.path.empty() && f.path.front() != '/' && ("/" + f.path + "/").find("/../") == std::string::npos,
                DataError, where + " lists a file outside the repository: '" + f.path + "'", "check HF_ENDPOINT");
    if (s.contains("size") && s["size"].is_number_integer()) f.size = s["size"].get<int64_t>();
    // The blob id names a file in blobs/: only a plain hex name is taken (else a HEAD asks for the ETag).
    if (s.contains("blobId") && s["blobId"].is_string() && is_hex_name(s["blobId"].get<std::string>()))
      f.blob_id = s["blobId"].get<std::string>();
    if (s.contains("lfs") && s["lfs"].is_object()) {
      const auto& lfs = s["lfs"];
      if (lfs.contains("sha256") && lfs["sha256"].is_string() && is_sha256_hex(lfs["sha256"].get<std::string>())) {
        f.sha256 = lfs["sha256"].get<std::string>();
        f.blob_id = f.sha256;  // LFS blobs are named by their sha256 in the cache
      }
      if (lfs.contains("size") && lfs["size"].is_number_integer()) f.size = lfs["size"].get<int64_t>();
    }
    f.url = hf_file_url(endpoint, type, repo_id, listing.commit, f.path);
    listing.files.push_back(std::move(f));
  }
  return listing;
}

RepoListing hf_list_repo(HttpClient& http, const std::string& endpoint, RepoType type, const std::string& repo_id,
                         const std::string& revision) {
  const HttpResponse response = http.get(hf_info_url(endpoint, type, repo_id, revision));
  raise_for_status(response, {Hub::kHuggingFace, type, repo_id, revision, endpoint, ""});
  return hf_parse_info(response.body, endpoint, type, repo_id, revision);
}

std::string hf_fetch_etag(HttpClient& http, const RemoteFile& file, const std::string& endpoint, RepoType type,
                          const std::string& repo_id, const std::string& revision) {
  const HttpResponse response = http.head(file.url);
  if (response.status < 300 || response.status >= 400)
    raise_for_status(response, {Hub::kHuggingFace, type, repo_id, revision, endpoint, file.path});
  std::string etag = normalize_etag(response.any_header("x-linked-etag"));
  if (etag.empty()) etag = normalize_etag(response.any_header("etag"));
  SWIFT_CHECK(!etag.empty() && etag.find('/') == std::string::npos && etag != "." && etag != "..", DataError,
              endpoint + " gave no usable ETag for " + file.path + " of " + repo_id,
              "check HF_ENDPOINT: a Hugging Face mirror must pass on ETag / X-Linked-Etag");
  return etag;
}

}  // namespace swift::hub
