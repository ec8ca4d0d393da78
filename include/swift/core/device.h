// Parsing of --device, --torch_dtype and --num_threads into LibTorch types.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

namespace swift {

// "auto" (CUDA when available, else CPU), "cpu", "cuda", "cuda:N". Throws DeviceError when CUDA is asked
// for and absent, UsageError for an unknown spelling.
c10::Device parse_device(const std::string& spec);

// "auto" -> nullopt (use the checkpoint's torch_dtype), float32/fp32, bfloat16/bf16, float16/fp16/half.
std::optional<c10::ScalarType> parse_dtype(const std::string& spec, const std::string& flag = "--torch_dtype");

// Name as Hugging Face writes it in config.json ("float32", "bfloat16", "float16").
std::string dtype_name(c10::ScalarType dtype);

// Sets LibTorch's intra-op thread count: `requested` when > 0, else OMP_NUM_THREADS, else the core count.
// Returns the count in force. UsageError for a negative count or one above 8 x the cores (at least 64), which
// OpenMP could not start.
int configure_threads(int requested);

}  // namespace swift
