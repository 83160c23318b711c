/*
 * hw_wake.c: the watchdog's wake-up, and the dump requests that use it.
 *
 * The watchdog sleeps on a POSIX semaphore (sem_t): the loops' latches post it on an idle-to-busy
 * edge, control calls post it, and so may a signal handler, for sem_post is async-signal-safe
 * (POSIX). That is what a dump request needs: `hangwatch dump PID` queues the capture signal to the
 * process with a dump tag and a nonce (sigqueue); the capture handler, on whatever thread gets it,
 * stores the nonce and posts the registered watchdog's semaphore (hw_dump_request), and the
 * watchdog, awake, takes the nonce (hw_dump_take) and writes the dump.
 *
 * Async-signal-safety checklist for hw_dump_request(): compare-and-swaps into a static array and
 * sem_post on a
 * semaphore that lives as long as its registration (the registering monitor unregisters it before
 * destroying it, and a handler in flight is waited out: hw_dump_unregister spins while one runs).
 * No allocation, no lock, no stdio.
 */
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "CHangWatchCapture.h"

int hw_wake_init(void *semaphore) {
    return sem_init((sem_t *)semaphore, 0, 0);
}

void hw_wake_destroy(void *semaphore) {
    sem_destroy((sem_t *)semaphore);
}

void hw_wake_post(void *semaphore) {
    sem_post((sem_t *)semaphore);
}

int hw_wake_wait(void *semaphore) {
    while (sem_wait((sem_t *)semaphore) != 0) {
        if (errno != EINTR) return -1;
    }
    return 1;
}

int hw_wake_wait_until(void *semaphore, uint64_t monotonic_ns) {
    struct timespec deadline = {(time_t)(monotonic_ns / 1000000000u), (long)(monotonic_ns % 1000000000u)};
    while (sem_clockwait((sem_t *)semaphore, CLOCK_MONOTONIC, &deadline) != 0) {
        if (errno == ETIMEDOUT) return 0;
        if (errno != EINTR) return -1;
    }
    return 1;
}

int hw_wake_try(void *semaphore) {
    return sem_trywait((sem_t *)semaphore) == 0;
}

size_t hw_wake_size(void) {
    return sizeof(sem_t);
}

/* The semaphore a dump request posts, and the requests' nonces (0: a free slot). Several
 * `hangwatch dump` calls may arrive before the watchdog wakes: each takes a slot of its own, so
 * none is lost (the watchdog answers every one, with the dump or a refusal); a request that finds
 * every slot taken is dropped, and its caller times out saying so. */
#define HW_DUMP_SLOTS 8
static _Atomic(sem_t *) g_dump_wake = NULL;
static _Atomic uint64_t g_dump_nonces[HW_DUMP_SLOTS];
static _Atomic int g_dump_in_flight = 0;

/* Waits out a handler that may still hold the semaphore registered before. */
static void hw_dump_quiesce(void) {
    while (atomic_load(&g_dump_in_flight) != 0) {
    }
}

void hw_dump_register(void *semaphore) {
    atomic_store(&g_dump_wake, (sem_t *)semaphore);
    hw_dump_quiesce();
}

void hw_dump_unregister(void *semaphore) {
    sem_t *expected = (sem_t *)semaphore;
    atomic_compare_exchange_strong(&g_dump_wake, &expected, NULL);
    hw_dump_quiesce();
}

void hw_dump_request(uint64_t nonce) {
    atomic_fetch_add(&g_dump_in_flight, 1);
    sem_t *wake = atomic_load(&g_dump_wake);
    if (wake != NULL && nonce != 0) {
        for (int slot = 0; slot < HW_DUMP_SLOTS; slot++) {
            uint64_t free_slot = 0;
            if (atomic_compare_exchange_strong(&g_dump_nonces[slot], &free_slot, nonce)) {
                sem_post(wake);
                break;
            }
        }
    }
    atomic_fetch_sub(&g_dump_in_flight, 1);
}

uint64_t hw_dump_take(void) {
    for (int slot = 0; slot < HW_DUMP_SLOTS; slot++) {
        if (atomic_load(&g_dump_nonces[slot]) != 0) {
            return atomic_exchange(&g_dump_nonces[slot], 0);
        }
    }
    return 0;
}
