// epoll and eventfd (header only): the event-loop source sleeps on a loop's own epoll instance.
#include <sys/epoll.h>
#include <sys/eventfd.h>
// io_uring (its structures, from the kernel's uapi header): the event-loop watcher's poll of each
// idle loop's epoll instance, a wake the kernel never checks again (UnsafeLoopWakeRing).
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

// glibc has no wrappers for io_uring's two system calls, and Swift cannot call the variadic
// `syscall`; the ring's head and tail are shared with the kernel and read and written with
// acquire and release ordering, as the kernel's documentation asks.
static inline int hw_io_uring_setup(unsigned entries, struct io_uring_params *params) {
    return (int)syscall(__NR_io_uring_setup, entries, params);
}

static inline int hw_io_uring_enter(int ring, unsigned submit, unsigned wait, unsigned flags) {
    return (int)syscall(__NR_io_uring_enter, ring, submit, wait, flags, (void *)0, (size_t)0);
}

static inline unsigned hw_ring_load_acquire(const unsigned *word) {
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

static inline void hw_ring_store_release(unsigned *word, unsigned value) {
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
}
