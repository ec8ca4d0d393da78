// HTTP statuses of the hubs into UserErrors with their fixes.
#include "swift/hub/hub_errors.h"

#include "swift/core/error.h"

namespace swift::hub {

namespace {
std::string excerpt(const std::string& body) {
  std::string s = body.substr(0, 200);
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}
}  // namespace

void raise_for_status(const HttpResponse& response, const HubRequest& r) {
  if (response.ok()) return;
  const bool hf = r.hub == Hub::kHuggingFace;
  const std::string what = repo_type_name(r.type) + " " + r.repo_id + (r.file.empty() ? "" : " (file " + r.file + ")");
  const std::string where = hub_name(r.hub) + " (" + r.endpoint + ")";
  const std::string status = "HTTP " + std::to_string(response.status);
  const std::string token_hint =
      hf ? "check the id; a private or gated repository needs a token: --hub_token or HF_TOKEN (gated models also need "
           "access granted on their page)"
         : "check the id; a private repository needs a token: --hub_token or MODELSCOPE_API_TOKEN";
  const std::string other_hub =
      hf ? " (--use_hf false or USE_HF=0 looks on ModelScope instead)" : " (--use_hf true or USE_HF=1 looks on Hugging Face instead)";
  const std::string error_code = response.any_header("x-error-code");
  if (response.status == 401 || response.status == 403)
    throw UsageError(where + " refused " + what + " (" + status + "): it does not exist there, or it is private or gated",
                     token_hint);
  if (response.status == 404) {
    if (error_code == "RevisionNotFound")
      throw UsageError("--revision " + r.revision + " does not exist in " + what + " on " + where,
                       "give a branch, tag or commit of the repository (default: main on Hugging Face, master on ModelScope)");
    if (!r.file.empty() || error_code == "EntryNotFound")
      throw DataError(where + " lists " + what + " but does not serve it (" + status + ")",
                      "the repository changed while downloading, or the mirror is incomplete: run the command again");
    throw UsageError(what + " is not a local path and " + where + " has no such " + repo_type_name(r.type) +
                         " at revision " + r.revision + " (" + status + ": " + excerpt(response.body) + ")",
                     "check the path or the id" + other_hub);
  }
  throw DataError(where + " answered " + status + " for " + what + ": " + excerpt(response.body),
                  hf ? "retry later, or use a mirror (HF_ENDPOINT); with the files cached, HF_HUB_OFFLINE=1 skips the hub"
                     : "retry later; with the files cached, MODELSCOPE_OFFLINE=1 skips the hub");
}

}  // namespace swift::hub
