/*
 * hw_capture_signal.c: the capture signal handler and the one request slot it answers.
 *
 * Async-signal-safety checklist for hw_capture_handler() and what it calls:
 *   - errno is saved on entry and restored on exit.
 *   - It touches only: the atomic state word (compare-and-swap), the request fields written before
 *     the request was published, a frame buffer on its own (alternate) stack, the shared result
 *     slot (only after winning the RUNNING -> WRITING transition for its own generation), and
 *     getpid(), syscall(SYS_gettid), clock_gettime(): all async-signal-safe; and process_vm_readv on
 *     this process (the async callers of hw_async.c; the instruction before a cut-short call).
 *   - A capture wakes nobody: a wake-up (sem_post) would pull the watchdog onto the hung thread's
 *     CPU and cost it the watchdog's whole turn. The watchdog polls instead. Only a dump request
 *     from another process posts its semaphore (hw_wake.c: sem_post is async-signal-safe).
 *   - It never allocates, locks, logs or formats.
 *   - A signal that is not a capture request for this process is passed to the handler that was
 *     installed before ours.
 *   - A late handler (its request already abandoned by the watchdog) fails its compare-and-swap
 *     and writes nothing shared: the generation number in the signal and in the state word keeps a
 *     late answer from completing the next request or writing into its memory.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "CHangWatchCapture.h"
#include "hw_internal.h"

/* The state word: generation << 3 | phase. */
enum { HW_IDLE = 0, HW_PENDING = 1, HW_RUNNING = 2, HW_WRITING = 3, HW_DONE = 4, HW_ABANDONED = 5 };
#define HW_STATE(generation, phase) (((uint64_t)(generation) << 3) | (uint64_t)(phase))
#define HW_PHASE(state) ((int)((state) & 7u))

/* Capture requests carry this tag in the high bits of si_value, the generation in the low bits. */
#define HW_SIGNAL_TAG ((uint64_t)0x4857 << 48)
#define HW_GENERATION_MASK (((uint64_t)1 << 48) - 1)

static _Atomic uint64_t g_state = HW_STATE(0, HW_IDLE);
static _Atomic uint64_t g_next_generation = 1;

static struct {
    pid_t tid;
    int max_frames;
    uintptr_t stack_low;
    uintptr_t stack_high;
} g_request;

static hw_capture_result g_result;

#define HW_SIGNAL_LIMIT 65
static struct sigaction g_previous[HW_SIGNAL_LIMIT];

/* Pass a signal that is not ours to whoever had it before us. */
static void hw_chain(int signo, siginfo_t *info, void *context) {
    if (signo <= 0 || signo >= HW_SIGNAL_LIMIT) {
        return;
    }
    const struct sigaction *previous = &g_previous[signo];
    if (previous->sa_flags & SA_SIGINFO) {
        if (previous->sa_sigaction != NULL) {
            previous->sa_sigaction(signo, info, context);
        }
    } else if (previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN && previous->sa_handler != NULL) {
        previous->sa_handler(signo);
    }
    /* SIG_DFL / SIG_IGN: a stray real-time signal is dropped rather than terminating the process. */
}

/* Answer capture request `generation` on the calling thread. */
static void hw_answer(uint64_t generation, ucontext_t *uc) {
    uint64_t state = atomic_load(&g_state);
    if (state != HW_STATE(generation, HW_PENDING)) {
        return; /* stale: abandoned, or a later request is pending */
    }
    const pid_t tid = g_request.tid;
    const int max_frames = g_request.max_frames;
    const uintptr_t stack_low = g_request.stack_low;
    const uintptr_t stack_high = g_request.stack_high;
    if (tid != hw_gettid()) {
        return; /* delivered to a thread that reuses an old id: not the thread we asked for */
    }
    uint64_t expected = HW_STATE(generation, HW_PENDING);
    if (!atomic_compare_exchange_strong(&g_state, &expected, HW_STATE(generation, HW_RUNNING))) {
        return;
    }
    const int64_t entry_ns = hw_now_ns();
    const int32_t cut_call_short = (int32_t)hw_context_cut_call_short(uc);
    uintptr_t frames[HW_MAX_FRAMES];
    int32_t flags = 0;
    uintptr_t last_sp = 0;
    int count = hw_unwind_walk(uc, HW_SIGNAL_CONTEXT_SIZE, hw_stack_floor(hw_context_sp(uc), stack_low), stack_high, frames,
                               max_frames, &flags, &last_sp);
    hw_async_chain chain;
    (void)hw_async_chain_read(frames, count, hw_context_sp(uc), stack_high, &chain);

    expected = HW_STATE(generation, HW_RUNNING);
    if (!atomic_compare_exchange_strong(&g_state, &expected, HW_STATE(generation, HW_WRITING))) {
        return; /* abandoned while we were walking: the slot is no longer ours */
    }
    g_result.generation = generation;
    g_result.frame_count = count;
    g_result.flags = flags;
    memcpy(g_result.frames, frames, (size_t)count * sizeof(uintptr_t));
    memcpy(&g_result.async_chain, &chain, sizeof(chain));
    g_result.handler_entry_ns = entry_ns;
    g_result.cut_call_short = cut_call_short;
    g_result.handler_exit_ns = hw_now_ns();
    atomic_store(&g_state, HW_STATE(generation, HW_DONE));
}

