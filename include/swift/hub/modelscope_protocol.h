// ModelScope's HTTP API as modelscope_hub (the SDK under modelscope >= 1.38, _legacy_api.py) speaks it:
//   GET {endpoint}/api/v1/models/{repo}/repo/files?Revision={rev}&Recursive=True
//       {"Code": 200, "Data": {"Files": [{"Path", "Type": "blob"|"tree", "Size", "Sha256"}, ...]}, "Success": true}
//   GET {endpoint}/api/v1/datasets/{repo}/repo/tree?Revision={rev}&Recursive=True&PageNumber={n}&PageSize=200
//       the same, a page at a time (a page shorter than PageSize is the last)
//   GET {endpoint}/api/v1/{models|datasets}/{repo}/repo?Revision={rev}&FilePath={path}   a file (redirects to a
//       CDN for large ones)
// A token goes as "Authorization: Bearer" and as the m_session_id cookie, as the SDK sends both.
#pragma once

#include <string>

#include "swift/hub/http_client.h"
#include "swift/hub/repo_listing.h"

namespace swift::hub {

std::string modelscope_files_url(const std::string& endpoint, RepoType type, const std::string& repo_id,
                                 const std::string& revision, int page = 1);
std::string modelscope_file_url(const std::string& endpoint, RepoType type, const std::string& repo_id,
                                const std::string& revision, const std::string& path);

RepoListing modelscope_list_repo(HttpClient& http, const std::string& endpoint, RepoType type, const std::string& repo_id,
                                 const std::string& revision);

// One page of the listing's JSON into `listing` (exposed for tests); returns the number of entries it held.
size_t modelscope_parse_files(const std::string& json, const std::string& endpoint, RepoListing& listing);

constexpr int kModelScopePageSize = 200;

}  // namespace swift::hub
