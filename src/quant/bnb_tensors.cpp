// bitsandbytes layers <-> the tensors transformers saves for them (see the header).
#include "swift/quant/bnb_tensors.h"

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <cstring>

#include "swift/core/error.h"
#include "swift/quant/quant_config.h"

namespace swift::quant {

namespace {

c10::ScalarType parse_state_dtype(const std::string& name, const std::string& where) {
  try {
    return parse_compute_dtype(name, where + " dtype");
  } catch (const UsageError& e) {
    throw DataError(e.what(), "re-save the model");
  }
}

// A double as Python's repr writes it: the shortest text that reads back the same value, "1.0" for integers.
std::string python_float(double v) {
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
  std::string out(buf, end);
  if (out.find_first_of(".eEn") == std::string::npos) out += ".0";
  return out;
}

// As Python's json.dumps of bitsandbytes' dict: its key order, ", " and ": " separators.
std::string state_json(const FourBitWeight& w) {
  std::ostringstream out;
  out << "{\"quant_type\": \"" << four_bit_type_name(w.type) << "\", \"blocksize\": " << w.blocksize
      << ", \"dtype\": \"" << dtype_json_name(w.dtype) << "\", \"shape\": [";
  for (size_t i = 0; i < w.shape.size(); ++i) out << (i ? ", " : "") << w.shape[i];
  out << "]";
  if (w.nested)
    out << ", \"nested_blocksize\": " << w.nested_blocksize << ", \"nested_dtype\": \"float32\", \"nested_offset\": "
        << python_float(static_cast<double>(w.offset));
  out << "}";
  return out.str();
}

at::Tensor bytes_tensor(const std::string& text) {
  at::Tensor t = at::empty({static_cast<int64_t>(text.size())}, at::kByte);
  std::memcpy(t.data_ptr<uint8_t>(), text.data(), text.size());
  return t;
}

at::Tensor require(const TensorLookup& lookup, const std::string& key, const std::string& source) {
  at::Tensor t = lookup(key);
  SWIFT_CHECK(t.defined(), DataError, source + ": the quantized weight's statistics are incomplete: no " + key,
              "re-save the quantized model (transformers with bitsandbytes, or swift export --quant_method bnb)");
  return t;
}

}  // namespace

bool is_quant_state_key(const std::string& key) {
  for (const char* suffix : {".absmax", ".quant_map", ".nested_absmax", ".nested_quant_map",
                             ".quant_state.bitsandbytes__nf4", ".quant_state.bitsandbytes__fp4", ".SCB", ".weight_format"}) {
    const std::string s = suffix;
    if (key.size() > s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0) return true;
  }
  return false;
}

void append_four_bit_tensors(const std::string& weight_key, const FourBitWeight& w, io::NamedTensors& out) {
  out.emplace_back(weight_key, w.packed);
  out.emplace_back(weight_key + ".absmax", w.absmax);
  out.emplace_back(weight_key + ".quant_map", w.code);
  if (w.nested) {
    out.emplace_back(weight_key + ".nested_absmax", w.nested_absmax);
    out.emplace_back(weight_key + ".nested_quant_map", w.nested_code);
  }
  out.emplace_back(weight_key + ".quant_state.bitsandbytes__" + four_bit_type_name(w.type), bytes_tensor(state_json(w)));
}

FourBitWeight four_bit_from_tensors(const std::string& weight_key, const TensorLookup& lookup, const std::string& source) {
  FourBitWeight w;
  at::Tensor state;
  for (const char* type : {"nf4", "fp4"}) {
    state = lookup(weight_key + ".quant_state.bitsandbytes__" + type);
    if (state.defined()) break;
  }
  const std::string where = source + " " + weight_key;
  SWIFT_CHECK(state.defined(), DataError, where + ": a 4-bit weight without its quant_state tensor",
              "re-save the quantized model, or load its unquantized folder");
  const at::Tensor bytes = state.to(at::kCPU).contiguous().view(at::kByte);
  nlohmann::json j;
  try {
    const char* text = reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>());
    j = nlohmann::json::parse(text, text + bytes.numel());
    w.type = parse_four_bit_type(j.at("quant_type").get<std::string>(), where + " quant_type");
    w.blocksize = j.at("blocksize").get<int64_t>();
    w.dtype = parse_state_dtype(j.at("dtype").get<std::string>(), where);
    w.shape = j.at("shape").get<std::vector<int64_t>>();
    w.nested = j.contains("nested_offset");
    if (w.nested) {
      w.nested_blocksize = j.at("nested_blocksize").get<int64_t>();
      w.offset = j.at("nested_offset").get<float>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw DataError(where + ": unreadable quant_state: " + e.what(), "re-save the quantized model");
  }
  try {
    check_four_bit_blocksize(w.blocksize, where);
  } catch (const UsageError& e) {
    throw DataError(e.what(), "re-save the quantized model");
  }
  SWIFT_CHECK(!w.nested || (w.nested_blocksize > 0 && w.nested_blocksize <= (1 << 20)), DataError,
              where + ": nested_blocksize " + std::to_string(w.nested_blocksize) + " in the quant_state is not usable",
              "re-save the quantized model");
  SWIFT_CHECK(!w.shape.empty() && std::all_of(w.shape.begin(), w.shape.end(), [](int64_t d) { return d >= 0 && d < (1ll << 40); }),
              DataError, where + ": the quant_state's shape is not a valid tensor shape", "re-save the quantized model");
  SWIFT_CHECK(std::isfinite(w.offset), DataError, where + ": the quant_state's nested_offset is not a finite number",
              "re-save the quantized model");
  w.packed = require(lookup, weight_key, where);
  w.absmax = require(lookup, weight_key + ".absmax", where);
  w.code = require(lookup, weight_key + ".quant_map", where).to(at::kFloat);
  if (w.nested) {
    w.nested_absmax = require(lookup, weight_key + ".nested_absmax", where).to(at::kFloat);
    w.nested_code = require(lookup, weight_key + ".nested_quant_map", where).to(at::kFloat);
  }
  // The pieces must fit each other: a mismatch is a broken file, not something to compute garbage from.
  const int64_t n = w.numel();
  const int64_t blocks = (n + w.blocksize - 1) / w.blocksize;
  const int64_t packed_bytes = w.packed.numel() * static_cast<int64_t>(w.packed.element_size());
  SWIFT_CHECK(packed_bytes == (n + 1) / 2, DataError,
              where + ": " + std::to_string(packed_bytes) + " packed bytes do not hold a " + std::to_string(w.shape.size()) +
                  "-D weight of " + std::to_string(n) + " values (needs " + std::to_string((n + 1) / 2) + ")",
              "the weight and its quant_state come from different models: re-save the model");
  SWIFT_CHECK(w.absmax.numel() == blocks && w.code.numel() == 16, DataError,
              where + ": " + std::to_string(w.absmax.numel()) + " block maxima for " + std::to_string(blocks) +
                  " blocks of " + std::to_string(w.blocksize) + " (or a quant_map without 16 values)",
              "re-save the model");
  if (w.nested)
    SWIFT_CHECK(w.nested_absmax.numel() == (blocks + w.nested_blocksize - 1) / w.nested_blocksize &&
                    w.nested_code.numel() == 256 && w.absmax.scalar_type() == at::kByte,
                DataError, where + ": the double-quantization statistics do not fit the block maxima", "re-save the model");
  else
    w.absmax = w.absmax.to(at::kFloat);
  return w;
}

void append_int8_tensors(const std::string& module_prefix, const Int8Weight& w, io::NamedTensors& out) {
  out.emplace_back(module_prefix + "weight", w.CB);
  out.emplace_back(module_prefix + "SCB", w.SCB);
  out.emplace_back(module_prefix + "weight_format", at::zeros({}, at::kByte));
}

Int8Weight int8_from_tensors(const std::string& module_prefix, const TensorLookup& lookup, const std::string& source) {
  const std::string where = source + " " + module_prefix + "weight";
  Int8Weight w;
  w.CB = require(lookup, module_prefix + "weight", where);
  w.SCB = require(lookup, module_prefix + "SCB", where).to(at::kFloat);
  if (at::Tensor format = lookup(module_prefix + "weight_format"); format.defined())
    SWIFT_CHECK(format.numel() == 1 && format.to(at::kLong).item<int64_t>() == 0, DataError,
                where + ": weight_format is not 0 (row-major); only row-major 8-bit weights are supported",
                "re-save the model with a current bitsandbytes");
  SWIFT_CHECK(w.CB.scalar_type() == at::kChar && w.CB.dim() == 2 && w.SCB.numel() == w.CB.size(0), DataError,
              where + ": an 8-bit weight needs int8 [out, in] values and one SCB per row", "re-save the model");
  return w;
}

}  // namespace swift::quant
