/*
 * CStackCorpus: C frames for the stack corpus (hangwatch-stackcorpus). A blocked stack must come
 * out right through C callers too, built the way C libraries are (optimised, no frame pointer).
 */
#ifndef CSTACKCORPUS_H
#define CSTACKCORPUS_H

/* Calls `body(context)` from C, through two C frames that keep no frame pointer. */
void corpus_c_caller(void (*body)(void *), void *context);

/* Opaque to the Swift optimizer: a call to it after a call keeps that call from being a tail
 * call, and distinct `id`s keep otherwise identical functions from being merged. */
void corpus_keep(int id);

/* Opaque to the Swift optimizer: a stack buffer whose address escapes here stays on the stack. */
void corpus_use(const void *buffer);

/* An epoll instance watching `fd` for input; -1 on failure. */
int corpus_epoll_watching(int fd);

/* One epoll_wait for one event without a timeout: what a blocked event loop is in. */
int corpus_epoll_wait_one(int epoll);

#endif
