#ifndef CLIBEVENT_SHIM_H
#define CLIBEVENT_SHIM_H
/* Debian's event2/event-config.h defines _GNU_SOURCE. If that happens before glibc's <features.h>
   is first seen, glibc structs such as fd_set are declared differently inside this module than in
   Glibc or COpenSSL, and Swift refuses to import both. Including a glibc header first fixes the
   feature set before libevent's define. */
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <malloc.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/dns.h>
#include <event2/util.h>

/* evsignal_new / evtimer_new are function-like macros that Swift cannot import. */
static inline struct event *CLibevent_timer_new(struct event_base *base, event_callback_fn cb, void *arg) {
    return event_new(base, -1, 0, cb, arg);
}
static inline struct event *CLibevent_persistent_timer_new(struct event_base *base, event_callback_fn cb, void *arg) {
    return event_new(base, -1, EV_PERSIST, cb, arg);
}
/* Names the calling thread (at most 15 bytes are kept): loop threads show as cloak-main-0,
   cloak-egress-1 in top -H and /proc/PID/task/TID/comm. prctl is variadic, which Swift cannot call. */
static inline int CLibevent_name_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}
/* Asks the scheduler for a short time slice for the calling thread: sched_setattr's
   sched_runtime for SCHED_OTHER (Linux 6.12 and later, EEVDF). A thread that wakes with a shorter
   slice than the running one's takes the core at once rather than after the running thread's
   slice (1.4 ms on two cores); the thread's share of the CPU is unchanged. Needs no privilege. The
   thread's policy and nice value are kept (read first). An older kernel ignores the field: 0 is
   returned either way, -1 only when the call itself fails. glibc 2.36 has no wrapper. */
struct CLibevent_sched_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
};
static inline int CLibevent_request_slice(uint64_t nanoseconds) {
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
    struct CLibevent_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return -1;
    if (attr.sched_policy != 0) return 0; /* not SCHED_OTHER: nothing to ask */
    attr.size = sizeof attr;
    attr.sched_flags = 0;
    attr.sched_runtime = nanoseconds;
    attr.sched_deadline = 0;
    attr.sched_period = 0;
    return syscall(SYS_sched_setattr, 0, &attr, 0) == 0 ? 0 : -1;
#else
    (void)nanoseconds;
    return 0;
#endif
}
/* Gives the heap's free memory back to the system (after a large, short-lived build such as a
   BIN table's): glibc keeps freed small blocks otherwise, and the process's RSS stays at its peak. */
static inline int CLibevent_release_free_memory(void) {
    return malloc_trim(0);
}
/* Asks the kernel to stamp every segment a socket receives with the time it arrived
   (SO_TIMESTAMPNS, CLOCK_REALTIME), read back with CLibevent_first_arrival. */
static inline int CLibevent_stamp_arrivals(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}
/* When the first byte waiting in a stamped socket arrived: peeks it (nothing is consumed) with
   its SCM_TIMESTAMPNS. 1 with the time, 0 when nothing waits or no stamp came, -1 on an error.
   The cmsg macros are not importable into Swift. */
static inline int CLibevent_first_arrival(int fd, long long *seconds, long *nanoseconds) {
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        char buffer[CMSG_SPACE(2 * sizeof(long))]; /* a struct timespec, not named here: the
                                                     type belongs to Glibc's module */
        struct cmsghdr align;
    } control;
    struct msghdr message;
    __builtin_memset(&message, 0, sizeof message);
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof control.buffer;
    ssize_t n = recvmsg(fd, &message, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0) return -1;
    if (n == 0) return 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c != NULL; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            long t[2]; /* tv_sec, tv_nsec */
            __builtin_memcpy(t, CMSG_DATA(c), sizeof t);
            *seconds = t[0];
            *nanoseconds = t[1];
            return 1;
        }
    }
    return 0;
}
#endif
