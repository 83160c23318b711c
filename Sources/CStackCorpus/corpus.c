#include "CStackCorpus.h"

#include <sys/epoll.h>

volatile int corpus_kept;

void corpus_keep(int id) {
    corpus_kept = id;
}

const void *volatile corpus_used;

void corpus_use(const void *buffer) {
    corpus_used = buffer;
}

/* Two C frames between Swift callers and a Swift callee, compiled without frame pointers (as most
 * C libraries are): the blocked-thread unwinder must step them by their unwind tables alone. */
__attribute__((noinline)) static void corpus_c_inner(void (*body)(void *), void *context) {
    body(context);
    corpus_keep(1001); /* not a tail call */
}

__attribute__((noinline)) void corpus_c_caller(void (*body)(void *), void *context) {
    corpus_c_inner(body, context);
    corpus_keep(1002);
}

int corpus_epoll_watching(int fd) {
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};
    if (epoll < 0 || epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0) {
        return -1;
    }
    return epoll;
}

int corpus_epoll_wait_one(int epoll) {
    struct epoll_event event;
    return epoll_wait(epoll, &event, 1, -1);
}
