// The safetensors reader (src/io/safetensors.cpp) on any file: the 8-byte length, the JSON header, the entries
// and how they tile the data. A valid file's tensors are then read through get().
#include "fuzz_input.h"
#include "swift/core/error.h"
#include "swift/io/safetensors.h"

#include <ATen/ATen.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = swift::fuzz::write_file("model.safetensors", swift::fuzz::as_text(data, size));
  try {
    const auto file = swift::io::SafetensorsFile::open(path);
    for (const auto& entry : file->entries()) {
      const at::Tensor t = file->get(entry.name);
      if (static_cast<uint64_t>(t.numel()) * t.element_size() != entry.end - entry.begin) std::abort();
    }
  } catch (const swift::UserError&) {
  }
  return 0;
}
