// bitsandbytes' 4-bit blockwise quantization (see the header).
#include "swift/quant/bnb_4bit.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <array>

#include "swift/core/error.h"
#ifdef SWIFT_WITH_CUDA_KERNELS
#include "swift/quant/dequantize_cuda_tensor.h"
#endif

namespace swift::quant {

FourBitType parse_four_bit_type(const std::string& name, const std::string& where) {
  if (name == "nf4") return FourBitType::kNF4;
  if (name == "fp4") return FourBitType::kFP4;
  throw UsageError(where + ": unknown 4-bit quantization type '" + name + "'", "use nf4 (the QLoRA default) or fp4");
}

const char* four_bit_type_name(FourBitType type) { return type == FourBitType::kNF4 ? "nf4" : "fp4"; }

at::Tensor four_bit_code(FourBitType type) {
  // NF4: the 16 quantiles of N(0, 1) QLoRA derives (bitsandbytes' create_normal_map(0.9677083)), as fp32.
  static const std::array<double, 16> nf4 = {
      -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
      -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
      0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0};
  // FP4 (1 sign, 2 exponent, 1 mantissa bits, bias 2), by bit pattern, scaled into [-1, 1] by its largest (12).
  static const std::array<double, 16> fp4 = {0, 0.0625, 8, 12, 4, 6, 2, 3, -0.0, -0.0625, -8, -12, -4, -6, -2, -3};
  const auto& values = type == FourBitType::kNF4 ? nf4 : fp4;
  at::Tensor code = at::tensor(std::vector<double>(values.begin(), values.end()), at::kFloat);
  return code.div_(code.abs().max());
}

at::Tensor dynamic_8bit_code() {
  // create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for each exponent 10^(i-6), i = 0..6,
  // the midpoints of 2^i + 1 evenly spaced fractions in [0.1, 1], both signs; then 0 and 1; sorted.
  std::vector<float> data;
  for (int i = 0; i < 7; ++i) {
    const at::Tensor bounds = at::linspace(0.1, 1, (1 << i) + 1, at::kFloat);
    const at::Tensor means = (bounds.slice(0, 0, -1) + bounds.slice(0, 1)) / 2.0;
    const double scale = i < 6 ? std::pow(10.0, i - 6) : 1.0;
    const at::Tensor pos = means * scale, neg = means * -scale;
    for (const auto& t : {pos, neg})
      for (int64_t k = 0; k < t.numel(); ++k) data.push_back(t.data_ptr<float>()[k]);
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  SWIFT_ASSERT(data.size() == 256, "the dynamic map has 256 values");
  std::sort(data.begin(), data.end());
  return at::tensor(std::vector<float>(data.begin(), data.end()), at::kFloat);
}

void check_four_bit_blocksize(int64_t blocksize, const std::string& where) {
  const bool power_of_two = blocksize > 0 && (blocksize & (blocksize - 1)) == 0;
  SWIFT_CHECK(power_of_two && blocksize >= 32 && blocksize <= 4096, UsageError,
              where + ": block size " + std::to_string(blocksize) + " is not available for 4-bit quantization",
              "use a power of two from 32 to 4096 (bitsandbytes' default is 64)");
}

namespace {

// x [n] fp32 -> the maxima per block and x scaled by their reciprocals into [-1, 1] (the reciprocal, as the
// CUDA kernel multiplies by it).
std::pair<at::Tensor, at::Tensor> scale_blocks(const at::Tensor& x, int64_t blocksize) {
  const int64_t n = x.numel();
  const int64_t blocks = (n + blocksize - 1) / blocksize;
  at::Tensor padded = n == blocks * blocksize ? x : at::constant_pad_nd(x, {0, blocks * blocksize - n}, 0);
  at::Tensor absmax = padded.view({blocks, blocksize}).abs().amax(1);  // padding zeros never raise a maximum
  at::Tensor inverse = absmax.clamp_min(1e-38).reciprocal();  // Python's 1.0 / t
  at::Tensor scaled = (padded.view({blocks, blocksize}) * inverse.unsqueeze(1)).clamp(-1, 1).view(-1).narrow(0, 0, n);
  return {absmax, scaled};
}

// The same for 4-bit data, as bitsandbytes' reference backend does it to the last detail: whole blocks keep their
// maximum as it is and scale by its reciprocal (clamped at 1e-38); a short last block keeps its maximum clamped
// and divides; an odd count is padded with a zero value (so its nibble is the code of 0).
std::pair<at::Tensor, at::Tensor> scale_blocks_4bit(const at::Tensor& x, int64_t blocksize) {
  const int64_t n = x.numel();
  const int64_t full = n / blocksize * blocksize;
  const at::Tensor body = x.narrow(0, 0, full).view({-1, blocksize});
  at::Tensor absmax = body.abs().amax(1);
  at::Tensor scaled = (body * absmax.clamp_min(1e-38).reciprocal().unsqueeze(1)).clamp(-1, 1).view(-1);
  if (full < n) {
    const at::Tensor tail = x.narrow(0, full, n - full);
    const at::Tensor tail_max = tail.abs().max().clamp_min(1e-38);
    absmax = at::cat({absmax, tail_max.unsqueeze(0)});
    scaled = at::cat({scaled, (tail / tail_max).clamp(-1, 1)});
  }
  if (scaled.numel() % 2) scaled = at::constant_pad_nd(scaled, {0, 1}, 0);
  return {absmax, scaled};
}

// The index of the nearest value of `sorted_code` for each value (ties to the lower).
at::Tensor nearest(const at::Tensor& scaled, const at::Tensor& sorted_code) {
  const at::Tensor midpoints = (sorted_code.slice(0, 0, -1) + sorted_code.slice(0, 1)) / 2;
  return at::bucketize(scaled, midpoints, /*out_int32=*/true, /*right=*/false);
}

// FP4's code is not sorted: bitsandbytes' argsort of it (its two zeros, +0 at 0 and -0 at 8, in this order).
const std::array<int64_t, 16> kFp4SortedOrder = {11, 10, 13, 12, 15, 14, 9, 0, 8, 1, 6, 7, 4, 5, 2, 3};

}  // namespace

BlockwiseCodes quantize_blockwise(const at::Tensor& x, const at::Tensor& code, int64_t blocksize) {
  SWIFT_ASSERT(blocksize > 0, "positive block size");
  const at::Tensor flat = x.reshape(-1).to(at::kFloat);
  auto [absmax, scaled] = scale_blocks(flat, blocksize);
  const at::Tensor codes = nearest(scaled, code.to(flat.device(), at::kFloat)).to(at::kByte).view(x.sizes());
  return {codes, absmax};
}

at::Tensor dequantize_blockwise(const at::Tensor& codes, const at::Tensor& absmax, const at::Tensor& code,
                                int64_t blocksize) {
  const int64_t n = codes.numel();
  const int64_t blocks = absmax.numel();
  at::Tensor values = code.to(codes.device(), at::kFloat).index_select(0, codes.reshape(-1).to(at::kLong));
  at::Tensor padded = at::constant_pad_nd(values, {0, blocks * blocksize - n}, 0);
  return (padded.view({blocks, blocksize}) * absmax.to(at::kFloat).unsqueeze(1)).view(-1).narrow(0, 0, n).view(codes.sizes());
}

int64_t FourBitWeight::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

at::Tensor FourBitWeight::absmax_fp32() const {
  if (!nested) return absmax;
  return dequantize_blockwise(absmax, nested_absmax, nested_code, nested_blocksize) + offset;
}

int64_t FourBitWeight::bytes() const {
  int64_t total = 0;
  for (const at::Tensor* t : {&packed, &absmax, &code, &nested_absmax, &nested_code})
    if (t->defined()) total += t->numel() * static_cast<int64_t>(t->element_size());
  return total;
}

FourBitWeight quantize_4bit(const at::Tensor& weight, const FourBitOptions& options) {
  check_four_bit_blocksize(options.blocksize, "4-bit quantization");
  SWIFT_CHECK(at::isFloatingType(weight.scalar_type()), UsageError,
              "4-bit quantization needs a floating-point weight, not " + std::string(c10::toString(weight.scalar_type())),
              "load the model in float32, bfloat16 or float16");
  FourBitWeight q;
  q.type = options.type;
  q.blocksize = options.blocksize;
  q.shape = weight.sizes().vec();
  q.dtype = weight.scalar_type();
  q.code = four_bit_code(options.type).to(weight.device());

  const at::Tensor flat = weight.reshape(-1).to(at::kFloat);
  auto [absmax, scaled] = scale_blocks_4bit(flat, options.blocksize);
  at::Tensor index;
  if (options.type == FourBitType::kNF4) {
    index = nearest(scaled, q.code);  // NF4's code is sorted
  } else {
    const at::Tensor order = at::tensor(std::vector<int64_t>(kFp4SortedOrder.begin(), kFp4SortedOrder.end()),
                                        at::TensorOptions().dtype(at::kLong).device(weight.device()));
    index = order.index_select(0, nearest(scaled, q.code.index_select(0, order)).to(at::kLong).reshape(-1));
  }
  const at::Tensor pairs = index.to(at::kByte).reshape({-1, 2});  // scaled has an even count
  q.packed = at::bitwise_or(at::bitwise_left_shift(pairs.select(1, 0), 4), pairs.select(1, 1)).unsqueeze(1);
  if (options.storage != at::kByte) {
    const int64_t size = static_cast<int64_t>(c10::elementSize(options.storage));
    SWIFT_CHECK(q.packed.numel() % size == 0, UsageError,
                "a weight of " + std::to_string(weight.numel()) + " values packs into " + std::to_string(q.packed.numel()) +
                    " bytes, not a whole number of " + std::string(c10::toString(options.storage)) + " elements",
                "use --bnb_4bit_quant_storage uint8");
    q.packed = q.packed.view(-1).view(options.storage).unsqueeze(1);
  }

  if (options.double_quant) {
    q.nested = true;
    q.offset = absmax.mean().item<float>();
    q.nested_code = dynamic_8bit_code().to(weight.device());
    auto nested = quantize_blockwise(absmax - q.offset, q.nested_code, q.nested_blocksize);
    q.absmax = nested.codes;
    q.nested_absmax = nested.absmax;
  } else {
    q.absmax = absmax;
  }
  return q;
}

namespace {

// The CPU path: one pass over the packed bytes (LibTorch ops would build an int64 index per value and several
// temporaries), blocks split over the intra-op threads. The same products as the reference path: code * absmax
// in fp32.
at::Tensor dequantize_4bit_cpu(const at::Tensor& bytes, const at::Tensor& absmax, const at::Tensor& code,
                               int64_t blocksize, int64_t n) {
  at::Tensor out = at::empty({n}, at::kFloat);
  const uint8_t* in = bytes.data_ptr<uint8_t>();
  const float* scale = absmax.data_ptr<float>();
  const float* table = code.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  const int64_t blocks = (n + blocksize - 1) / blocksize;
  at::parallel_for(0, blocks, 16, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const float s = scale[b];
      const int64_t first = b * blocksize, last = std::min(n, first + blocksize);
      for (int64_t i = first; i < last; ++i) {
        const uint8_t byte = in[i >> 1];
        dst[i] = table[(i & 1) ? (byte & 15) : (byte >> 4)] * s;
      }
    }
  });
  return out;
}

}  // namespace