static void hw_capture_handler(int signo, siginfo_t *info, void *context) {
    const int saved_errno = errno;
    const uint64_t value = info != NULL && info->si_code == SI_QUEUE ? (uint64_t)(uintptr_t)info->si_value.sival_ptr : 0;
    const int own = info != NULL && info->si_code == SI_QUEUE && info->si_pid == getpid();
    if (own && ((value & ~HW_GENERATION_MASK) == HW_SIGNAL_TAG || (value & ~HW_GENERATION_MASK) == HW_PREPARE_TAG)) {
        if ((value & ~HW_GENERATION_MASK) == HW_SIGNAL_TAG) {
            hw_answer(value & HW_GENERATION_MASK, (ucontext_t *)context);
        } else { /* a thread never attached, asked to prepare itself (hw_prepare.c) */
            hw_prepare_answer(value & HW_GENERATION_MASK, (ucontext_t *)context);
        }
        errno = saved_errno;
        return;
    }
    if ((value & ~HW_GENERATION_MASK) == HW_DUMP_TAG) { /* `hangwatch dump`: wake the watchdog (hw_wake.c) */
        hw_dump_request(value & HW_GENERATION_MASK);
        errno = saved_errno;
        return;
    }
    hw_chain(signo, info, context);
    errno = saved_errno;
}

int hw_capture_handler_is_current(int signo) {
    struct sigaction current;
    if (sigaction(signo, NULL, &current) != 0) {
        return 0;
    }
    return (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == hw_capture_handler;
}

/* Warm libunwind on the calling thread: initialise its global state and fill the unwind-rule cache
 * with this thread's frames, so the handler finds everything ready. */
static void hw_warm_up(void) {
    uintptr_t low = 0, high = 0;
    if (hw_current_thread_stack(&low, &high) != 0) {
        return;
    }
    unw_context_t context;
    if (unw_getcontext(&context) != 0) {
        return;
    }
    uintptr_t frames[HW_MAX_FRAMES];
    int32_t flags = 0;
    uintptr_t last_sp = 0;
    (void)hw_unwind_walk(&context, sizeof(context), hw_stack_floor(hw_context_sp(&context), low), high, frames, HW_MAX_FRAMES,
                         &flags, &last_sp);
}

int hw_capture_install(int signo) {
    if (signo <= 0 || signo >= HW_SIGNAL_LIMIT) {
        return EINVAL;
    }
    int prepared = hw_unwind_prepare();
    if (prepared != 0) {
        return prepared;
    }
    struct sigaction current;
    if (sigaction(signo, NULL, &current) != 0) {
        return errno;
    }
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == hw_capture_handler) {
        return 0;
    }
    /* Record the handler we displace before ours can run and need it. */
    g_previous[signo] = current;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_sigaction = hw_capture_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigfillset(&action.sa_mask);
    /* Faults inside the handler must stay deliverable (and fatal), not be blocked. */
    sigdelset(&action.sa_mask, SIGSEGV);
    sigdelset(&action.sa_mask, SIGBUS);
    sigdelset(&action.sa_mask, SIGILL);
    sigdelset(&action.sa_mask, SIGFPE);
    if (sigaction(signo, &action, NULL) != 0) {
        return errno;
    }
    hw_warm_up();
    return 0;
}

void hw_capture_thread_unblock(int signo) {
    sigset_t capture;
    sigemptyset(&capture);
    sigaddset(&capture, signo);
    pthread_sigmask(SIG_UNBLOCK, &capture, NULL);
}

