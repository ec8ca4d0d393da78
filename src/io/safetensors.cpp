// safetensors files: header validation as strict as the reference library's, tensors that alias a
// copy-on-write mapping of the file, and a writer that reproduces the reference layout byte for byte.
#include "swift/io/safetensors.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "swift/core/atomic_write.h"
#include "swift/core/error.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors stores little-endian data; "
              "reading it in place needs a little-endian host");

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;  // ordered: entries() keeps header order, the writer controls key order

namespace swift::io {

namespace {

// Limits from the reference implementation (safetensors/src/tensor.rs).
constexpr uint64_t kLengthPrefixBytes = 8;
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";
constexpr const char* kCorruptHint =
    "the file is damaged or was not written by a safetensors writer; download or export it again";

struct DtypeInfo {
  const char* name;
  c10::ScalarType type;
  // Position in the reference library's Dtype enum, which lists dtypes in increasing alignment. Its writer
  // sorts entries by this rank (largest first), so files come out byte-identical only with the same ranks.
  int rank;
};

// Every safetensors dtype LibTorch can hold. F4, F6_E2M3 and F6_E3M2 (ranks 1-3) pack sub-byte elements that
// no ScalarType addresses one by one, so they are reported as unsupported.
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", c10::ScalarType::Bool, 0},
    {"U8", c10::ScalarType::Byte, 4},
    {"I8", c10::ScalarType::Char, 5},
    {"F8_E5M2", c10::ScalarType::Float8_e5m2, 6},
    {"F8_E4M3", c10::ScalarType::Float8_e4m3fn, 7},
    {"F8_E8M0", c10::ScalarType::Float8_e8m0fnu, 8},
    {"F8_E4M3FNUZ", c10::ScalarType::Float8_e4m3fnuz, 9},
    {"F8_E5M2FNUZ", c10::ScalarType::Float8_e5m2fnuz, 10},
    {"I16", c10::ScalarType::Short, 11},
    {"U16", c10::ScalarType::UInt16, 12},
    {"F16", c10::ScalarType::Half, 13},
    {"BF16", c10::ScalarType::BFloat16, 14},
    {"I32", c10::ScalarType::Int, 15},
    {"U32", c10::ScalarType::UInt32, 16},
    {"F32", c10::ScalarType::Float, 17},
    {"C64", c10::ScalarType::ComplexFloat, 18},
    {"F64", c10::ScalarType::Double, 19},
    {"I64", c10::ScalarType::Long, 20},
    {"U64", c10::ScalarType::UInt64, 21},
};

std::string supported_dtype_names() {
  std::string names;
  for (const auto& info : kDtypes) names.append(names.empty() ? "" : ", ").append(info.name);
  return names;
}

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& info : kDtypes)
    if (name == info.name) return &info;
  return nullptr;
}

const DtypeInfo* find_dtype(c10::ScalarType type) {
  for (const auto& info : kDtypes)
    if (type == info.type) return &info;
  return nullptr;
}

[[noreturn]] void corrupt(const fs::path& path, const std::string& what, const std::string& hint = kCorruptHint) {
  throw DataError(path.string() + ": " + what, hint);
}

[[noreturn]] void corrupt_tensor(const fs::path& path, const std::string& name, const std::string& what,
                                 const std::string& hint = kCorruptHint) {
  corrupt(path, "tensor '" + name + "' " + what, hint);
}

