/*
 * hw_capture_guard.c: what the thread's /proc files must still say right before a capture signal is
 * sent (hw_capture_guard), and the send itself (hw_guarded_send, for the capture and the prepare
 * requests alike). Not signal-handler code: the watchdog runs it, between publishing a request and
 * sending its signal, so that the last read and the send are as close as they can be.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "CHangWatchCapture.h"
#include "hw_internal.h"

/* The value of `voluntary_ctxt_switches:` in a status file's text (`count` bytes), or -1. The
 * field starts a line (`nonvoluntary_ctxt_switches:` ends with the same words). */
static int64_t hw_voluntary_switches(const char *text, ssize_t count) {
    static const char field[] = "voluntary_ctxt_switches:";
    const ssize_t length = (ssize_t)sizeof(field) - 1;
    for (ssize_t i = 0; i + length < count; i++) {
        if ((i == 0 || text[i - 1] == '\n') && memcmp(text + i, field, (size_t)length) == 0) {
            int64_t value = -1;
            for (ssize_t j = i + length; j < count && text[j] != '\n'; j++) {
                if (text[j] >= '0' && text[j] <= '9') {
                    value = (value < 0 ? 0 : value * 10) + (text[j] - '0');
                }
            }
            return value;
        }
    }
    return -1;
}

/* The third field of a schedstat file's text (the run count), or -1. */
static int64_t hw_run_count(const char *text, ssize_t count) {
    int field = 0;
    int64_t value = -1;
    for (ssize_t i = 0; i < count; i++) {
        if (text[i] == ' ') {
            field++;
        } else if (field == 2 && text[i] >= '0' && text[i] <= '9') {
            value = (value < 0 ? 0 : value * 10) + (text[i] - '0');
        } else if (field == 2) {
            break;
        }
    }
    return value;
}

/* 1 when `guard` holds now: the thread was not put on a CPU again, or has not slept, since it was
 * counted, and it is not in a system call. The syscall file is read last, the send follows at once. */
int hw_capture_guard_holds(const hw_capture_guard *guard) {
    char text[4096];
    ssize_t count;
    if (guard->schedstat_fd >= 0) {
        count = pread(guard->schedstat_fd, text, 64, 0);
        if (count <= 0 || hw_run_count(text, count) != (int64_t)guard->run_count) {
            return 0;
        }
    }
    if (guard->status_fd >= 0) {
        count = pread(guard->status_fd, text, sizeof(text), 0);
        if (count <= 0 || hw_voluntary_switches(text, count) != (int64_t)guard->voluntary_switches) {
            return 0;
        }
    }
    count = pread(guard->syscall_fd, text, 64, 0);
    return count >= 7 && memcmp(text, "running", 7) == 0;
}

int hw_guarded_send(pid_t tid, int signo, uint64_t value, const hw_capture_guard *guard, _Atomic uint64_t *state,
                    uint64_t pending, uint64_t abandoned) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    info.si_signo = signo;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    info.si_value.sival_ptr = (void *)(uintptr_t)value;
    int error = 0;
    if (guard != NULL && !hw_capture_guard_holds(guard)) {
        error = EAGAIN;
    } else if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, signo, &info) != 0) {
        error = errno;
    }
    if (error != 0) {
        uint64_t expected = pending;
        atomic_compare_exchange_strong(state, &expected, abandoned);
    }
    return error;
}
