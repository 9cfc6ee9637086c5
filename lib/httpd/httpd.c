/* SPDX-License-Identifier: Apache-2.0 */
#include "httpd/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "httpd/mhd-loader.h"
#include "util/log.h"

#define LISTEN_BACKLOG 16

enum request_state {
        REQUEST_NEW,
        REQUEST_WAITING,  /* handler called, answer to come: connection suspended */
        REQUEST_ANSWERED, /* answer stored, to be queued on MHD's next call */
        REQUEST_QUEUED,
};

struct httpd_request {
        struct httpd *server;
        struct MHD_Connection *connection;
        enum request_state state;
        bool in_handler;
        unsigned status;
        char content_type[96];
        char *body;
        size_t len;
        void (*abort)(void *data);
        void *abort_data;
        struct httpd_request *prev, *next; /* the server's waiting list */
};

/* One client connection, for the whole-request deadline: MHD's own timeout counts
 * inactivity only, so a client sending a header byte every few seconds (slowloris) would
 * hold its slot for hours. */
struct httpd_conn {
        struct MHD_Connection *connection;
        uint64_t since;               /* CLOCK_MONOTONIC: accepted, or its last request answered */
        struct sockaddr_storage peer; /* for the per-address limit */
        struct httpd_conn *prev, *next;
};

struct httpd {
        sd_event *event;
        struct MHD_Daemon *daemon;
        sd_event_source *io, *timer;
        sd_event_source *listen; /* our own accept: see on_listen() */
        sd_event_source *retry;  /* on_listen() after EMFILE */
        int listen_fd;
        unsigned max_conns, max_per_peer;
        unsigned n_conns;          /* open connections, as MHD notified them */
        sd_event_source *deadline; /* armed while a connection is open */
        uint64_t request_usec;     /* whole-request deadline */
        struct httpd_conn *conns;  /* oldest `since` last: new and reset ones go first */
        char path[256];
        httpd_handler_fn handler;
        void *userdata;
        int port;
        struct httpd_request *waiting; /* suspended connections, for httpd_free() */
};

int httpd_parse_listen(const char *address, char *host, size_t host_size, unsigned *port)
{
        const char *colon;
        size_t host_len;
        if (!address)
                return -EINVAL;
        if (address[0] == '[') {
                const char *end = strchr(address, ']');
                if (!end || end[1] != ':')
                        return -EINVAL;
                host_len = (size_t)(end - address - 1);
                address++;
                colon = end + 1;
        } else {
                colon = strrchr(address, ':');
                if (!colon || memchr(address, ':', (size_t)(colon - address)))
                        return -EINVAL; /* a bare IPv6 address needs brackets */
                host_len = (size_t)(colon - address);
        }
        if (host_len >= host_size)
                return -EINVAL;
        memcpy(host, address, host_len);
        host[host_len] = 0;
        char *end;
        errno = 0;
        unsigned long p = strtoul(colon + 1, &end, 10);
        if (errno || end == colon + 1 || *end || p > 65535 || colon[1] == '-' || colon[1] == '+')
                return -EINVAL;
        *port = (unsigned)p;
        return 0;
}

