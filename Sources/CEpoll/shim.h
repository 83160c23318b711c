// epoll and eventfd (header only): the event-loop source sleeps on a loop's own epoll instance.
#include <sys/epoll.h>
#include <sys/eventfd.h>
