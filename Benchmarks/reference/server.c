/*
 * Cloak benchmark "reference ceiling": a minimal libevent evhttp server.
 *
 * Usage: ./reference-server PORT [THREADS]
 *
 * Each thread owns an event_base and an evhttp bound to 127.0.0.1:PORT
 * through its own SO_REUSEPORT listener; the kernel spreads connections.
 * Every request (any method, any path) gets 200 {"status":"ok"}.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/util.h>

#define MAX_THREADS 64

static const char reply_body[] = "{\"status\":\"ok\"}";

struct worker {
    int index;
    unsigned short port;
    struct event_base *base;
    struct evhttp *http;
    pthread_t thread;
};

static struct worker workers[MAX_THREADS];
static int nworkers = 1;

static void handle_request(struct evhttp_request *req, void *arg)
{
    (void)arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t pending = evbuffer_get_length(in);
    if (pending > 0)
        evbuffer_drain(in, pending); /* body is ignored */

    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Type", "application/json");
    evbuffer_add(evhttp_request_get_output_buffer(req),
                 reply_body, sizeof(reply_body) - 1);
    evhttp_send_reply(req, HTTP_OK, "OK", NULL);
}

static int setup_worker(struct worker *w)
{
    struct sockaddr_in sin;
    struct evconnlistener *listener;
    evutil_socket_t fd;
    int one = 1;

    w->base = event_base_new();
    if (!w->base) {
        fprintf(stderr, "thread %d: event_base_new failed\n", w->index);
        return -1;
    }
    w->http = evhttp_new(w->base);
    if (!w->http) {
        fprintf(stderr, "thread %d: evhttp_new failed\n", w->index);
        return -1;
    }

    evhttp_set_allowed_methods(w->http,
        EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
        EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_max_body_size(w->http, 1024 * 1024);
    evhttp_set_max_headers_size(w->http, 16 * 1024);
    evhttp_set_timeout(w->http, 30);
    evhttp_set_gencb(w->http, handle_request, w);

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(w->port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    listener = evconnlistener_new_bind(w->base, NULL, NULL,
        LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT |
        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
        1024, (struct sockaddr *)&sin, sizeof(sin));
    if (!listener) {
        fprintf(stderr, "thread %d: cannot listen on 127.0.0.1:%u: %s\n",
                w->index, (unsigned)w->port, strerror(errno));
        return -1;
    }

    /* Accepted sockets inherit TCP_NODELAY from the listener on Linux. */
    fd = evconnlistener_get_fd(listener);
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        fprintf(stderr, "thread %d: TCP_NODELAY: %s\n", w->index, strerror(errno));

    if (!evhttp_bind_listener(w->http, listener)) {
        fprintf(stderr, "thread %d: evhttp_bind_listener failed\n", w->index);
        evconnlistener_free(listener);
        return -1;
    }
    return 0;
}

static void *run_worker(void *arg)
{
    struct worker *w = arg;
    event_base_dispatch(w->base);
    return NULL;
}

static void on_signal(evutil_socket_t sig, short events, void *arg)
{
    int i;
    (void)sig;
    (void)events;
    (void)arg;
    /* Safe across threads because evthread_use_pthreads() ran first. */
    for (i = 0; i < nworkers; i++)
        event_base_loopbreak(workers[i].base);
}

int main(int argc, char **argv)
{
    struct event *sigint_ev, *sigterm_ev;
    char *end;
    long port, threads = 1;
    int i;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s PORT [THREADS]\n", argv[0]);
        return 2;
    }
    port = strtol(argv[1], &end, 10);
    if (*end != '\0' || port < 1 || port > 65535) {
        fprintf(stderr, "invalid port: %s\n", argv[1]);
        return 2;
    }
    if (argc == 3) {
        threads = strtol(argv[2], &end, 10);
        if (*end != '\0' || threads < 1 || threads > MAX_THREADS) {
            fprintf(stderr, "invalid thread count: %s (1..%d)\n", argv[2], MAX_THREADS);
            return 2;
        }
    }
    nworkers = (int)threads;

    signal(SIGPIPE, SIG_IGN);
    /* Only needed so the signal handler can break the other threads' loops. */
    if (evthread_use_pthreads() != 0) {
        fprintf(stderr, "evthread_use_pthreads failed\n");
        return 1;
    }

    for (i = 0; i < nworkers; i++) {
        workers[i].index = i;
        workers[i].port = (unsigned short)port;
        if (setup_worker(&workers[i]) != 0)
            return 1;
    }

    sigint_ev = evsignal_new(workers[0].base, SIGINT, on_signal, NULL);
    sigterm_ev = evsignal_new(workers[0].base, SIGTERM, on_signal, NULL);
    if (!sigint_ev || !sigterm_ev ||
        evsignal_add(sigint_ev, NULL) != 0 || evsignal_add(sigterm_ev, NULL) != 0) {
        fprintf(stderr, "cannot install signal handlers\n");
        return 1;
    }

    fprintf(stderr, "reference-server listening on 127.0.0.1:%ld with %d thread(s)\n",
            port, nworkers);

    for (i = 1; i < nworkers; i++) {
        if (pthread_create(&workers[i].thread, NULL, run_worker, &workers[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    }
    run_worker(&workers[0]);
    for (i = 1; i < nworkers; i++)
        pthread_join(workers[i].thread, NULL);

    event_free(sigint_ev);
    event_free(sigterm_ev);
    for (i = 0; i < nworkers; i++) {
        evhttp_free(workers[i].http);
        event_base_free(workers[i].base);
    }
    return 0;
}