static int open_listener(const char *address, int *ret_fd, int *ret_port)
{
        char host[64];
        unsigned port;
        union {
                struct sockaddr sa;
                struct sockaddr_in in;
                struct sockaddr_in6 in6;
                struct sockaddr_storage ss;
        } addr = { 0 };
        socklen_t len;

        if (httpd_parse_listen(address, host, sizeof(host), &port) < 0)
                return log_error_errno(-EINVAL,
                                       "metrics listen address \"%s\": expected HOST:PORT, "
                                       "[IPV6]:PORT or :PORT",
                                       address);
        if (!*host) {
                addr.in6 = (struct sockaddr_in6){ .sin6_family = AF_INET6,
                                                  .sin6_addr = in6addr_any,
                                                  .sin6_port = htons((uint16_t)port) };
                len = sizeof(addr.in6);
        } else if (inet_pton(AF_INET, host, &addr.in.sin_addr) == 1) {
                addr.in.sin_family = AF_INET;
                addr.in.sin_port = htons((uint16_t)port);
                len = sizeof(addr.in);
        } else if (inet_pton(AF_INET6, host, &addr.in6.sin6_addr) == 1) {
                addr.in6.sin6_family = AF_INET6;
                addr.in6.sin6_port = htons((uint16_t)port);
                len = sizeof(addr.in6);
        } else
                return log_error_errno(-EINVAL,
                                       "metrics listen address \"%s\": \"%s\" is not an IPv4 or "
                                       "IPv6 address",
                                       address, host);

        _cleanup_close_ int fd =
            socket(addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0 && !*host && errno == EAFNOSUPPORT) { /* no IPv6 on this node */
                addr.in = (struct sockaddr_in){ .sin_family = AF_INET,
                                                .sin_addr.s_addr = htonl(INADDR_ANY),
                                                .sin_port = htons((uint16_t)port) };
                len = sizeof(addr.in);
                fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        }
        if (fd < 0)
                return log_error_errno(-errno, "metrics listen address %s: cannot create a socket",
                                       address);
        const int one = 1, zero = 0;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (addr.sa.sa_family == AF_INET6 && !*host)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        if (bind(fd, &addr.sa, len) < 0)
                return log_error_errno(-errno, "metrics listen address %s: cannot bind", address);
        if (listen(fd, LISTEN_BACKLOG) < 0)
                return log_error_errno(-errno, "metrics listen address %s: cannot listen", address);
        if (getsockname(fd, &addr.sa, &len) < 0)
                return -errno;
        *ret_port = ntohs(addr.sa.sa_family == AF_INET ? addr.in.sin_port : addr.in6.sin6_port);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static void waiting_remove(struct httpd_request *req)
{
        if (req->prev)
                req->prev->next = req->next;
        else if (req->server->waiting == req)
                req->server->waiting = req->next;
        if (req->next)
                req->next->prev = req->prev;
        req->prev = req->next = NULL;
}

static void rearm(struct httpd *h);
static void run(struct httpd *h);

static enum MHD_Result queue_text(struct MHD_Connection *c, unsigned status, const char *text,
                                  const char *allow)
{
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
        if (allow)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
        enum MHD_Result r = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return r;
}

static enum MHD_Result queue_answer(struct httpd_request *req)
{
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(req->len, req->body, MHD_RESPMEM_MUST_FREE);
        if (!resp)
                return MHD_NO;
        req->body = NULL; /* the response owns it now */
        if (req->content_type[0])
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, req->content_type);
        req->state = REQUEST_QUEUED;
        enum MHD_Result r = MHD_queue_response(req->connection, req->status, resp);
        MHD_destroy_response(resp);
        return r;
}

const char *httpd_request_header(const struct httpd_request *req, const char *name)
{
        return MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, name);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
        struct httpd *h = cls;
        struct httpd_request *req = *con_cls;

        if (req) {
                if (*upload_data_size) { /* a body nobody asked for: drop it */
                        *upload_data_size = 0;
                        return MHD_YES;
                }
                return req->state == REQUEST_ANSWERED ? queue_answer(req) : MHD_YES;
        }
        if (strcmp(url, h->path) != 0)
                return queue_text(connection, MHD_HTTP_NOT_FOUND,
                                  "404 not found: this endpoint serves only GET /metrics\n", NULL);
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
                return queue_text(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
                                  "405 method not allowed: only GET\n", MHD_HTTP_METHOD_GET);

        req = calloc(1, sizeof(*req));
        if (!req)
                return MHD_NO;
        *req = (struct httpd_request){ .server = h, .connection = connection };
        *con_cls = req;
        req->in_handler = true;
        h->handler(req, h->userdata);
        req->in_handler = false;
        if (req->state == REQUEST_ANSWERED)
                return queue_answer(req);
        req->state = REQUEST_WAITING;
        req->next = h->waiting;
        if (h->waiting)
                h->waiting->prev = req;
        h->waiting = req;
        MHD_suspend_connection(connection);
        return MHD_YES;
}

static uint64_t now_usec(struct httpd *h)
{
        uint64_t now = 0;
        (void)sd_event_now(h->event, CLOCK_MONOTONIC, &now);
        return now;
}

static void conn_unlink(struct httpd *h, struct httpd_conn *c)
{
        if (c->prev)
                c->prev->next = c->next;
        else
                h->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->prev = c->next = NULL;
}

static void conn_push(struct httpd *h, struct httpd_conn *c)
{
        c->since = now_usec(h);
        c->next = h->conns;
        if (h->conns)
                h->conns->prev = c;
        h->conns = c;
}

