import Foundation
import HangWatchTestSupport
import Testing

/// Misbehaving C and C++ code for the fault-injection tests, compiled for the test run and loaded
/// with `dlopen`: blocking system calls, a stack nearly overflowed, corrupt frame pointers, the
/// dynamic loader and the C++ unwinder in tight loops, a signal handler installed after HangWatch's.
///
/// Every loop takes a `stop` flag (non-zero: return) and bumps a `progress` counter, so a test can
/// tell a thread that keeps running from one that is stuck.
struct FaultLibrary {
    typealias Loop = @convention(c) (UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Int>) -> Void
    typealias NearOverflow = @convention(c) (UInt, UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Int>) -> Int
    typealias BadFramePointer = @convention(c) (Int, UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Int>) -> Void
    typealias Wait = @convention(c) (Int32, Int32, UnsafeMutablePointer<Int64>) -> Int32
    typealias InstallAfter = @convention(c) (Int32, Int32) -> Int32
    typealias Count = @convention(c) () -> Int

    /// The system calls `wait` can block in, by the number it takes.
    enum WaitKind: Int32, CaseIterable, Sendable {
        case usleep = 0, nanosleep, poll, epollWait, readPipe, futex
        /// The name the report gives the system call.
        var syscallName: String {
            switch self {
            case .usleep, .nanosleep: "clock_nanosleep"
            case .poll: "poll"
            case .epollWait: "epoll_wait"
            case .readPipe: "read"
            case .futex: "futex"
            }
        }
    }

    /// The C library's path (its loops, for a child process), the C++ one's, the interposer's.
    let path: String
    let cxxPath: String
    let allocationCounter: String
    let wait: Wait
    let nearOverflow: NearOverflow
    let badFramePointer: BadFramePointer
    let dlIterateStorm: Loop
    let throwStorm: Loop
    let mallocStorm: Loop
    let installAfter: InstallAfter
    let afterHandlerCount: Count

    static let shared: Result<FaultLibrary, any Error> = Result { try FaultLibrary() }

