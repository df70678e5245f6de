// STOKE_TARGET_CLONES: compile a hot, vectorisable function twice on x86-64,
// for AVX2 and for the baseline, and pick one at load time by the CPU (GCC
// and Clang function multiversioning through an ifunc). Elsewhere a no-op.
#ifndef STOKE_SRC_UTIL_TARGET_CLONES_H_
#define STOKE_SRC_UTIL_TARGET_CLONES_H_

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__))
#define STOKE_TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define STOKE_TARGET_CLONES
#endif

#endif  // STOKE_SRC_UTIL_TARGET_CLONES_H_
