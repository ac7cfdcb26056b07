// FUZZ_CHECK(condition, message...): aborts with the message when a fuzz
// target's invariant does not hold (libFuzzer saves the input as a crash).
#ifndef TOOLS_FUZZ_FUZZ_CHECK_H_
#define TOOLS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, ...)                                    \
  do {                                                                \
    if (!(condition)) {                                               \
      std::fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, \
                   __LINE__, #condition);                             \
      std::fprintf(stderr, __VA_ARGS__);                              \
      std::fprintf(stderr, "\n");                                     \
      std::abort();                                                   \
    }                                                                 \
  } while (0)

#endif  // TOOLS_FUZZ_FUZZ_CHECK_H_