    /// Sends `signal` to the calling thread (unblocked first: test threads come from libdispatch,
    /// which blocks signals) and tells whether the handler `installAfter` put in counted it.
    func lateHandlerGetsItsOwnSignal(_ signal: Int32) -> Bool {
        let before = afterHandlerCount()
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, signal)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        pthread_kill(pthread_self(), signal)
        return afterHandlerCount() == before + 1
    }

    private init() throws {
        // The frame-pointer function has no unwind information (as hand-written assembly often
        // has not): the unwinder must fall back and must not trust what it finds.
        let c = try TestLibrary.build(name: "hangwatch_faults", code: Self.cSource, flags: ["-fno-optimize-sibling-calls"], libraries: ["-lpthread"])
        let noCFI = try TestLibrary.build(
            name: "hangwatch_faults_nocfi", code: Self.noUnwindInfoSource,
            flags: ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-fno-omit-frame-pointer"])
        let cxx = try TestLibrary.build(name: "hangwatch_faults_cxx", code: Self.cxxSource, flags: ["-x", "c++"], libraries: ["-lstdc++"])
        func load(_ path: String) throws -> UnsafeMutableRawPointer {
            try #require(dlopen(path, RTLD_NOW), "dlopen \(path): \(String(cString: dlerror()))")
        }
        let (main, bare, plus) = (try load(c), try load(noCFI), try load(cxx))
        func symbol<T>(_ handle: UnsafeMutableRawPointer, _ name: String, as type: T.Type) throws -> T {
            unsafeBitCast(try #require(dlsym(handle, name), "no symbol \(name)"), to: type)
        }
        path = c
        wait = try symbol(main, "hangwatch_fault_wait", as: Wait.self)
        nearOverflow = try symbol(main, "hangwatch_fault_near_overflow", as: NearOverflow.self)
        dlIterateStorm = try symbol(main, "hangwatch_fault_dl_iterate_storm", as: Loop.self)
        installAfter = try symbol(main, "hangwatch_fault_install_after", as: InstallAfter.self)
        mallocStorm = try symbol(main, "hangwatch_fault_malloc_storm", as: Loop.self)
        allocationCounter = try TestLibrary.build(name: "hangwatch_allocation_counter", code: Self.allocationCounterSource)
        cxxPath = cxx
        afterHandlerCount = try symbol(main, "hangwatch_fault_after_count", as: Count.self)
        badFramePointer = try symbol(bare, "hangwatch_fault_bad_frame_pointer", as: BadFramePointer.self)
        throwStorm = try symbol(plus, "hangwatch_fault_throw_storm", as: Loop.self)
    }

    static let cSource = #"""
        #define _GNU_SOURCE
        #include <errno.h>
        #include <link.h>
        #include <linux/futex.h>
        #include <poll.h>
        #include <pthread.h>
        #include <signal.h>
        #include <stdint.h>
        #include <string.h>
        #include <sys/epoll.h>
        #include <sys/syscall.h>
        #include <time.h>
        #include <unistd.h>

        static long long now_ns(void) {
            struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
            return t.tv_sec * 1000000000LL + t.tv_nsec;
        }

        struct late_write { int fd; int ms; };
        static void *write_late(void *p) {
            struct late_write *w = p;
            usleep((useconds_t)w->ms * 1000);
            (void)write(w->fd, "x", 1);
            return NULL;
        }

        /* Blocks `ms` milliseconds in one system call. Returns 0 when the call ended as it would have
         * with nobody interfering (timed out, or read the byte written after `ms`), else its errno. */
        __attribute__((noinline)) int hangwatch_fault_wait(int kind, int ms, long long *elapsed_ns) {
            const long long start = now_ns();
            int result = 0;
            struct timespec span = {ms / 1000, (long)(ms % 1000) * 1000000L};
            switch (kind) {
            case 0: if (usleep((useconds_t)ms * 1000) != 0) result = errno; break;
            case 1: if (nanosleep(&span, NULL) != 0) result = errno; break;
            case 2: if (poll(NULL, 0, ms) < 0) result = errno; break;
            case 3: {
                int ep = epoll_create1(0);
                struct epoll_event event;
                if (epoll_wait(ep, &event, 1, ms) < 0) result = errno;
                close(ep);
                break;
            }
            case 4: {
                int fds[2];
                if (pipe(fds) != 0) return errno;
                struct late_write w = {fds[1], ms};
                pthread_t writer;
                pthread_create(&writer, NULL, write_late, &w);
                char byte = 0;
                ssize_t n = read(fds[0], &byte, 1);
                if (n != 1) result = n < 0 ? errno : EIO;
                pthread_join(writer, NULL);
                close(fds[0]);
                close(fds[1]);
                break;
            }
            case 5: {
                int word = 0;
                if (syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &span, NULL, 0) != 0 && errno != ETIMEDOUT) result = errno;
                break;
            }
            default: result = EINVAL;
            }
            *elapsed_ns = now_ns() - start;
            return result;
        }

        /* Recurses until its frame lies below `floor` (near the end of the stack), then spins there. */
        __attribute__((noinline)) static long hangwatch_fault_recurse(uintptr_t floor, volatile int *stop, volatile long *progress, long depth) {
            volatile char pad[48];
            pad[0] = (char)depth;
            if ((uintptr_t)__builtin_frame_address(0) > floor) {
                return hangwatch_fault_recurse(floor, stop, progress, depth + 1) + pad[0];
            }
            while (!*stop) (*progress)++;
            return depth;
        }
        long hangwatch_fault_near_overflow(uintptr_t floor, volatile int *stop, volatile long *progress) {
            return hangwatch_fault_recurse(floor, stop, progress, 0);
        }

        static int count_image(struct dl_phdr_info *info, size_t size, void *data) {
            (void)info; (void)size;
            (*(long *)data)++;
            return 0;
        }
        /* The dynamic loader's lock, taken and released as fast as it goes. */
        void hangwatch_fault_dl_iterate_storm(volatile int *stop, volatile long *progress) {
            while (!*stop) {
                long images = 0;
                dl_iterate_phdr(count_image, &images);
                (*progress)++;
            }
        }

        /* Allocations past the per-thread caches, so that most of them take an arena lock. */
        #include <stdlib.h>
        void hangwatch_fault_malloc_storm(volatile int *stop, volatile long *progress) {
            void *held[16] = {0};
            unsigned long seed = 1;
            while (!*stop) {
                seed = seed * 6364136223846793005UL + 1;
                int slot = (int)((seed >> 33) % 16);
                free(held[slot]);
                held[slot] = malloc(2048 + (size_t)((seed >> 40) % 60000));
                if (held[slot] != NULL) ((volatile char *)held[slot])[0] = 1;
                (*progress)++;
            }
            for (int i = 0; i < 16; i++) free(held[i]);
        }

        /* A handler another library installs on the capture signal after HangWatch: counts the
         * signals that are its own (not queued by HangWatch) and, if `chain`, passes the others on. */
        static struct sigaction saved;
        static int chaining;
        static volatile long own_signals;
        static void after_handler(int signo, siginfo_t *info, void *context) {
            if (info == NULL || info->si_code != SI_QUEUE) {
                own_signals++;
                return;
            }
            if (chaining && (saved.sa_flags & SA_SIGINFO) && saved.sa_sigaction != NULL) saved.sa_sigaction(signo, info, context);
        }
        int hangwatch_fault_install_after(int signo, int chain) {
            struct sigaction action;
            memset(&action, 0, sizeof(action));
            action.sa_sigaction = after_handler;
            action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
            sigemptyset(&action.sa_mask);
            chaining = chain;
            return sigaction(signo, &action, &saved);
        }
        long hangwatch_fault_after_count(void) { return own_signals; }
        """#

    /// An allocator interposer (LD_PRELOAD) that counts every allocation made while the calling
    /// thread runs on its alternate signal stack, i.e. inside a signal handler, and prints the
    /// counts when the process exits: `hangwatch-allocations calls=N in-signal-handler=M`.
    static let allocationCounterSource = #"""
        #define _GNU_SOURCE
        #include <signal.h>
        #include <stdatomic.h>
        #include <stdio.h>
        #include <string.h>
        #include <unistd.h>
        extern void *__libc_malloc(size_t);
        extern void *__libc_calloc(size_t, size_t);
        extern void *__libc_realloc(void *, size_t);
        extern void *__libc_memalign(size_t, size_t);
        extern void __libc_free(void *);
        static _Atomic long calls, in_handler;
        static void count(void) {
            atomic_fetch_add(&calls, 1);
            stack_t current;
            if (sigaltstack(NULL, &current) == 0 && (current.ss_flags & SS_ONSTACK)) atomic_fetch_add(&in_handler, 1);
        }
        void *malloc(size_t n) { count(); return __libc_malloc(n); }
        void *calloc(size_t m, size_t n) { count(); return __libc_calloc(m, n); }
        void *realloc(void *p, size_t n) { count(); return __libc_realloc(p, n); }
        void *memalign(size_t a, size_t n) { count(); return __libc_memalign(a, n); }
        void *aligned_alloc(size_t a, size_t n) { count(); return __libc_memalign(a, n); }
        int posix_memalign(void **out, size_t a, size_t n) {
            count();
            void *p = __libc_memalign(a, n);
            if (p == NULL) return 12;
            *out = p;
            return 0;
        }
        void free(void *p) { if (p != NULL) count(); __libc_free(p); }
        __attribute__((destructor)) static void report(void) {
            char line[128];
            int n = snprintf(line, sizeof line, "hangwatch-allocations calls=%ld in-signal-handler=%ld\n",
                             atomic_load(&calls), atomic_load(&in_handler));
            if (n > 0) (void)write(2, line, (size_t)n);
        }
        """#

    /// x86-64: a function without unwind information that points the frame pointer at garbage
    /// (kind 0: an unmapped low address, 1: a non-canonical address, 2: a frame record that points
    /// at itself, a cycle) and spins.
    static let noUnwindInfoSource = #"""
        #include <stdint.h>
        void hangwatch_fault_bad_frame_pointer(long kind, volatile int *stop, volatile long *progress) {
            volatile uintptr_t record[2];
            record[0] = (uintptr_t)&record[0];
            record[1] = (uintptr_t)&hangwatch_fault_bad_frame_pointer + 8;
            uintptr_t value = kind == 0 ? (uintptr_t)0x10 : kind == 1 ? (uintptr_t)0xdeadbeefdeadbeefULL : (uintptr_t)&record[0];
        #if defined(__x86_64__)
            __asm__ volatile(
                "push %%rbp\n\t"
                "mov %[value], %%rbp\n\t"
                "1: incq (%[progress])\n\t"
                "cmpl $0, (%[stop])\n\t"
                "je 1b\n\t"
                "pop %%rbp\n\t"
                :
                : [value] "r"(value), [progress] "r"(progress), [stop] "r"(stop)
                : "memory", "cc");
        #else
            (void)value;
            while (!*stop) (*progress)++;
        #endif
        }
        """#

    /// C++ exceptions thrown and caught in a tight loop: the C++ unwinder's locks, the loader's
    /// lock (it looks up unwind tables with dl_iterate_phdr) and the allocator, over and over.
    static let cxxSource = #"""
        #include <stdexcept>
        extern "C" void hangwatch_fault_throw_storm(volatile int *stop, volatile long *progress) {
            while (!*stop) {
                try {
                    throw std::runtime_error("hangwatch fault injection");
                } catch (const std::exception &) {
                    (*progress)++;
                }
            }
        }
        """#
}