uint64_t read_le_u64(const uint8_t* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// Parses the header text. nlohmann keeps the last of repeated keys silently, so a parser callback counts
// keys per object: a name listed twice would otherwise hide which bytes belong to it.
Json parse_header_json(const fs::path& path, const char* text, size_t size) {
  std::vector<std::set<std::string>> keys_per_open_object;
  std::string top_level_key;  // the entry being parsed, to name it when a key inside it repeats
  std::string duplicate;
  auto count_keys = [&](int /*depth*/, Json::parse_event_t event, Json& value) {
    if (event == Json::parse_event_t::object_start) {
      keys_per_open_object.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      keys_per_open_object.pop_back();
    } else if (event == Json::parse_event_t::key && !keys_per_open_object.empty()) {
      const std::string& key = value.get_ref<const std::string&>();
      if (keys_per_open_object.size() == 1) top_level_key = key;
      if (!keys_per_open_object.back().insert(key).second && duplicate.empty()) {
        duplicate = keys_per_open_object.size() == 1
                        ? "tensor '" + key + "' is listed twice in the header"
                        : "tensor '" + top_level_key + "' lists the key '" + key + "' twice";
      }
    }
    return true;
  };
  Json header;
  try {
    header = Json::parse(text, text + size, count_keys);
  } catch (const Json::exception& e) {
    corrupt(path, std::string("the header is not valid UTF-8 JSON (") + e.what() + ")");
  }
  if (!duplicate.empty()) corrupt(path, duplicate);
  if (!header.is_object())
    corrupt(path, std::string("the header is a JSON ") + header.type_name() + ", not an object of tensor entries");
  return header;
}

std::map<std::string, std::string> parse_metadata(const fs::path& path, const Json& value) {
  std::map<std::string, std::string> metadata;
  if (value.is_null()) return metadata;  // the reference reader takes null as "no metadata"
  if (!value.is_object())
    corrupt(path, std::string("'__metadata__' is a JSON ") + value.type_name() + ", expected an object of strings");
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      corrupt(path, "'__metadata__' key '" + key + "' holds a JSON " + item.type_name() + ", expected a string");
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

// One header entry with every field checked on its own; how entries fit together is checked afterwards.
TensorEntry parse_entry(const fs::path& path, const std::string& name, const Json& value, uint64_t data_size) {
  if (!value.is_object())
    corrupt_tensor(path, name, std::string("is a JSON ") + value.type_name() + ", expected an object");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!value.contains(field)) corrupt_tensor(path, name, std::string("has no '") + field + "'");

  TensorEntry entry;
  entry.name = name;
  const Json& dtype = value["dtype"];
  if (!dtype.is_string()) corrupt_tensor(path, name, "has a dtype that is not a string");
  entry.dtype = dtype.get<std::string>();
  const DtypeInfo* info = find_dtype(entry.dtype);
  if (info == nullptr)
    corrupt_tensor(path, name, "has dtype '" + entry.dtype + "', which LibTorch cannot hold",
                   "supported dtypes: " + supported_dtype_names() + "; convert the checkpoint to one of them");
  entry.scalar_type = info->type;

  const Json& shape = value["shape"];
  if (!shape.is_array()) corrupt_tensor(path, name, "has a shape that is not a list");
  uint64_t numel = 1;
  for (const Json& dim : shape) {
    // Non-negative integers parse as number_unsigned; negatives, fractions and strings do not.
    if (!dim.is_number_unsigned() || dim.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      corrupt_tensor(path, name, "has shape " + shape.dump() + "; every dimension must be an integer >= 0");
    const uint64_t size = dim.get<uint64_t>();
    if (__builtin_mul_overflow(numel, size, &numel) || numel > uint64_t(std::numeric_limits<int64_t>::max()))
      corrupt_tensor(path, name, "has shape " + shape.dump() + ", whose element count overflows");
    entry.shape.push_back(static_cast<int64_t>(size));
  }

  const Json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    corrupt_tensor(path, name, "has data_offsets " + offsets.dump() + ", expected [begin, end] with integers >= 0");
  entry.begin = offsets[0].get<uint64_t>();
  entry.end = offsets[1].get<uint64_t>();
  if (entry.begin > entry.end)
    corrupt_tensor(path, name, "has data_offsets " + offsets.dump() + " whose begin is after its end");
  if (entry.end > data_size)
    corrupt_tensor(path, name,
                   "has data_offsets " + offsets.dump() + " past the end of the data buffer (" +
                       std::to_string(data_size) + " bytes); the file may be truncated",
                   "the download was probably cut short; download the file again");

  uint64_t expected_bytes = 0;
  if (__builtin_mul_overflow(numel, uint64_t(c10::elementSize(entry.scalar_type)), &expected_bytes))
    corrupt_tensor(path, name, "has shape " + shape.dump() + ", whose byte size overflows");
  if (entry.end - entry.begin != expected_bytes)
    corrupt_tensor(path, name,
                   "spans " + std::to_string(entry.end - entry.begin) + " bytes but shape " + shape.dump() + " of " +
                       entry.dtype + " needs " + std::to_string(expected_bytes));
  return entry;
}

// The reference reader demands that tensors tile the data buffer exactly: sorted by offset, the first starts
// at 0, each starts where the previous ended and the last ends at the end of the file.
void check_tiling(const fs::path& path, const std::vector<TensorEntry>& entries, uint64_t data_size) {
  std::vector<const TensorEntry*> by_offset;
  for (const auto& entry : entries) by_offset.push_back(&entry);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const TensorEntry* a, const TensorEntry* b) {
    return std::make_pair(a->begin, a->end) < std::make_pair(b->begin, b->end);
  });
  uint64_t expected_begin = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry* entry : by_offset) {
    if (entry->begin < expected_begin)
      corrupt_tensor(path, entry->name,
                     "overlaps tensor '" + previous->name + "' (begins at byte " + std::to_string(entry->begin) +
                         ", '" + previous->name + "' ends at " + std::to_string(expected_begin) + ")");
    if (entry->begin > expected_begin)
      corrupt_tensor(path, entry->name,
                     "begins at byte " + std::to_string(entry->begin) + ", leaving a gap after " +
                         (previous ? "tensor '" + previous->name + "'" : std::string("the header")) +
                         " which ends at " + std::to_string(expected_begin));
    expected_begin = entry->end;
    previous = entry;
  }
  if (expected_begin != data_size)
    corrupt(path, "the data buffer holds " + std::to_string(data_size - expected_begin) +
                      " bytes after the last tensor" + (previous ? " '" + previous->name + "'" : std::string()));
}

}  // namespace

