// jemalloc's settings, compiled into the binary (jemalloc reads this symbol at start-up; MALLOC_CONF in the
// environment still overrides any of them).
//
// A training step allocates and frees the same large tensors (logits, activations, gradients) every step.
// By default jemalloc hands freed pages back to the OS within seconds (dirty/muzzy decay), so every step
// faulted in and zeroed hundreds of MB again: ~10x the page faults and 1.3-1.4x the step time
// (docs/benchmarks.md, "Allocator"). Without decay, freed pages stay with the process and are reused, as
// PyTorch's CUDA caching allocator does on GPUs. oversize_threshold keeps its default on purpose: setting it to
// 0 as well made the resident size grow without bound over a long run (fragmentation).
extern "C" {
__attribute__((visibility("default"))) const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";
}
