/*
 * hw_continue.h: the SIGCONT stamp (hw_continue.c; Bridge/UnsafeContinueSignal): how a monitor tells,
 * after the fact, that its process was stopped by a signal (SIGSTOP, job control) rather than frozen
 * or held by a debugger, which send no SIGCONT.
 * Part of CHangWatchCapture (its umbrella header includes it); prefixed `hw_`.
 */
#ifndef HW_CONTINUE_H
#define HW_CONTINUE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Installs the SIGCONT handler, once per process, only where SIGCONT has its default disposition
 * (no handler of the host's, not ignored). 0: installed (now or before); 1: left alone, the host
 * handles or ignores SIGCONT; -errno: sigaction failed.
 */
int hw_continue_install(void);
/* Lets SIGCONT through on the calling thread (the watchdog's): a process whose threads were all
 * started with it blocked still runs the handler there. Not signal-handler code. */
void hw_continue_unblock(void);
/* 1 while the handler installed is still ours (nobody replaced it since). */
int hw_continue_is_current(void);
/* SIGCONTs received since the install, and the CLOCK_MONOTONIC ns of the latest (0: none yet). */
uint64_t hw_continue_count(void);
uint64_t hw_continue_last_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* HW_CONTINUE_H */
