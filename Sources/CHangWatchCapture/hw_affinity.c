/*
 * hw_affinity.c: forwarders for the CPU-affinity calls glibc declares only with _GNU_SOURCE (the
 * dump measures each CPU's scheduler clock on that CPU). Not signal-handler code.
 */
#include <sched.h>
#include <string.h>

#include "CHangWatchCapture.h"

int hw_get_affinity(unsigned char *mask, size_t size) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
    memcpy(mask, &set, size < sizeof(set) ? size : sizeof(set));
    return 0;
}

int hw_set_affinity(const unsigned char *mask, size_t size) {
    cpu_set_t set;
    CPU_ZERO(&set);
    memcpy(&set, mask, size < sizeof(set) ? size : sizeof(set));
    return sched_setaffinity(0, sizeof(set), &set);
}