c10::ScalarType safetensors_dtype_to_scalar(const std::string& dtype, bool* known) {
  const DtypeInfo* info = find_dtype(dtype);
  if (known != nullptr) {
    *known = info != nullptr;
    return info ? info->type : c10::ScalarType::Undefined;
  }
  if (info == nullptr)
    throw DataError("unknown safetensors dtype '" + dtype + "'", "supported dtypes: " + supported_dtype_names());
  return info->type;
}

std::string scalar_to_safetensors_dtype(c10::ScalarType type) {
  const DtypeInfo* info = find_dtype(type);
  if (info == nullptr)
    throw UsageError(std::string("LibTorch dtype ") + c10::toString(type) + " has no safetensors equivalent",
                     "convert the tensor to one of " + supported_dtype_names() + " before saving");
  return info->name;
}

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw DataError("cannot open " + path.string() + ": " + std::strerror(errno),
                    "check that the file exists and is readable");
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    corrupt(path, "is not a regular file", "pass the path of a .safetensors file");
  }
  const uint64_t file_size = static_cast<uint64_t>(info.st_size);
  if (file_size < kLengthPrefixBytes) {
    ::close(fd);
    corrupt(path, "is " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  }
  // MAP_PRIVATE + PROT_WRITE: tensors may be edited in place and the edits stay in this process (copy on
  // write). MAP_NORESERVE: do not charge the whole file against the commit limit; only edited pages cost RAM.
  void* base = ::mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (base == MAP_FAILED)
    throw DataError("cannot map " + path.string() + ": " + std::strerror(map_errno),
                    "check free address space and memory limits (ulimit -v)");

  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->mapping_ = std::shared_ptr<void>(base, [file_size](void* p) { ::munmap(p, file_size); });
  const auto* bytes = static_cast<const uint8_t*>(base);

  const uint64_t header_size = read_le_u64(bytes);
  if (header_size > kMaxHeaderBytes)
    corrupt(path, "declares a " + std::to_string(header_size) + "-byte header, over the 100,000,000-byte limit");
  if (header_size > file_size - kLengthPrefixBytes)
    corrupt(path,
            "declares a " + std::to_string(header_size) + "-byte header but holds only " +
                std::to_string(file_size - kLengthPrefixBytes) + " bytes after the length",
            "the download was probably cut short; download the file again");
  file->data_ = bytes + kLengthPrefixBytes + header_size;
  file->data_size_ = file_size - kLengthPrefixBytes - header_size;

  const Json header = parse_header_json(path, reinterpret_cast<const char*>(bytes + kLengthPrefixBytes), header_size);
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      file->metadata_ = parse_metadata(path, value);
      continue;
    }
    file->index_.emplace(name, file->entries_.size());
    file->entries_.push_back(parse_entry(path, name, value, file->data_size_));
  }
  check_tiling(path, file->entries_, file->data_size_);
  return file;
}

SafetensorsFile::~SafetensorsFile() = default;

const TensorEntry& SafetensorsFile::entry(const std::string& name) const {
  const auto it = index_.find(name);
  if (it == index_.end())
    throw DataError(path_.string() + ": no tensor named '" + name + "' (the file holds " +
                        std::to_string(entries_.size()) + " tensors)",
                    "check the tensor name; maybe the checkpoint belongs to another model family");
  return entries_[it->second];
}