static struct httpd_conn *conn_oldest(const struct httpd *h)
{
        struct httpd_conn *c = h->conns;
        while (c && c->next)
                c = c->next;
        return c;
}

static void arm_deadline(struct httpd *h)
{
        const struct httpd_conn *oldest = conn_oldest(h);
        if (!oldest) {
                sd_event_source_set_enabled(h->deadline, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_time(h->deadline, oldest->since + h->request_usec);
        sd_event_source_set_enabled(h->deadline, SD_EVENT_ONESHOT);
}

/* Connections past the deadline are shut down (not closed: MHD still owns the fd and
 * closes it when it sees the end). */
static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct httpd *h = userdata;
        uint64_t now = now_usec(h);
        for (struct httpd_conn *c = h->conns; c; c = c->next) {
                if (now < c->since + h->request_usec)
                        continue;
                const union MHD_ConnectionInfo *info =
                    MHD_get_connection_info(c->connection, MHD_CONNECTION_INFO_CONNECTION_FD);
                if (info) {
                        log_debug("metrics endpoint: closing a connection that did not finish "
                                  "its request in %llu s",
                                  (unsigned long long)(h->request_usec / 1000000ULL));
                        shutdown(info->connect_fd, SHUT_RDWR);
                }
                c->since = now; /* once; MHD closes it on its next run */
        }
        run(h);
        arm_deadline(h);
        return 0;
}

static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
        struct httpd *h = cls;
        struct httpd_conn *c = *socket_context;
        if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
                h->n_conns++;
                c = calloc(1, sizeof(*c));
                if (!c)
                        return; /* no deadline for this one; MHD's timeout still holds */
                c->connection = connection;
                const union MHD_ConnectionInfo *info =
                    MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
                if (info && info->client_addr)
                        memcpy(&c->peer, info->client_addr,
                               info->client_addr->sa_family == AF_INET6
                                   ? sizeof(struct sockaddr_in6)
                                   : sizeof(struct sockaddr_in));
                conn_push(h, c);
                *socket_context = c;
        } else {
                if (h->n_conns > 0)
                        h->n_conns--;
                if (c) {
                        conn_unlink(h, c);
                        free(c);
                        *socket_context = NULL;
                }
                /* a slot is free: take the next client from the listen queue now, whatever
                 * else happens (or not) on the loop */
                if (h->listen && h->n_conns < h->max_conns)
                        sd_event_source_set_enabled(h->listen, SD_EVENT_ON);
        }
        arm_deadline(h);
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
        if (a->ss_family != b->ss_family)
                return false;
        if (a->ss_family == AF_INET)
                return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
                       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
        if (a->ss_family == AF_INET6)
                return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                              &((const struct sockaddr_in6 *)b)->sin6_addr,
                              sizeof(struct in6_addr)) == 0;
        return false;
}

static unsigned conns_of(const struct httpd *h, const struct sockaddr_storage *peer)
{
        unsigned n = 0;
        for (const struct httpd_conn *c = h->conns; c; c = c->next)
                n += same_host(&c->peer, peer);
        return n;
}

/* A client over its address's share gets a short 503 and is closed; it holds nothing. What it
 * already sent is read first so that closing does not reset the connection before it reads the
 * answer (best effort: bytes arriving later still make the kernel send a reset). */
static void refuse(int fd)
{
        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                   "Content-Type: text/plain; charset=utf-8\r\n"
                                   "Retry-After: 1\r\n"
                                   "Connection: close\r\n"
                                   "Content-Length: 51\r\n\r\n"
                                   "503 too many connections from this client address\n";
        char drain[4096];
        for (int i = 0; i < 4 && recv(fd, drain, sizeof(drain), MSG_DONTWAIT) > 0; i++)
                ;
        (void)send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)shutdown(fd, SHUT_WR);
        close(fd);
}

/* The listen socket is ours, not libmicrohttpd's: MHD in the external epoll mode takes its own
 * listen socket out of its epoll set at the connection limit and puts it back only on a later
 * MHD_run(), which nothing triggers once the last connection is gone (the endpoint then never
 * accepted again). Here the decision is explicit: at the limit the source is off and clients
 * wait in the listen queue; the moment a connection closes (on_connection()) it is on again. */
