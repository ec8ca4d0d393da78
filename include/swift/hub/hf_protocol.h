// The Hugging Face Hub's HTTP API as huggingface_hub speaks it (hf_api.py, file_download.py):
//   GET  {endpoint}/api/models/{repo}/revision/{revision}?blobs=true     the commit ("sha") and the files
//        ("siblings": rfilename, size, blobId, lfs.sha256); datasets: /api/datasets/...
//   GET  {endpoint}/{repo}/resolve/{commit}/{path}                        a file (datasets: /datasets/{repo}/...),
//        LFS files through a redirect to a CDN whose first answer carries X-Linked-Etag (the sha256) and
//        X-Linked-Size
//   HEAD the same URL, redirects not followed: the file's etag when the listing lacks blob ids (some mirrors)
// Authorization: Bearer <token> on every request to the endpoint.
#pragma once

#include <string>

#include "swift/hub/http_client.h"
#include "swift/hub/repo_listing.h"

namespace swift::hub {

std::string hf_info_url(const std::string& endpoint, RepoType type, const std::string& repo_id, const std::string& revision);
std::string hf_file_url(const std::string& endpoint, RepoType type, const std::string& repo_id, const std::string& revision,
                        const std::string& path);

// The repository at `revision`: its commit and every file, each with the URL of that commit's copy.
RepoListing hf_list_repo(HttpClient& http, const std::string& endpoint, RepoType type, const std::string& repo_id,
                         const std::string& revision);

// Parses the info API's JSON (exposed for tests); DataError when it is not one.
RepoListing hf_parse_info(const std::string& json, const std::string& endpoint, RepoType type, const std::string& repo_id,
                          const std::string& revision);

// The cache's blob name of `file` when the listing did not give it: a HEAD request's X-Linked-Etag or ETag.
std::string hf_fetch_etag(HttpClient& http, const RemoteFile& file, const std::string& endpoint, RepoType type,
                          const std::string& repo_id, const std::string& revision);

// ETag header value without W/ and quotes, as huggingface_hub normalises it.
std::string normalize_etag(std::string etag);

}  // namespace swift::hub
