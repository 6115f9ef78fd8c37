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
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/dns.h>
#include <event2/util.h>

/* The request line's HTTP version. evhttp keeps it only in its request struct, whose layout
   <event2/http_struct.h> publishes (libevent 2.1's ABI). Including that header would make the
   struct complete for Swift (every `evhttp_request *` would stop being an OpaquePointer), so its
   leading fields are mirrored here, up to `major` and `minor`. A mismatch shows in the tests:
   an HTTP/1.0 request behind a PROXY-protocol balancer must be closed after its answer. */
struct CLibevent_request_head {
    struct { void *next; void **prev; } next;
    void *evcon;
    int flags;
    void *input_headers;
    void *output_headers;
    char *remote_host;
    ev_uint16_t remote_port;
    char *host_cache;
    enum evhttp_request_kind kind;
    enum evhttp_cmd_type type;
    size_t headers_size;
    size_t body_size;
    char *uri;
    void *uri_elems;
    char major;
    char minor;
};
static inline int CLibevent_request_is_http10(struct evhttp_request *req) {
    const struct CLibevent_request_head *head = (const struct CLibevent_request_head *)(void *)req;
    return head->major == 1 && head->minor == 0;
}

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
#endif
