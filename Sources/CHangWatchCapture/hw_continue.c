/*
 * hw_continue.c: the SIGCONT stamp. A process stopped by a signal (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU)
 * runs again only on SIGCONT; one frozen by a cgroup freezer or held by a debugger gets none. So a
 * SIGCONT that arrived while a hang lasted says how the process was stopped, and when it went on:
 * the handler counts it and stamps CLOCK_MONOTONIC, the watchdog reads both (Bridge/UnsafeContinueSignal).
 *
 * Installed only where SIGCONT has its default disposition: the host's own handler (or its choice to
 * ignore SIGCONT) is never displaced. The kernel continues the process whatever the disposition; the
 * handler adds the stamp only. One consequence, said in docs/configuration.md
 * (HANGWATCH_CONTINUE_STAMP): with a handler, a sleep the stop interrupted (nanosleep, poll, select)
 * returns EINTR at the continue instead of resuming (SA_RESTART restarts the rest), as epoll_wait
 * does after a stop even without one.
 *
 * Async-signal-safety checklist for hw_continue_handler():
 *   - errno is saved on entry and restored on exit.
 *   - It calls clock_gettime(CLOCK_MONOTONIC) (async-signal-safe, POSIX) and does two atomic stores
 *     (lock-free 64-bit atomics): the time first, then the count with release order, so a reader
 *     that sees a new count (acquire) sees its time.
 *   - It never allocates, locks, logs or formats; it touches no state but its two words.
 *   - The disposition it replaced was SIG_DFL, whose action (continuing) the kernel takes before any
 *     handler runs: there is nothing to chain to. A handler the host installs later replaces ours
 *     (sigaction); hw_continue_is_current then says so, and no stamp is believed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "CHangWatchCapture.h"

static _Atomic uint64_t g_continue_count = 0;
static _Atomic uint64_t g_continue_last_ns = 0;
static _Atomic int g_continue_installed = 0;

static void hw_continue_handler(int signo, siginfo_t *info, void *context) {
    (void)signo;
    (void)info;
    (void)context;
    int saved_errno = errno;
    struct timespec now;
    if (clock_gettime(CLOCK_MONOTONIC, &now) == 0) {
        atomic_store_explicit(&g_continue_last_ns, (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec,
                              memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&g_continue_count, 1, memory_order_release);
    errno = saved_errno;
}

int hw_continue_is_current(void) {
    struct sigaction current;
    if (sigaction(SIGCONT, NULL, &current) != 0) {
        return 0;
    }
    return (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == hw_continue_handler;
}

int hw_continue_install(void) {
    if (atomic_load(&g_continue_installed) && hw_continue_is_current()) {
        return 0;
    }
    struct sigaction current;
    if (sigaction(SIGCONT, NULL, &current) != 0) {
        return -errno;
    }
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == hw_continue_handler) {
        atomic_store(&g_continue_installed, 1);
        return 0;
    }
    if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) {
        return 1;
    }
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_sigaction = hw_continue_handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGCONT, &action, NULL) != 0) {
        return -errno;
    }
    atomic_store(&g_continue_installed, 1);
    return 0;
}

void hw_continue_unblock(void) {
    sigset_t cont;
    sigemptyset(&cont);
    sigaddset(&cont, SIGCONT);
    pthread_sigmask(SIG_UNBLOCK, &cont, NULL);
}

uint64_t hw_continue_count(void) {
    return atomic_load_explicit(&g_continue_count, memory_order_acquire);
}

uint64_t hw_continue_last_ns(void) {
    return atomic_load_explicit(&g_continue_last_ns, memory_order_relaxed);
}
