// bitsandbytes' 4-bit blockwise quantization, the storage of QLoRA (Dettmers et al. 2023), bit for bit: a
// weight is cut into blocks of `blocksize` values (64 by default) in row-major order; each block keeps its
// absolute maximum (fp32) and each value the index of the nearest of 16 code values (NF4: quantiles of a normal
// distribution; FP4: a 1-2-1 float) after division by that maximum, two indices per byte, the first in the high
// nibble. Double quantization stores the block maxima again in 8 bits: minus their mean (the "offset"), in blocks
// of 256 against bitsandbytes' signed dynamic 8-bit map, with one fp32 maximum per 256.
//
// "Nearest" is exact, as bitsandbytes' CUDA kernel and its reference (PyTorch) backend decide it: ties go to
// the lower code. (bitsandbytes' CPU library approximates the 8-bit search of double quantization with a 65536-
// entry table, so a few per mille of its 8-bit absmax codes land one step off ours; the 4-bit codes and every
// fp32 statistic are identical.)
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace swift::quant {

enum class FourBitType { kNF4, kFP4 };

// "nf4" / "fp4"; anything else is a UsageError naming `where` (a flag or a config file).
FourBitType parse_four_bit_type(const std::string& name, const std::string& where);
const char* four_bit_type_name(FourBitType type);

// The 16 code values in storage order (index = the stored nibble), fp32 in [-1, 1]: bitsandbytes' quant_map.
at::Tensor four_bit_code(FourBitType type);
// bitsandbytes' signed dynamic 8-bit map (create_dynamic_map(signed=True)): 256 sorted fp32 values.
at::Tensor dynamic_8bit_code();

// Block sizes bitsandbytes accepts for 4-bit data: powers of two from 32 to 4096. Else a UsageError.
void check_four_bit_blocksize(int64_t blocksize, const std::string& where);

// One value per element: the index of the nearest entry of `code` (sorted ascending, any length up to 256) to
// x / (the absolute maximum of its block); the maxima per block (the last block may be shorter) in fp32.
struct BlockwiseCodes {
  at::Tensor codes;   // uint8, x's shape
  at::Tensor absmax;  // fp32 [ceil(n / blocksize)]
};
BlockwiseCodes quantize_blockwise(const at::Tensor& x, const at::Tensor& code, int64_t blocksize);
at::Tensor dequantize_blockwise(const at::Tensor& codes, const at::Tensor& absmax, const at::Tensor& code,
                                int64_t blocksize);  // fp32, codes' shape

struct FourBitOptions {
  FourBitType type = FourBitType::kNF4;
  int64_t blocksize = 64;
  bool double_quant = true;                     // bnb_4bit_use_double_quant
  c10::ScalarType storage = c10::kByte;         // bnb_4bit_quant_storage: the packed bytes viewed as this dtype
};

// A quantized weight as bitsandbytes' Params4bit + QuantState hold it (and transformers saves it).
struct FourBitWeight {
  FourBitType type = FourBitType::kNF4;
  int64_t blocksize = 64;
  std::vector<int64_t> shape;                // the weight's shape ([out, in])
  c10::ScalarType dtype = c10::kFloat;       // the weight's dtype before quantization ("dtype" of the state)
  at::Tensor packed;                         // [ceil(n / 2), 1] bytes (uint8, or viewed as the storage dtype)
  at::Tensor absmax;                         // fp32 [blocks]; uint8 [blocks] when nested
  at::Tensor code;                           // quant_map: four_bit_code(type)
  bool nested = false;                       // double quantization:
  at::Tensor nested_absmax;                  //   fp32 [ceil(blocks / 256)]
  at::Tensor nested_code;                    //   dynamic_8bit_code()
  int64_t nested_blocksize = 256;
  float offset = 0;                          //   the mean of the fp32 maxima

  int64_t numel() const;
  // The per-block maxima in fp32 (undoing double quantization).
  at::Tensor absmax_fp32() const;
  // Bytes held: packed data and statistics.
  int64_t bytes() const;
};

FourBitWeight quantize_4bit(const at::Tensor& weight, const FourBitOptions& options);
// The weight back, in `dtype`, on the packed data's device.
at::Tensor dequantize_4bit(const FourBitWeight& weight, c10::ScalarType dtype);

}  // namespace swift::quant
