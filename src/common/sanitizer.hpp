// What ThreadSanitizer cannot tell by itself (docs/sanitizers.md). Empty unless the build
// has -fsanitize=thread.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define SYMMEM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SYMMEM_TSAN 1
#endif
#endif

#ifdef SYMMEM_TSAN
extern "C" void __tsan_ignore_thread_begin(void);
extern "C" void __tsan_ignore_thread_end(void);
#endif

namespace symmem {

// The memory accesses made in its scope are not the calling thread's own: UCX's progress
// engine reads and writes this PE's symmetric memory on behalf of remote PEs (software RMA
// and atomics over TCP), as a NIC does elsewhere, from whichever thread happens to progress
// the worker. Those accesses are ordered by the remote PE's own protocol (a signal after
// the data, quiet, a barrier), which TSan cannot follow, so it would report them as races
// with this PE's threads. Synchronisation in the scope is still observed.
class RemoteAccessScope {
 public:
#ifdef SYMMEM_TSAN
  RemoteAccessScope() { __tsan_ignore_thread_begin(); }
  ~RemoteAccessScope() { __tsan_ignore_thread_end(); }
#else
  RemoteAccessScope() {}
  ~RemoteAccessScope() {}  // user-provided: a scope object is not an unused variable
#endif
  RemoteAccessScope(const RemoteAccessScope&) = delete;
  RemoteAccessScope& operator=(const RemoteAccessScope&) = delete;
};

}  // namespace symmem