void SafetensorsFile::release(const std::string& name) const {
  const TensorEntry& e = entry(name);
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data_ + e.begin) + page - 1) / page * page;
  const auto end = reinterpret_cast<uintptr_t>(data_ + e.end) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

at::Tensor SafetensorsFile::get(const std::string& name) const {
  const TensorEntry& e = entry(name);
  const auto options = at::TensorOptions().dtype(e.scalar_type).device(at::kCPU);
  uint8_t* bytes = const_cast<uint8_t*>(data_ + e.begin);  // the mapping is writable, privately
  if (reinterpret_cast<uintptr_t>(bytes) % c10::elementSize(e.scalar_type) == 0) {
    std::shared_ptr<void> mapping = mapping_;  // the tensor keeps the mapping alive, not this object
    const auto release = [mapping](void*) {};
    return at::from_blob(bytes, e.shape, release, options);
  }
  // Headers whose length is not a multiple of 8 can leave data misaligned; LibTorch kernels assume alignment.
  at::Tensor copy = at::empty(e.shape, options);
  if (e.end > e.begin) std::memcpy(copy.data_ptr(), bytes, e.end - e.begin);
  return copy;
}

std::string serialize_safetensors(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  struct Planned {
    const std::string* name;
    const at::Tensor* tensor;
    const DtypeInfo* dtype;
  };
  std::vector<Planned> planned;
  std::set<std::string> seen;
  for (const auto& [name, tensor] : tensors) {
    SWIFT_CHECK(tensor.defined(), UsageError, "cannot save tensor '" + name + "': it is undefined",
                "drop it from the state dict or initialise it");
    SWIFT_CHECK(tensor.layout() == at::kStrided, UsageError,
                "cannot save tensor '" + name + "': safetensors holds dense tensors only",
                "convert it with .to_dense() before saving");
    SWIFT_CHECK(name != kMetadataKey, UsageError, "cannot save a tensor named '__metadata__'",
                "the name is reserved for the header's metadata; rename the tensor");
    SWIFT_CHECK(seen.insert(name).second, UsageError, "two tensors are named '" + name + "'",
                "each tensor name must be unique in a file");
    const DtypeInfo* dtype = find_dtype(tensor.scalar_type());
    SWIFT_CHECK(dtype != nullptr, UsageError,
                "cannot save tensor '" + name + "' of dtype " + c10::toString(tensor.scalar_type()),
                "convert it to one of " + supported_dtype_names());
    planned.push_back({&name, &tensor, dtype});
  }
  // The reference writer's order: alignment rank descending, then name (byte-wise, like Rust's String).
  std::sort(planned.begin(), planned.end(), [](const Planned& a, const Planned& b) {
    if (a.dtype->rank != b.dtype->rank) return a.dtype->rank > b.dtype->rank;
    return *a.name < *b.name;
  });

  Json header = Json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const Planned& p : planned) {
    const uint64_t bytes = uint64_t(p.tensor->numel()) * p.tensor->element_size();
    Json entry = Json::object();
    entry["dtype"] = p.dtype->name;
    entry["shape"] = p.tensor->sizes().vec();
    entry["data_offsets"] = {offset, offset + bytes};
    header[*p.name] = std::move(entry);
    offset += bytes;
  }
  std::string header_text;
  try {
    header_text = header.dump();  // compact, as serde_json writes it
  } catch (const Json::exception& e) {
    throw UsageError(std::string("cannot save: a tensor name or metadata string is not valid UTF-8 (") + e.what() + ")",
                     "rename the tensor or fix the metadata");
  }
  header_text.resize((header_text.size() + 7) / 8 * 8, ' ');  // data starts 8-byte aligned

  std::string out;
  out.reserve(kLengthPrefixBytes + header_text.size() + offset);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((uint64_t(header_text.size()) >> (8 * i)) & 0xff));
  out += header_text;
  for (const Planned& p : planned) {
    // One tensor at a time on the CPU, so a GPU state dict never needs a second full copy in host memory.
    const at::Tensor host = p.tensor->to(at::kCPU).contiguous();
    const size_t bytes = size_t(host.numel()) * host.element_size();
    if (bytes > 0) out.append(static_cast<const char*>(host.data_ptr()), bytes);
  }
  return out;
}

void save_safetensors(const fs::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  with_context("saving " + path.string(), [&] { atomic_write_file(path, serialize_safetensors(tensors, metadata)); });
}

}  // namespace swift::io
