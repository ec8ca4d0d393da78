// A hub's HTTP answer judged once for every caller: what the user can fix (a wrong id, a missing token, a revision
// that does not exist: UsageError, exit 2) apart from what went wrong on the way (a server error: DataError, exit 3).
#pragma once

#include <string>

#include "swift/hub/hub_id.h"
#include "swift/hub/http_client.h"

namespace swift::hub {

struct HubRequest {
  Hub hub;
  RepoType type;
  std::string repo_id;
  std::string revision;
  std::string endpoint;
  std::string file;  // "" for the repository's listing
};

// Throws unless `response` is a 2xx, with a message naming the id (and file), the hub, the endpoint and the fix.
void raise_for_status(const HttpResponse& response, const HubRequest& request);

}  // namespace swift::hub
