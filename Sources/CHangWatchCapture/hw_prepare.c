/*
 * hw_prepare.c: preparing a thread for captures from outside it, by a signal it lets through.
 *
 * A thread can be captured by signal once the capture signal reaches it, it has an alternate
 * signal stack, and its stack bounds are known. A thread that never ran the attach step
 * (hw_capture_thread_attach) has none of these: a libdispatch worker blocks every signal but a few
 * (SIGILL, SIGTRAP, SIGFPE, SIGBUS, SIGSEGV, SIGSYS, SIGPIPE and SIGPROF, which it leaves open for
 * profilers) from the moment it starts. The prepare request asks such a thread, by the capture
 * signal when it lets that through or else by SIGPROF, to do on its own behalf the three things no
 * other thread can do for it:
 *   - take the alternate stack the watchdog mapped for it, unless it has one (sigaltstack),
 *   - let the capture signal through from the moment the handler returns (the signal mask the
 *     kernel restores from the handler's context, uc_sigmask, loses the capture signal's bit),
 *   - say where its stack is: its stack pointer and its thread pointer (pthread_self(), which on
 *     x86_64 glibc sits above the thread's stack in the same mapping).
 * The watchdog turns the two pointers into stack bounds with /proc/self/maps, off the handler.
 *
 * The request slot is the capture slot's protocol in small: a state word (generation << 3 | phase)
 * that the handler claims with compare-and-swap, so a late answer to an abandoned request writes
 * nothing shared. The alternate stack is the one side effect a late answer keeps: the watchdog
 * never unmaps one it handed to a request that was not answered.
 *
 * Async-signal-safety checklist for hw_prepare_answer(): compare-and-swaps on the state word;
 * sigaltstack (a system call); sigdelset on the context's mask (a bit operation); pthread_self (a
 * read of the thread pointer); gettid and clock_gettime; the cut-short check (hw_context_cut_call_short:
 * process_vm_readv). No allocation, no lock, no stdio.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "CHangWatchCapture.h"
#include "hw_internal.h"

enum { HW_P_IDLE = 0, HW_P_PENDING = 1, HW_P_RUNNING = 2, HW_P_WRITING = 3, HW_P_DONE = 4, HW_P_ABANDONED = 5 };
#define HW_P_STATE(generation, phase) (((uint64_t)(generation) << 3) | (uint64_t)(phase))
#define HW_P_PHASE(state) ((int)((state) & 7u))
#define HW_P_GENERATION_MASK (((uint64_t)1 << 48) - 1)

static _Atomic uint64_t g_prepare_state = HW_P_STATE(0, HW_P_IDLE);
static _Atomic uint64_t g_prepare_next = 1;

static struct {
    pid_t tid;
    int capture_signo;
    void *altstack;
    size_t altstack_size;
} g_prepare_request;

static hw_prepare_result g_prepare_result;

void hw_prepare_answer(uint64_t generation, ucontext_t *uc) {
    if (atomic_load(&g_prepare_state) != HW_P_STATE(generation, HW_P_PENDING) || g_prepare_request.tid != hw_gettid()) {
        return; /* stale, or a thread that reuses an old id */
    }
    uint64_t expected = HW_P_STATE(generation, HW_P_PENDING);
    if (!atomic_compare_exchange_strong(&g_prepare_state, &expected, HW_P_STATE(generation, HW_P_RUNNING))) {
        return;
    }
    hw_prepare_result result;
    memset(&result, 0, sizeof(result));
    result.generation = generation;
    result.cut_call_short = (int32_t)hw_context_cut_call_short(uc);
    stack_t current;
    if (sigaltstack(NULL, &current) == 0) {
        if (!(current.ss_flags & SS_DISABLE)) {
            result.had_alternate_stack = 1;
        } else if (g_prepare_request.altstack != NULL) {
            stack_t given;
            memset(&given, 0, sizeof(given));
            given.ss_sp = g_prepare_request.altstack;
            given.ss_size = g_prepare_request.altstack_size;
            result.took_alternate_stack = sigaltstack(&given, NULL) == 0;
        }
    }
    /* The mask the thread returns to: the capture signal no longer blocked. */
    sigdelset(&uc->uc_sigmask, g_prepare_request.capture_signo);
    result.stack_pointer = hw_context_sp(uc);
    result.thread_pointer = (uintptr_t)pthread_self();
    expected = HW_P_STATE(generation, HW_P_RUNNING);
    if (!atomic_compare_exchange_strong(&g_prepare_state, &expected, HW_P_STATE(generation, HW_P_WRITING))) {
        return; /* abandoned meanwhile: the slot is no longer ours (the watchdog keeps the stack mapped) */
    }
    memcpy(&g_prepare_result, &result, sizeof(result));
    atomic_store(&g_prepare_state, HW_P_STATE(generation, HW_P_DONE));
}