int hw_capture_thread_attach(size_t altstack_size, int signo) {
    int installed = 0;
    sigset_t capture;
    sigemptyset(&capture);
    sigaddset(&capture, signo);
    pthread_sigmask(SIG_UNBLOCK, &capture, NULL);
    stack_t current;
    if (sigaltstack(NULL, &current) != 0) {
        return -errno;
    }
    if (current.ss_flags & SS_DISABLE) {
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        const size_t size = (altstack_size + page - 1) / page * page;
        /* One guard page below the stack: an overflow faults instead of corrupting memory. */
        void *memory = mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (memory == MAP_FAILED) {
            return -errno;
        }
        if (mprotect(memory, page, PROT_NONE) != 0) {
            int error = errno;
            munmap(memory, size + page);
            return -error;
        }
        stack_t stack;
        memset(&stack, 0, sizeof(stack));
        stack.ss_sp = (char *)memory + page;
        stack.ss_size = size;
        if (sigaltstack(&stack, NULL) != 0) {
            int error = errno;
            munmap(memory, size + page);
            return -error;
        }
        installed = 1;
    }
    hw_warm_up();
    return installed;
}

int hw_capture_request(pid_t tid, const hw_capture_guard *guard, uintptr_t stack_low, uintptr_t stack_high, int signo,
                       int max_frames, uint64_t *generation) {
    uint64_t state = atomic_load(&g_state);
    /* DONE here is an answer nobody waited for (its waiter gave up while the answer was being written). */
    if (HW_PHASE(state) != HW_IDLE && HW_PHASE(state) != HW_ABANDONED && HW_PHASE(state) != HW_DONE) {
        return EBUSY;
    }
    const uint64_t next = atomic_fetch_add(&g_next_generation, 1) & HW_GENERATION_MASK;
    g_request.tid = tid;
    g_request.max_frames = max_frames > HW_MAX_FRAMES ? HW_MAX_FRAMES : max_frames;
    g_request.stack_low = stack_low;
    g_request.stack_high = stack_high;
    if (!atomic_compare_exchange_strong(&g_state, &state, HW_STATE(next, HW_PENDING))) {
        return EBUSY;
    }
    /* Everything is ready: the last look at the thread and the send are as close as they can be. */
    const int sent = hw_guarded_send(tid, signo, HW_SIGNAL_TAG | next, guard, &g_state, HW_STATE(next, HW_PENDING),
                                     HW_STATE(next, HW_ABANDONED));
    if (sent != 0) {
        return sent;
    }
    *generation = next;
    return 0;
}

static void hw_collect(hw_capture_result *out) {
    out->generation = g_result.generation;
    out->frame_count = g_result.frame_count;
    out->flags = g_result.flags;
    out->handler_entry_ns = g_result.handler_entry_ns;
    out->handler_exit_ns = g_result.handler_exit_ns;
    out->cut_call_short = g_result.cut_call_short;
    memcpy(out->frames, g_result.frames, (size_t)g_result.frame_count * sizeof(uintptr_t));
    memcpy(&out->async_chain, &g_result.async_chain, sizeof(out->async_chain));
}

int hw_capture_wait(uint64_t generation, int64_t timeout_ns, hw_capture_result *out) {
    const int64_t deadline = hw_now_ns() + timeout_ns;
    const uint64_t done = HW_STATE(generation, HW_DONE);
    /* Poll with a growing sleep: 10 us first (most answers take less), doubling up to 1 ms. The
     * first sleeps are short enough that the answer is collected promptly; the sleeps are timer
     * wake-ups on the watchdog's own CPU, never a wake-up sent from the hung thread's. */
    int64_t pause_ns = 10000;
    for (;;) {
        if (atomic_load(&g_state) == done) {
            hw_collect(out);
            atomic_store(&g_state, HW_STATE(generation, HW_IDLE));
            return 0;
        }
        const int64_t now = hw_now_ns();
        if (now >= deadline) {
            break;
        }
        int64_t sleep_ns = pause_ns < deadline - now ? pause_ns : deadline - now;
        struct timespec pause = {(time_t)(sleep_ns / 1000000000), (long)(sleep_ns % 1000000000)};
        nanosleep(&pause, NULL);
        if (pause_ns < 1000000) {
            pause_ns *= 2;
        }
    }
    /* Out of time: abandon the request unless the handler is already publishing its answer. */
    for (int spins = 0;; spins++) {
        uint64_t state = atomic_load(&g_state);
        if (state == done) {
            hw_collect(out);
            atomic_store(&g_state, HW_STATE(generation, HW_IDLE));
            return 0;
        }
        if (state == HW_STATE(generation, HW_PENDING) || state == HW_STATE(generation, HW_RUNNING)) {
            if (atomic_compare_exchange_strong(&g_state, &state, HW_STATE(generation, HW_ABANDONED))) {
                return ETIMEDOUT;
            }
            continue;
        }
        if (state == HW_STATE(generation, HW_WRITING) && spins < 10000) {
            /* A memcpy away from DONE. */
            struct timespec pause = {0, 20000};
            nanosleep(&pause, NULL);
            continue;
        }
        return ETIMEDOUT;
    }
}