at::Tensor dequantize_4bit(const FourBitWeight& weight, c10::ScalarType dtype) {
  const at::Tensor bytes = weight.packed.reshape(-1).view(at::kByte);
  const int64_t n = weight.numel();
  if (bytes.device().is_cpu()) {
    const at::Tensor absmax = weight.absmax_fp32().contiguous();
    const at::Tensor code = weight.code.to(at::kFloat).contiguous();
    return dequantize_4bit_cpu(bytes.contiguous(), absmax, code, weight.blocksize, n).view(weight.shape).to(dtype);
  }
#ifdef SWIFT_WITH_CUDA_KERNELS
  if (bytes.is_cuda()) {  // one fused pass: the packed bytes read once, the output written once
    return dequantize_4bit_cuda(bytes.contiguous(), weight.absmax_fp32(), weight.code, weight.blocksize, n, weight.dtype)
        .view(weight.shape)
        .to(dtype);
  }
#endif
  // Each byte: high nibble first.
  const at::Tensor nibbles =
      at::stack({at::bitwise_right_shift(bytes, 4), at::bitwise_and(bytes, 15)}, 1).view(-1).narrow(0, 0, n);
  const at::Tensor values = dequantize_blockwise(nibbles, weight.absmax_fp32(), weight.code, weight.blocksize);
  return values.view(weight.shape).to(dtype);
}

}  // namespace swift::quant
