// Resumable, checked downloads into the hub caches.
#include "swift/hub/snapshot_download.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "swift/core/bytes.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/core/progress.h"
#include "swift/hub/file_lock.h"
#include "swift/hub/hf_protocol.h"
#include "swift/hub/hub_errors.h"
#include "swift/hub/sha256.h"

namespace fs = std::filesystem;

namespace swift::hub {

namespace {

[[noreturn]] void io_fail(const std::string& what, const fs::path& path) {
  throw DataError(what + " " + path.string() + ": " + std::strerror(errno),
                  "check that the cache folder is writable and the disk has room (HF_HUB_CACHE / MODELSCOPE_CACHE move it)");
}

void discard(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

int64_t size_or_zero(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

// Appends to a partial file; truncates it when the server starts over.
class PartialFile {
 public:
  explicit PartialFile(const fs::path& path) : path_(path) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);  // a failure shows in open() below
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) io_fail("cannot open", path);
  }
  ~PartialFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  void truncate() {
    if (::ftruncate(fd_, 0) != 0) io_fail("cannot truncate", path_);
  }
  void write(const char* data, size_t size) {
    while (size > 0) {
      const ssize_t n = ::write(fd_, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) io_fail("cannot write", path_);
      data += n;
      size -= static_cast<size_t>(n);
    }
  }
  void close_synced() {
    if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
      fd_ = -1;
      io_fail("cannot flush", path_);
    }
    fd_ = -1;
  }

 private:
  fs::path path_;
  int fd_ = -1;
};

// `file` into `partial`, resuming what is there; returns once `partial` holds the whole file, checked. A mismatch
// deletes `partial` and throws DataError.
void fetch_checked(HttpClient& http, const RemoteFile& file, const fs::path& partial, const HubRequest& request,
                   Progress* progress, const DownloadSettings& settings) {
  const std::string what = request.repo_id + "/" + file.path;
  for (int attempt = 1;; ++attempt) {
    int64_t have = size_or_zero(partial);
    if (file.size && have > *file.size) {  // longer than the file: not a prefix of it
      discard(partial);
      have = 0;
    }
    Sha256 hash;
    const bool check_hash = !file.sha256.empty();
    if (check_hash && have > 0) sha256_update_from_file(hash, partial, have);
    if (have > 0 && attempt == 1) log_info("resuming ", what, " at ", format_bytes(static_cast<double>(have)));
    std::string linked_sha256;  // X-Linked-Etag / ETag of an LFS file when the listing named none
    try {
      if (!file.size || have < *file.size || have == 0) {
        PartialFile out(partial);
        DownloadSink sink;
        sink.restart = [&] {  // the server ignored the Range request and sends the whole file
          out.truncate();
          hash.reset();
        };
        sink.write = [&](const char* data, size_t size) {
          out.write(data, size);
          if (check_hash) hash.update(data, size);
          if (progress) progress->advance(static_cast<int64_t>(size));
        };
        const HttpResponse response = http.download(file.url, have, sink);
        if (response.status == 416 && have > 0) {  // nothing past our end: the partial file is stale
          out.truncate();
          discard(partial);
          SWIFT_CHECK(attempt < settings.attempts, DataError, "the server refused to resume " + what,
                      "run the command again: it starts the file over");
          continue;
        }
        if (!response.ok() && size_or_zero(partial) == 0) discard(partial);  // no empty leftovers
        raise_for_status(response, request);
        out.close_synced();
        for (const char* name : {"x-linked-etag", "etag"}) {
          const std::string etag = normalize_etag(response.any_header(name));
          if (linked_sha256.empty() && is_sha256_hex(etag)) linked_sha256 = etag;
        }
      }
    } catch (const TransferError& e) {
      if (size_or_zero(partial) == 0) discard(partial);
      if (attempt >= settings.attempts) throw;
      log_warn(e.message(), "; retrying (", attempt, "/", settings.attempts - 1, "), resuming at ",
               format_bytes(static_cast<double>(size_or_zero(partial))));
      std::this_thread::sleep_for(std::chrono::seconds(attempt));
      continue;
    }
    const int64_t got = size_or_zero(partial);
    if (file.size && got < *file.size && attempt < settings.attempts) continue;  // the body ended early: resume
    if (file.size && got != *file.size) {
      if (got > *file.size) discard(partial);  // not a prefix of the file; a shorter one is resumed next time
      throw DataError(what + ": received " + std::to_string(got) + " bytes, " + hub_name(request.hub) + " lists " +
                          std::to_string(*file.size),
                      "the transfer was cut or the mirror serves another file: run the command again");
    }
    const std::string expected = check_hash ? file.sha256 : linked_sha256;
    if (!expected.empty()) {
      std::string actual;
      if (check_hash) {
        actual = hash.hex_digest();
      } else {
        actual = sha256_file(partial);
      }
      if (actual != expected) {
        discard(partial);
        throw DataError("checksum mismatch for " + what + ": its sha256 is " + actual + ", " + hub_name(request.hub) +
                            " (" + request.endpoint + ") says " + expected + "; the file was deleted",
                        "a corrupted transfer or a mirror serving other bytes: run the command again to download it anew");
      }
    }
    return;
  }
}

int64_t bytes_of(const std::vector<const RemoteFile*>& files) {
  int64_t total = 0;
  for (const auto* f : files) total += f->size.value_or(0);
  return total;
}

