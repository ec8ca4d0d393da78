// Dataset files (src/data/dataset.cpp) on any bytes: the input's first byte picks the reader (.jsonl, .json,
// .csv, .txt), the rest is the file; every row read is then normalised to `messages` as training would.
#include "fuzz_input.h"
#include "swift/core/error.h"
#include "swift/data/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const char* const kExtensions[] = {".jsonl", ".json", ".csv", ".txt"};
  const auto path = swift::fuzz::write_file(std::string("data") + kExtensions[data[0] % 4],
                                            swift::fuzz::as_text(data + 1, size - 1));
  try {
    for (const auto& row : swift::data::read_rows(path)) {
      try {
        (void)swift::data::normalise_row(row, "fuzz row");
      } catch (const swift::UserError&) {
      }
    }
  } catch (const swift::UserError&) {
  }
  return 0;
}
