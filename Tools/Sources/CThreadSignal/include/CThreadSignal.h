/*
 * CThreadSignal: queues a signal with a value to one thread of another process
 * (rt_tgsigqueueinfo, which glibc does not wrap). `hangwatch dump` sends its request to the
 * monitor's watchdog thread only, so that no thread of the service has a call cut short.
 */
#ifndef CTHREADSIGNAL_H
#define CTHREADSIGNAL_H

#include <stdint.h>
#include <sys/types.h>

/** 0, or -1 with errno set. */
int hw_thread_sigqueue(pid_t pid, pid_t tid, int signo, uint64_t value);

#endif