std::unique_ptr<Progress> make_progress(const RepoListing& listing, const std::vector<const RemoteFile*>& to_fetch,
                                        const std::string& endpoint, const fs::path& into, const DownloadSettings& settings) {
  const int64_t total = bytes_of(to_fetch);
  log_info("downloading ", to_fetch.size(), " file", to_fetch.size() == 1 ? "" : "s", " (", format_bytes(static_cast<double>(total)),
           ") of ", repo_type_name(listing.type), " ", listing.repo_id, " from ", hub_name(listing.hub), " (", endpoint,
           ") into ", into.string());
  return std::make_unique<Progress>("downloading " + listing.repo_id, total, settings.progress, Progress::Unit::kBytes);
}

}  // namespace

fs::path download_to_hf_cache(const HfCacheLayout& cache, const RepoListing& listing, const std::vector<RemoteFile>& files,
                              HttpClient& http, const std::string& endpoint, const DownloadSettings& settings) {
  const RepoType type = listing.type;
  const std::string& id = listing.repo_id;
  // Blob names first (a HEAD only where the listing has no blob ids).
  std::vector<std::string> etags;
  for (const auto& f : files)
    etags.push_back(!f.blob_id.empty() ? f.blob_id : hf_fetch_etag(http, f, endpoint, type, id, listing.commit));
  std::vector<const RemoteFile*> to_fetch;
  for (size_t i = 0; i < files.size(); ++i)
    if (!fs::exists(cache.blob(type, id, etags[i]))) to_fetch.push_back(&files[i]);
  std::unique_ptr<Progress> progress;
  if (!to_fetch.empty()) progress = make_progress(listing, to_fetch, endpoint, cache.repo_dir(type, id), settings);
  for (size_t i = 0; i < files.size(); ++i) {
    const RemoteFile& f = files[i];
    const fs::path blob = cache.blob(type, id, etags[i]);
    FileLock lock(cache.lock_file(type, id, etags[i]), id + "/" + f.path);
    if (fs::exists(blob) && (!f.size || size_or_zero(blob) == *f.size)) continue;
    const fs::path partial = cache.incomplete_blob(type, id, etags[i]);
    if (progress) progress->advance(size_or_zero(partial));
    const HubRequest request{Hub::kHuggingFace, type, id, listing.revision, endpoint, f.path};
    fetch_checked(http, f, partial, request, progress.get(), settings);
    std::error_code ec;
    fs::rename(partial, blob, ec);
    if (ec) throw DataError("cannot move " + partial.string() + " into place: " + ec.message(), "check the cache folder");
  }
  if (progress) progress->finish();
  // Every blob is whole: now the snapshot, then the ref that names it.
  for (size_t i = 0; i < files.size(); ++i) cache.link_snapshot_file(type, id, listing.commit, files[i].path, etags[i]);
  cache.write_ref(type, id, listing.revision, listing.commit);
  return cache.snapshot_dir(type, id, listing.commit);
}

fs::path modelscope_repo_folder(const ModelScopeCacheLayout& cache, RepoType type, const std::string& repo_id,
                                const std::string& revision) {
  if (revision == "master") {
    for (const auto& legacy : cache.legacy_dirs(type, repo_id)) {
      std::error_code ec;
      if (fs::is_directory(legacy) && fs::directory_iterator(legacy, ec) != fs::directory_iterator()) return legacy;
    }
  }
  return cache.snapshot_dir(type, repo_id, revision);
}

fs::path download_to_modelscope_cache(const ModelScopeCacheLayout& cache, const RepoListing& listing,
                                      const std::vector<RemoteFile>& files, HttpClient& http, const std::string& endpoint,
                                      const DownloadSettings& settings) {
  const RepoType type = listing.type;
  const std::string& id = listing.repo_id;
  const fs::path folder = modelscope_repo_folder(cache, type, id, listing.revision);
  auto in_place = [&](const RemoteFile& f) {
    const fs::path target = folder / f.path;
    return fs::exists(target) && (!f.size || size_or_zero(target) == *f.size);
  };
  std::vector<const RemoteFile*> to_fetch;
  for (const auto& f : files)
    if (!in_place(f)) to_fetch.push_back(&f);
  if (to_fetch.empty()) return folder;
  auto progress = make_progress(listing, to_fetch, endpoint, folder, settings);
  // Each file is checked as "<file>.incomplete" and keeps that name until all are: a failed run never leaves a
  // folder that looks whole.
  std::vector<std::pair<fs::path, fs::path>> finished;
  for (const RemoteFile* f : to_fetch) {
    const fs::path target = folder / f->path;
    FileLock lock(cache.file_lock(type, id, f->path), id + "/" + f->path);
    if (in_place(*f)) continue;
    const fs::path partial = target.string() + ".incomplete";
    progress->advance(size_or_zero(partial));
    const HubRequest request{Hub::kModelScope, type, id, listing.revision, endpoint, f->path};
    fetch_checked(http, *f, partial, request, progress.get(), settings);
    finished.emplace_back(partial, target);
  }
  progress->finish();
  for (const auto& [partial, target] : finished) {
    std::error_code ec;
    fs::rename(partial, target, ec);
    if (ec) throw DataError("cannot move " + partial.string() + " into place: " + ec.message(), "check the cache folder");
  }
  return folder;
}

}  // namespace swift::hub
