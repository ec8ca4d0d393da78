// How much memory this process has used and may use, for logs and the memory estimate: on a CUDA device the
// caching allocator's figures, on the CPU the process's resident set and the machine's available memory.
#pragma once

namespace swift {

// Peak memory in GiB: training on a CUDA device (cuda_device >= 0), the caching allocator's peak reserved bytes
// on it (what ms-swift logs as memory(GiB)); on the CPU, this process's peak resident set (VmHWM).
double peak_memory_gib(int cuda_device = -1);
// Memory one rank may count on, in bytes: the CUDA device's total memory, or on the CPU the machine's
// available memory (MemAvailable) shared by the ranks on it. 0 when unknown.
double available_memory_bytes(int cuda_device, int local_ranks);
// Hands the allocator's free pages back to the OS. The swift binary links jemalloc with decay off (freed pages
// stay for the next training step: apps/swift/jemalloc_config.cpp), so a server that just held a large request
// would keep its peak for good; it calls this afterwards. jemalloc: every arena is purged; glibc: malloc_trim.
void return_free_memory();

}  // namespace swift
