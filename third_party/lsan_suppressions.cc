// LeakSanitizer reads this function's suppressions at exit (test binaries
// built with --config=asan link it through //third_party:gtest_main).
//
// gpr_realloc: OpenSSL's per-thread error state, which Debian's gRPC has
// OpenSSL allocate through gpr_realloc and never frees when its own
// threads exit (grpc/grpc#38539). Every TLS connection leaves one 576-byte
// block per gRPC thread that touched OpenSSL; the stack stops at
// gpr_realloc because the system libraries have no frame pointers, so a
// narrower pattern cannot match it.
extern "C" __attribute__((visibility("default"), used)) const char*
__lsan_default_suppressions() {
  return "leak:gpr_realloc\n";
}
