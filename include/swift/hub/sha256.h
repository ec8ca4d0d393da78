// SHA-256 through OpenSSL's libcrypto (the digest Git LFS, Hugging Face and ModelScope name files by): fed in
// pieces while a download streams, so a multi-GB shard is not read twice.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace swift::hub {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  std::string hex_digest();  // 64 lowercase hex digits; the object is spent afterwards
  void reset();              // start over (a server that ignored a Range request sends the file from byte 0)

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string sha256_hex(std::string_view bytes);
// The digest of a file's first `limit` bytes (all when negative) added to `hash`; DataError when it cannot be read.
void sha256_update_from_file(Sha256& hash, const std::filesystem::path& path, long long limit = -1);
std::string sha256_file(const std::filesystem::path& path);

// True for 64 hex digits (a sha256 as LFS and the hubs' headers write it).
bool is_sha256_hex(std::string_view text);

}  // namespace swift::hub
