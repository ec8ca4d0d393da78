// SHA-256 over OpenSSL's EVP interface.
#include "swift/hub/sha256.h"

#include <openssl/evp.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "swift/core/error.h"

namespace swift::hub {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  SWIFT_ASSERT(state_->ctx != nullptr, "EVP_MD_CTX_new failed");
  reset();
}

Sha256::~Sha256() { EVP_MD_CTX_free(state_->ctx); }

void Sha256::reset() {
  SWIFT_ASSERT(EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) == 1, "EVP_DigestInit_ex(sha256) failed");
}

void Sha256::update(const void* data, size_t size) {
  if (size > 0) SWIFT_ASSERT(EVP_DigestUpdate(state_->ctx, data, size) == 1, "EVP_DigestUpdate failed");
}

std::string Sha256::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  SWIFT_ASSERT(EVP_DigestFinal_ex(state_->ctx, digest, &length) == 1, "EVP_DigestFinal_ex failed");
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hash;
  hash.update(bytes);
  return hash.hex_digest();
}

void sha256_update_from_file(Sha256& hash, const std::filesystem::path& path, long long limit) {
  std::ifstream in(path, std::ios::binary);
  SWIFT_CHECK(in.good(), DataError, "cannot read " + path.string() + ": " + std::strerror(errno),
              "check the file's permissions");
  std::vector<char> buffer(1 << 20);
  long long left = limit;
  while (limit < 0 || left > 0) {
    const std::streamsize want = limit < 0 ? static_cast<std::streamsize>(buffer.size())
                                           : static_cast<std::streamsize>(std::min<long long>(left, buffer.size()));
    in.read(buffer.data(), want);
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    hash.update(buffer.data(), static_cast<size_t>(got));
    left -= got;
  }
}

std::string sha256_file(const std::filesystem::path& path) {
  Sha256 hash;
  sha256_update_from_file(hash, path);
  return hash.hex_digest();
}

bool is_sha256_hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (unsigned char c : text)
    if (!std::isxdigit(c)) return false;
  return true;
}

}  // namespace swift::hub