int hw_prepare_request(pid_t tid, const hw_capture_guard *guard, int signo, int capture_signo, void *altstack,
                       size_t altstack_size, uint64_t *generation) {
    uint64_t state = atomic_load(&g_prepare_state);
    if (HW_P_PHASE(state) != HW_P_IDLE && HW_P_PHASE(state) != HW_P_ABANDONED && HW_P_PHASE(state) != HW_P_DONE) {
        return EBUSY;
    }
    const uint64_t next = atomic_fetch_add(&g_prepare_next, 1) & HW_P_GENERATION_MASK;
    g_prepare_request.tid = tid;
    g_prepare_request.capture_signo = capture_signo;
    g_prepare_request.altstack = altstack;
    g_prepare_request.altstack_size = altstack_size;
    if (!atomic_compare_exchange_strong(&g_prepare_state, &state, HW_P_STATE(next, HW_P_PENDING))) {
        return EBUSY;
    }
    /* The last look at the thread and the send as close as they can be, as for a capture. */
    const int sent = hw_guarded_send(tid, signo, HW_PREPARE_TAG | next, guard, &g_prepare_state, HW_P_STATE(next, HW_P_PENDING),
                                     HW_P_STATE(next, HW_P_ABANDONED));
    if (sent != 0) {
        return sent;
    }
    *generation = next;
    return 0;
}

int hw_prepare_wait(uint64_t generation, int64_t timeout_ns, hw_prepare_result *out) {
    const int64_t deadline = hw_now_ns() + timeout_ns;
    const uint64_t done = HW_P_STATE(generation, HW_P_DONE);
    int64_t pause_ns = 10000;
    for (int spins = 0;; spins++) {
        uint64_t state = atomic_load(&g_prepare_state);
        if (state == done) {
            memcpy(out, &g_prepare_result, sizeof(*out));
            atomic_store(&g_prepare_state, HW_P_STATE(generation, HW_P_IDLE));
            return 0;
        }
        const int64_t now = hw_now_ns();
        if (now >= deadline && state != HW_P_STATE(generation, HW_P_WRITING)) {
            if (atomic_compare_exchange_strong(&g_prepare_state, &state, HW_P_STATE(generation, HW_P_ABANDONED))) {
                return ETIMEDOUT;
            }
            continue;
        }
        if (spins > 100000) {
            return ETIMEDOUT; /* a handler stuck between two stores: never seen, but never waited on forever */
        }
        /* Writing: a memcpy away from done. Otherwise a growing sleep, 10 us doubling to 1 ms. */
        int64_t sleep_ns = state == HW_P_STATE(generation, HW_P_WRITING) ? 20000 : pause_ns;
        if (now < deadline && sleep_ns > deadline - now) {
            sleep_ns = deadline - now;
        }
        struct timespec pause = {(time_t)(sleep_ns / 1000000000), (long)(sleep_ns % 1000000000)};
        nanosleep(&pause, NULL);
        if (pause_ns < 1000000) {
            pause_ns *= 2;
        }
    }
}

/* The attach step's own way, on the thread itself (not in a handler: pthread_getattr_np allocates). */
int hw_current_thread_stack(uintptr_t *low, uintptr_t *high) {
    pthread_attr_t attributes;
    int result = pthread_getattr_np(pthread_self(), &attributes);
    if (result != 0) {
        return result;
    }
    void *address = NULL;
    size_t size = 0;
    result = pthread_attr_getstack(&attributes, &address, &size);
    pthread_attr_destroy(&attributes);
    if (result != 0) {
        return result;
    }
    *low = (uintptr_t)address;
    *high = (uintptr_t)address + size;
    return 0;
}

int hw_signal_disposition(int signo) {
    struct sigaction current;
    if (signo <= 0 || sigaction(signo, NULL, &current) != 0) {
        return -1;
    }
    if (current.sa_flags & SA_SIGINFO) {
        return current.sa_sigaction != NULL ? 2 : 0;
    }
    if (current.sa_handler == SIG_DFL) {
        return 0;
    }
    return current.sa_handler == SIG_IGN ? 1 : 2;
}
