// STOKE_TARGET_CLONES: compile a hot, vectorisable function twice on x86-64,
// for AVX2 and for the baseline, and pick one at load time by the CPU (GCC
// and Clang function multiversioning through an ifunc). Elsewhere a no-op, and
// under ThreadSanitizer, whose runtime is not yet set up when ifunc resolvers
// run (the test binary crashed before main).
#ifndef STOKE_SRC_UTIL_TARGET_CLONES_H_
#define STOKE_SRC_UTIL_TARGET_CLONES_H_

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STOKE_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define STOKE_TSAN 1
#endif

#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(STOKE_TSAN)
#define STOKE_TARGET_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define STOKE_TARGET_CLONES
#endif

#endif  // STOKE_SRC_UTIL_TARGET_CLONES_H_
