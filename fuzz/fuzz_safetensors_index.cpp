// A sharded checkpoint's index (model.safetensors.index.json, src/io/safetensors_folder.cpp) on any text, next
// to two valid shards: the weight map is read and checked against what the shards hold.
#include "fuzz_input.h"
#include "swift/core/error.h"
#include "swift/io/safetensors.h"
#include "swift/io/safetensors_folder.h"

#include <ATen/ATen.h>

namespace {

// Two shards of two tensors each, written once.
const std::filesystem::path& folder() {
  static const std::filesystem::path dir = [] {
    auto d = swift::fuzz::scratch_dir() / "sharded";
    std::filesystem::create_directories(d);
    swift::io::save_safetensors(d / "model-00001-of-00002.safetensors",
                                {{"a.weight", at::ones({2, 3})}, {"b.weight", at::zeros({4}, at::kBFloat16)}});
    swift::io::save_safetensors(d / "model-00002-of-00002.safetensors",
                                {{"c.weight", at::arange(6, at::kLong)}, {"d.bias", at::ones({1}, at::kHalf)}});
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& dir = folder();
  {
    std::ofstream out(dir / "model.safetensors.index.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const auto weights = swift::io::SafetensorsFolder::open(dir);
    for (const auto& name : weights.names()) (void)weights.get(name);
  } catch (const swift::UserError&) {
  }
  return 0;
}