static int on_listen(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct httpd *h = userdata;
        bool added = false;
        /* a few per wake-up, so a connection flood cannot starve the rest of the loop */
        for (int i = 0; i < 32; i++) {
                if (h->n_conns >= h->max_conns) {
                        sd_event_source_set_enabled(h->listen, SD_EVENT_OFF);
                        break;
                }
                struct sockaddr_storage peer = { 0 };
                socklen_t len = sizeof(peer);
                int cfd = accept4(fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                            errno == ENOMEM) {
                                /* out of descriptors: retry once something was closed, not in
                                 * a busy loop */
                                log_ctx_msg(LOG_DEBUG, -errno, NULL,
                                            "metrics endpoint: cannot accept a connection");
                                sd_event_source_set_enabled(h->listen, SD_EVENT_OFF);
                                sd_event_source_set_time_relative(h->retry, 100 * 1000ULL);
                                sd_event_source_set_enabled(h->retry, SD_EVENT_ONESHOT);
                        }
                        break; /* EAGAIN, or a connection that went away (ECONNABORTED) */
                }
                if (conns_of(h, &peer) >= h->max_per_peer) {
                        refuse(cfd);
                        continue;
                }
                /* MHD closes the socket itself when it cannot take it */
                if (MHD_add_connection(h->daemon, cfd, (struct sockaddr *)&peer, len) != MHD_YES)
                        log_ctx_msg(LOG_DEBUG, -errno, NULL,
                                    "metrics endpoint: could not add a connection");
                added = true;
        }
        if (added)
                run(h);
        return 0;
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct httpd *h = cls;
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        if (info && info->socket_context) { /* a kept-alive connection starts afresh */
                conn_unlink(h, info->socket_context);
                conn_push(h, info->socket_context);
                arm_deadline(h);
        }
        struct httpd_request *req = *con_cls;
        if (!req)
                return;
        waiting_remove(req);
        free(req->body);
        free(req);
        *con_cls = NULL;
}

void httpd_respond(struct httpd_request *req, unsigned status, const char *content_type, char *body,
                   size_t len)
{
        if (req->state == REQUEST_ANSWERED || req->state == REQUEST_QUEUED) {
                free(body);
                return;
        }
        req->status = status;
        snprintf(req->content_type, sizeof(req->content_type), "%s",
                 content_type ? content_type : "");
        req->body = body;
        req->len = body ? len : 0;
        bool was_waiting = req->state == REQUEST_WAITING;
        req->state = REQUEST_ANSWERED;
        req->abort = NULL;
        if (!was_waiting)
                return; /* from the handler: on_request() queues it */
        waiting_remove(req);
        MHD_resume_connection(req->connection);
        /* MHD picks resumed connections up on its next run, and its epoll fd does not say so
         * in the external mode: run it from the loop right away. */
        sd_event_source_set_time_relative(req->server->timer, 0);
        sd_event_source_set_enabled(req->server->timer, SD_EVENT_ONESHOT);
}

void httpd_request_on_abort(struct httpd_request *req, void (*abort)(void *data), void *data)
{
        req->abort = abort;
        req->abort_data = data;
}

static void run(struct httpd *h)
{
        if (MHD_run(h->daemon) != MHD_YES)
                log_debug("metrics endpoint: MHD_run failed");
        rearm(h);
}

/* MHD's own deadline (a connection's timeout, work pending after a resume); none while no
 * client is connected, so an endpoint nobody scrapes never wakes the loop. */
static void rearm(struct httpd *h)
{
        MHD_UNSIGNED_LONG_LONG ms;
        if (MHD_get_timeout(h->daemon, &ms) != MHD_YES) {
                sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_time_relative(h->timer, (uint64_t)ms * 1000ULL);
        sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        run(userdata);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        run(userdata);
        return 0;
}

/* After a descriptor shortage in on_listen(): try again, a little later. */
static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct httpd *h = userdata;
        if (h->n_conns < h->max_conns)
                sd_event_source_set_enabled(h->listen, SD_EVENT_ON);
        return 0;
}

/* libmicrohttpd's own messages (a refused connection, a request too large), at debug level:
 * a hostile client must not flood the journal. */
__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
        char buf[512];
        vsnprintf(buf, sizeof(buf), fmt, ap);
        size_t n = strlen(buf);
        if (n && buf[n - 1] == '\n')
                buf[n - 1] = 0;
        log_debug("metrics endpoint: %s", buf);
}

