#include "CThreadSignal.h"

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int hw_thread_sigqueue(pid_t pid, pid_t tid, int signo, uint64_t value) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    info.si_signo = signo;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid();
    info.si_uid = getuid();
    info.si_value.sival_ptr = (void *)(uintptr_t)value;
    return (int)syscall(SYS_rt_tgsigqueueinfo, pid, tid, signo, &info);
}