int httpd_new(sd_event *event, const struct httpd_options *opts, struct httpd **ret)
{
        if (!opts->handler || !opts->path ||
            strlen(opts->path) >= sizeof(((struct httpd *)0)->path))
                return -EINVAL;
        _cleanup_(httpd_freep) struct httpd *h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->event = sd_event_ref(event);
        h->handler = opts->handler;
        h->userdata = opts->userdata;
        h->request_usec = (uint64_t)(opts->timeout_s ? opts->timeout_s : 10) * 1000000ULL;
        snprintf(h->path, sizeof(h->path), "%s", opts->path);

        h->listen_fd = -1;
        int r = open_listener(opts->listen, &h->listen_fd, &h->port);
        if (r < 0)
                return r;
        unsigned max = opts->max_connections ? opts->max_connections : HTTPD_MAX_CONNECTIONS;
        h->max_conns = max;
        h->max_per_peer = max > 1 ? max / 2 : 1;
        size_t memory = opts->max_request_bytes ? opts->max_request_bytes : HTTPD_MAX_REQUEST_BYTES;
        /* MHD keeps a connection's request and the response headers in one pool: the response
         * body is our buffer, outside it. MHD gets no listen socket: on_listen() accepts and
         * hands connections over; its own limits stay as a backstop. */
        h->daemon = MHD_start_daemon(
            MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET,
            0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
            MHD_OPTION_CONNECTION_LIMIT, max, MHD_OPTION_PER_IP_CONNECTION_LIMIT, h->max_per_peer,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory, MHD_OPTION_CONNECTION_TIMEOUT,
            opts->timeout_s ? opts->timeout_s : 10, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
        if (!h->daemon)
                return log_error_errno(-EIO, "metrics endpoint %s: libmicrohttpd did not start%s%s",
                                       opts->listen, mhd_loader_error() ? ": " : "",
                                       mhd_loader_error() ?: "");
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info)
                return log_error_errno(-EIO, "metrics endpoint %s: no epoll fd from libmicrohttpd",
                                       opts->listen);
        r = sd_event_add_io(event, &h->io, info->epoll_fd, EPOLLIN, on_io, h);
        if (r < 0)
                return log_error_errno(r, "metrics endpoint %s: cannot watch its epoll fd",
                                       opts->listen);
        r = sd_event_add_time_relative(event, &h->timer, CLOCK_MONOTONIC, 0, 1000, on_timer, h);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(event, &h->deadline, CLOCK_MONOTONIC, 0, 100 * 1000,
                                       on_deadline, h);
        if (r < 0)
                return r;
        sd_event_source_set_enabled(h->deadline, SD_EVENT_OFF);
        r = sd_event_add_time_relative(event, &h->retry, CLOCK_MONOTONIC, 0, 10 * 1000, on_retry,
                                       h);
        if (r < 0)
                return r;
        sd_event_source_set_enabled(h->retry, SD_EVENT_OFF);
        r = sd_event_add_io(event, &h->listen, h->listen_fd, EPOLLIN, on_listen, h);
        if (r < 0)
                return log_error_errno(r, "metrics endpoint %s: cannot watch its listen socket",
                                       opts->listen);
        rearm(h);
        log_info("metrics endpoint listening on %s (port %d), GET %s", opts->listen, h->port,
                 h->path);
        *ret = TAKE_PTR(h);
        return 0;
}

int httpd_port(const struct httpd *h)
{
        return h->port;
}

struct httpd *httpd_free(struct httpd *h)
{
        if (!h)
                return NULL;
        /* MHD refuses to stop with suspended connections: answer them first. */
        while (h->waiting) {
                struct httpd_request *req = h->waiting;
                if (req->abort)
                        req->abort(req->abort_data);
                req->abort = NULL;
                static const char gone[] = "503 the agent is stopping\n";
                char *body = strdup(gone);
                httpd_respond(req, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body,
                              body ? strlen(body) : 0);
        }
        if (h->daemon) {
                (void)MHD_run(h->daemon); /* lets the resumed connections finish */
                MHD_stop_daemon(h->daemon);
        }
        sd_event_source_disable_unref(h->listen);
        sd_event_source_disable_unref(h->retry);
        if (h->listen_fd >= 0)
                close(h->listen_fd);
        sd_event_source_disable_unref(h->io);
        sd_event_source_disable_unref(h->timer);
        sd_event_source_disable_unref(h->deadline);
        sd_event_unref(h->event);
        free(h);
        return NULL;
}
