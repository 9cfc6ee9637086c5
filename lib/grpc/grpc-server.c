/* SPDX-License-Identifier: Apache-2.0 */
#include "grpc/grpc-server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "grpc/grpc-conn.h"
#include "grpc/grpc-frame.h"
#include "util/log.h"
#include "util/macro.h"

#define MAX_CONNECTIONS           64
#define MAX_STREAMS_PER_CONN      100
#define MAX_PATH_HEADER           256
#define MAX_QUEUED_OUTPUT         (16u * 1024u * 1024u)
#define ACCEPT_RETRY_USEC         (100 * 1000ULL)
#define REFUSED_LOG_INTERVAL_USEC (10 * 1000 * 1000ULL)
/* Memory budgets (100 streams x ~4 MiB from one peer once took RSS to 413 MiB). A
 * stream holds at most one request message (GRPC_MESSAGE_MAX_DEFAULT); the streams of one
 * connection together, and all connections together, hold at most these. A stream that would
 * go over is failed with RESOURCE_EXHAUSTED; the others go on. */
#define CONN_RECV_BUDGET   (8u * 1024u * 1024u)
#define SERVER_RECV_BUDGET (24u * 1024u * 1024u)
#define CONN_SEND_BUDGET   (16u * 1024u * 1024u)

struct server_conn;

struct grpc_call {
        struct server_conn *sc;
        int32_t stream_id;
        char path[MAX_PATH_HEADER];
        bool content_type_ok;
        bool dispatched;      /* request handled; further request data is ignored */
        bool responded;       /* response headers submitted */
        bool finishing;       /* trailers go out once the queue is empty */
        bool deferred;        /* data provider returned DEFERRED */
        bool rejected;        /* malformed request: RST_STREAM PROTOCOL_ERROR submitted */
        bool regular_seen;    /* a regular header field came: no pseudo header may follow */
        unsigned pseudo_seen; /* PSEUDO_* bits */
        bool path_regular;    /* :path starts with '/' */
        bool method_options;
        bool path_asterisk;
        int64_t content_length; /* -1: none given */
        int64_t received;       /* DATA payload bytes */
        int final_code;
        char *final_message;
        struct grpc_frame_reader reader;
        size_t recv_accounted; /* reader.allocated as counted in the budgets */
        uint8_t *out;
        size_t out_size, out_off;
        size_t send_accounted; /* out_size as counted in the connection's budget */
        grpc_call_closed_handler closed;
        void *closed_userdata;
        struct grpc_call *prev, *next;
};

struct server_conn {
        struct grpc_conn conn;
        struct grpc_server *server;
        struct grpc_call *calls;
        size_t recv_held, send_held; /* bytes buffered by its streams */
        struct server_conn *prev, *next;
};

struct grpc_server {
        sd_event *event;
        int listen_fd;
        sd_event_source *accept_source;
        sd_event_source *accept_retry; /* accepting paused while out of descriptors */
        bool accept_failing;           /* ... and said so once */
        uint64_t refused_logged_usec;  /* refusals at the limit: one line per interval */
        unsigned refused_unlogged;
        char *socket_path;
        dev_t socket_dev;
        ino_t socket_ino;
        const struct grpc_method *methods;
        size_t n_methods;
        void *userdata;
        struct server_conn *conns;
        size_t n_conns;
        size_t recv_held; /* request bytes buffered by every stream */
        /* A graceful stop (grpc_server_drain): done runs once every connection closed or the
         * grace passed, from a deferred event (never from inside a connection's callback). */
        grpc_server_drained_fn drained;
        void *drained_userdata;
        sd_event_source *drain_timer, *drain_defer;
};

/* Brings the budgets up to date with what the call holds now. */
static void call_account(struct grpc_call *call)
{
        struct server_conn *sc = call->sc;
        size_t recv = call->reader.allocated, send = call->out_size;
        sc->recv_held = sc->recv_held - call->recv_accounted + recv;
        sc->server->recv_held = sc->server->recv_held - call->recv_accounted + recv;
        sc->send_held = sc->send_held - call->send_accounted + send;
        call->recv_accounted = recv;
        call->send_accounted = send;
}

/* Drops what the call buffered of its request (it is answered or failed). */
static void call_release_request(struct grpc_call *call)
{
        grpc_frame_reader_done(&call->reader);
        call_account(call);
}

static void call_free(struct grpc_call *call)
{
        struct server_conn *sc = call->sc;
        if (call->prev)
                call->prev->next = call->next;
        else
                sc->calls = call->next;
        if (call->next)
                call->next->prev = call->prev;
        grpc_frame_reader_done(&call->reader);
        free(call->out);
        call->out = NULL;
        call->out_size = call->out_off = 0;
        call_account(call);
        free(call->final_message);
        free(call);
}

/* The stream is gone: tell the owner, then forget it. */
static void call_closed(struct grpc_call *call)
{
        if (call->closed) {
                grpc_call_closed_handler fn = call->closed;
                call->closed = NULL;
                fn(call, call->closed_userdata);
        }
        call_free(call);
}

static void server_conn_free(struct server_conn *sc)
{
        struct grpc_server *s = sc->server;
        grpc_conn_done(&sc->conn); /* nghttp2_session_del reports no stream closes: do it here */
        while (sc->calls)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): the list head has no prev */
                call_closed(sc->calls);
        if (sc->prev)
                sc->prev->next = sc->next;
        else
                s->conns = sc->next;
        if (sc->next)
                sc->next->prev = sc->prev;
        s->n_conns--;
        free(sc);
        if (s->n_conns == 0 && s->drain_defer)
                (void)sd_event_source_set_enabled(s->drain_defer, SD_EVENT_ONESHOT);
}

static void on_conn_dead(struct grpc_conn *conn, void *userdata)
{
        server_conn_free(userdata);
}

#define NV(n, v)                                                                                   \
        {                                                                                          \
                (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE     \
        }

static ssize_t data_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
        struct grpc_call *call = source->ptr;
        size_t avail = call->out_size - call->out_off;

        if (avail == 0) {
                if (!call->finishing) {
                        call->deferred = true;
                        return NGHTTP2_ERR_DEFERRED;
                }
                char code[16];
                snprintf(code, sizeof(code), "%d", call->final_code);
                _cleanup_free_ char *msg = grpc_percent_encode(call->final_message ?: "");
                nghttp2_nv trailers[] = {
                        NV("grpc-status", code),
                        NV("grpc-message", msg ?: ""),
                };
                *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
                if (nghttp2_submit_trailer(session, stream_id, trailers, msg && *msg ? 2 : 1) != 0)
                        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
                return 0;
        }
        size_t n = avail < length ? avail : length;
        memcpy(buf, call->out + call->out_off, n);
        call->out_off += n;
        if (call->out_off == call->out_size) {
                free(call->out); /* an idle ListAndWatch stream holds nothing */
                call->out = NULL;
                call->out_off = call->out_size = 0;
                call_account(call);
        }
        return (ssize_t)n;
}

static int call_submit_headers(struct grpc_call *call)
{
        nghttp2_nv hdrs[] = {
                NV(":status", "200"),
                NV("content-type", "application/grpc"),
        };
        nghttp2_data_provider prd = { .source.ptr = call, .read_callback = data_read };
        int r = nghttp2_submit_response(call->sc->conn.session, call->stream_id, hdrs,
                                        ELEMENTSOF(hdrs), &prd);
        if (r != 0)
                return -EPROTO;
        call->responded = true;
        return 0;
}

static int call_wake(struct grpc_call *call)
{
        if (call->deferred) {
                call->deferred = false;
                if (nghttp2_session_resume_data(call->sc->conn.session, call->stream_id) != 0)
                        return -EPROTO;
        }
        return grpc_conn_flush(&call->sc->conn);
}

int grpc_call_send(struct grpc_call *call, const uint8_t *msg, size_t len)
{
        if (call->finishing)
                return -EALREADY;
        if (call->out_size - call->out_off + len > MAX_QUEUED_OUTPUT ||
            call->sc->send_held + len > CONN_SEND_BUDGET) {
                /* The client stopped reading: drop the call rather than grow without bound. */
                nghttp2_submit_rst_stream(call->sc->conn.session, NGHTTP2_FLAG_NONE,
                                          call->stream_id, NGHTTP2_CANCEL);
                (void)grpc_conn_flush(&call->sc->conn);
                return -ENOBUFS;
        }
        _cleanup_free_ uint8_t *framed = NULL;
        size_t n;
        int r = grpc_frame_encode(msg, len, &framed, &n);
        if (r < 0)
                return r;
        uint8_t *b = realloc(call->out, call->out_size + n);
        if (!b)
                return -ENOMEM;
        call->out = b;
        memcpy(call->out + call->out_size, framed, n);
        call->out_size += n;
        call_account(call);
        if (!call->responded) {
                r = call_submit_headers(call);
                if (r < 0)
                        return r;
                return grpc_conn_flush(&call->sc->conn);
        }
        return call_wake(call);
}

int grpc_call_finish(struct grpc_call *call, int code, const char *message)
{
        if (call->finishing)
                return -EALREADY;
        call->finishing = true;
        call->final_code = code;
        call->final_message = strdup(message ?: "");
        if (!call->final_message)
                return -ENOMEM;
        if (call->responded)
                return call_wake(call);

        /* Trailers-only: one HEADERS frame carrying the status, ending the stream. */
        char code_str[16];
        snprintf(code_str, sizeof(code_str), "%d", code);
        _cleanup_free_ char *msg = grpc_percent_encode(call->final_message);
        if (!msg)
                return -ENOMEM;
        nghttp2_nv hdrs[] = {
                NV(":status", "200"),
                NV("content-type", "application/grpc"),
                NV("grpc-status", code_str),
                NV("grpc-message", msg),
        };
        call->responded = true;
        if (nghttp2_submit_response(call->sc->conn.session, call->stream_id, hdrs, *msg ? 4 : 3,
                                    NULL) != 0)
                return -EPROTO;
        return grpc_conn_flush(&call->sc->conn);
}

void grpc_call_set_closed_handler(struct grpc_call *call, grpc_call_closed_handler fn,
                                  void *userdata)
{
        call->closed = fn;
        call->closed_userdata = userdata;
}

static const struct grpc_method *find_method(const struct grpc_server *s, const char *path)
{
        for (size_t i = 0; i < s->n_methods; i++)
                if (strcmp(s->methods[i].path, path) == 0)
                        return &s->methods[i];
        return NULL;
}

static void call_fail(struct grpc_call *call, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void call_fail(struct grpc_call *call, int code, const char *fmt, ...)
{
        char msg[GRPC_STATUS_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        call->dispatched = true;
        call_release_request(call);
        log_debug("grpc: %s: %s: %s", call->path, grpc_status_to_string(code), msg);
        (void)grpc_call_finish(call, code, msg);
}

static void call_dispatch(struct grpc_call *call)
{
        struct grpc_server *s = call->sc->server;
        _cleanup_free_ uint8_t *req = NULL;
        size_t len = 0;

        const struct grpc_method *m = find_method(s, call->path);
        if (!m)
                return call_fail(call, GRPC_STATUS_UNIMPLEMENTED, "unknown method %s", call->path);
        if (!call->content_type_ok)
                return call_fail(call, GRPC_STATUS_INTERNAL,
                                 "content-type must be application/grpc");
        int r = grpc_frame_reader_next(&call->reader, &req, &len);
        if (r < 0 || r == 0 || grpc_frame_reader_has_partial(&call->reader))
                return call_fail(call, GRPC_STATUS_INTERNAL,
                                 "expected exactly one request message");
        call->dispatched = true;
        call_release_request(call); /* the message was taken out */

        struct grpc_status st = { .code = GRPC_STATUS_OK };
        if (m->unary) {
                _cleanup_free_ uint8_t *resp = NULL;
                size_t resp_len = 0;
                int code = m->unary(s->userdata, req, len, &resp, &resp_len, &st);
                if (code != GRPC_STATUS_OK) {
                        call_fail(call, code, "%s", st.message);
                        return;
                }
                if (grpc_call_send(call, resp, resp_len) < 0)
                        return;
                (void)grpc_call_finish(call, GRPC_STATUS_OK, NULL);
                return;
        }
        int code = m->stream(s->userdata, call, req, len, &st);
        if (code != GRPC_STATUS_OK)
                call_fail(call, code, "%s", st.message);
}

/* HTTP/2 request rules (RFC 9113 §8), checked here rather than by nghttp2: nghttp2's own
 * checks also insist that :authority be a host[:port], and real kubelets send the socket path
 * there (Kubernetes <= 1.25: "/var/lib/kubelet/device-plugins/x.sock"; gRPC C-core >= 1.57: the
 * path percent-encoded). On a unix socket the authority names nothing, so any value a header
 * field may carry (or none) is accepted; every other rule nghttp2 enforces is kept below. */
enum {
        PSEUDO_METHOD = 1u << 0,
        PSEUDO_SCHEME = 1u << 1,
        PSEUDO_PATH = 1u << 2,
        PSEUDO_AUTHORITY = 1u << 3,
        PSEUDO_HOST = 1u << 4, /* the "host" field: at most once, like :authority */
};

static void call_reject(struct grpc_call *call, const char *why)
{
        if (call->rejected)
                return;
        log_debug("grpc: stream %d: malformed request (%s): PROTOCOL_ERROR", call->stream_id, why);
        call->rejected = true;
        call->dispatched = true; /* nothing of this stream is read or answered any more */
        call_release_request(call);
        (void)nghttp2_submit_rst_stream(call->sc->conn.session, NGHTTP2_FLAG_NONE, call->stream_id,
                                        NGHTTP2_PROTOCOL_ERROR);
}

static bool name_is(const uint8_t *name, size_t len, const char *want)
{
        return len == strlen(want) && memcmp(name, want, len) == 0;
}

static bool value_ieq(const uint8_t *v, size_t len, const char *want)
{
        return len == strlen(want) && strncasecmp((const char *)v, want, len) == 0;
}

/* RFC 3986 scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
static bool scheme_valid(const uint8_t *v, size_t len)
{
        if (len == 0 || !((v[0] | 0x20) >= 'a' && (v[0] | 0x20) <= 'z'))
                return false;
        for (size_t i = 1; i < len; i++) {
                uint8_t c = v[i];
                if (!(((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9') ||
                      c == '+' || c == '-' || c == '.'))
                        return false;
        }
        return true;
}

static int64_t parse_content_length(const uint8_t *v, size_t len)
{
        if (len == 0 || len > 18)
                return -1;
        int64_t n = 0;
        for (size_t i = 0; i < len; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return -1;
                n = n * 10 + (v[i] - '0');
        }
        return n;
}

/* One field of a request's header block (trailer: of its trailing block). Returns false when
 * the field makes the request malformed; *why says which rule. Fields that are merely invalid
 * regular ones are ignored, as nghttp2 does. */
static bool request_header_ok(struct grpc_call *call, bool trailer, const uint8_t *name,
                              size_t namelen, const uint8_t *value, size_t valuelen, bool *ignore,
                              const char **why)
{
        *ignore = false;
        if (namelen == 0)
                return (*why = "empty field name"), false;
        if (name[0] == ':') {
                if (trailer)
                        return (*why = "pseudo-header field in trailers"), false;
                if (call->regular_seen)
                        return (*why = "pseudo-header field after a regular one"), false;
                unsigned bit;
                if (name_is(name, namelen, ":method")) {
                        bit = PSEUDO_METHOD;
                        if (!nghttp2_check_method(value, valuelen))
                                return (*why = "invalid :method"), false;
                        call->method_options = valuelen == 7 && memcmp(value, "OPTIONS", 7) == 0;
                } else if (name_is(name, namelen, ":scheme")) {
                        bit = PSEUDO_SCHEME;
                        if (!scheme_valid(value, valuelen))
                                return (*why = "invalid :scheme"), false;
                } else if (name_is(name, namelen, ":path")) {
                        bit = PSEUDO_PATH;
                        if (valuelen == 0 || !nghttp2_check_path(value, valuelen))
                                return (*why = "invalid :path"), false;
                        call->path_regular = value[0] == '/';
                        call->path_asterisk = valuelen == 1 && value[0] == '*';
                } else if (name_is(name, namelen, ":authority")) {
                        bit = PSEUDO_AUTHORITY;
                        /* Any value: see above. Still a field value (no NUL, CR, LF). */
                        if (!nghttp2_check_header_value(value, valuelen))
                                return (*why = "invalid characters in :authority"), false;
                } else {
                        return (*why = "unknown pseudo-header field"), false;
                }
                if (call->pseudo_seen & bit)
                        return (*why = "repeated pseudo-header field"), false;
                call->pseudo_seen |= bit;
                return true;
        }

        call->regular_seen = true;
        if (!nghttp2_check_header_name(name, namelen)) {
                for (size_t i = 0; i < namelen; i++)
                        if (name[i] >= 'A' && name[i] <= 'Z')
                                return (*why = "upper-case field name"), false;
                *ignore = true;
                return true;
        }
        if (name_is(name, namelen, "host")) {
                /* The same meaning as :authority, so the same latitude. */
                if (call->pseudo_seen & PSEUDO_HOST)
                        return (*why = "repeated host field"), false;
                call->pseudo_seen |= PSEUDO_HOST;
                if (!nghttp2_check_header_value(value, valuelen))
                        return (*why = "invalid characters in host"), false;
                return true;
        }
        if (name_is(name, namelen, "connection") || name_is(name, namelen, "keep-alive") ||
            name_is(name, namelen, "proxy-connection") ||
            name_is(name, namelen, "transfer-encoding") || name_is(name, namelen, "upgrade"))
                return (*why = "connection-specific field"), false;
        if (name_is(name, namelen, "te")) {
                if (!value_ieq(value, valuelen, "trailers"))
                        return (*why = "te other than \"trailers\""), false;
                return true;
        }
        if (!nghttp2_check_header_value_rfc9113(value, valuelen)) {
                *ignore = true;
                return true;
        }
        if (!trailer && name_is(name, namelen, "content-length")) {
                if (call->content_length != -1)
                        return (*why = "repeated content-length"), false;
                call->content_length = parse_content_length(value, valuelen);
                if (call->content_length == -1)
                        return (*why = "invalid content-length"), false;
        }
        return true;
}

/* The request header block is complete. */
static const char *request_headers_complete(const struct grpc_call *call)
{
        const unsigned required = PSEUDO_METHOD | PSEUDO_SCHEME | PSEUDO_PATH;
        if ((call->pseudo_seen & required) != required)
                return ":method, :scheme or :path missing";
        if (!call->path_regular && !(call->method_options && call->path_asterisk))
                return ":path does not start with /";
        return NULL;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
        struct server_conn *sc = user_data;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        struct grpc_call *call = calloc(1, sizeof(*call));
        if (!call)
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        call->sc = sc;
        call->stream_id = frame->hd.stream_id;
        call->content_length = -1;
        grpc_frame_reader_init(&call->reader, GRPC_MESSAGE_MAX_DEFAULT);
        call->next = sc->calls;
        if (sc->calls)
                sc->calls->prev = call;
        sc->calls = call;
        nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, call);
        return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
        if (frame->hd.type != NGHTTP2_HEADERS)
                return 0;
        bool trailer = frame->headers.cat == NGHTTP2_HCAT_HEADERS;
        if (frame->headers.cat != NGHTTP2_HCAT_REQUEST && !trailer)
                return 0;
        struct grpc_call *call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (!call || call->rejected)
                return 0;
        bool ignore;
        const char *why = NULL;
        if (!request_header_ok(call, trailer, name, namelen, value, valuelen, &ignore, &why)) {
                call_reject(call, why);
                return 0;
        }
        if (ignore || trailer)
                return 0;
        if (name_is(name, namelen, ":path")) {
                size_t n = valuelen < sizeof(call->path) - 1 ? valuelen : sizeof(call->path) - 1;
                memcpy(call->path, value, n);
                call->path[n] = 0;
        } else if (name_is(name, namelen, "content-type")) {
                call->content_type_ok = valuelen >= 16 &&
                                        memcmp(value, "application/grpc", 16) == 0 &&
                                        (valuelen == 16 || value[16] == '+' || value[16] == ';');
        }
        return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data)
{
        struct grpc_call *call = nghttp2_session_get_stream_user_data(session, stream_id);
        if (!call || call->rejected)
                return 0;
        call->received += (int64_t)len;
        if (call->content_length != -1 && call->received > call->content_length) {
                call_reject(call, "more DATA than content-length");
                return 0;
        }
        if (call->dispatched)
                return 0;
        struct server_conn *sc = call->sc;
        int r = grpc_frame_reader_feed(&call->reader, data, len);
        call_account(call);
        if (sc->recv_held > CONN_RECV_BUDGET || sc->server->recv_held > SERVER_RECV_BUDGET) {
                call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED,
                          "request data over the memory budget (%u MiB per connection, %u MiB in "
                          "all)",
                          CONN_RECV_BUDGET >> 20, SERVER_RECV_BUDGET >> 20);
                return 0;
        }
        if (r == -EMSGSIZE)
                call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED,
                          "request message larger than %zu bytes", call->reader.max_message);
        else if (r == -EPROTO)
                call_fail(call, GRPC_STATUS_UNIMPLEMENTED, "compressed messages not supported");
        else if (r < 0)
                call_fail(call, GRPC_STATUS_INTERNAL, "malformed request framing");
        return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
        if (frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS)
                return 0;
        struct grpc_call *call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (!call || call->rejected)
                return 0;
        bool end = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
        if (frame->hd.type == NGHTTP2_HEADERS) {
                const char *why = NULL;
                if (frame->headers.cat == NGHTTP2_HCAT_REQUEST)
                        why = request_headers_complete(call);
                else if (!end)
                        why = "trailers without END_STREAM";
                if (why) {
                        call_reject(call, why);
                        return 0;
                }
        }
        if (!end)
                return 0;
        if (call->content_length != -1 && call->received != call->content_length) {
                call_reject(call, "less DATA than content-length");
                return 0;
        }
        if (!call->dispatched)
                call_dispatch(call);
        return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
        struct grpc_call *call = nghttp2_session_get_stream_user_data(session, stream_id);
        if (!call)
                return 0;
        nghttp2_session_set_stream_user_data(session, stream_id, NULL);
        call_closed(call);
        return 0;
}

static int server_session_new(struct server_conn *sc, nghttp2_session **ret)
{
        nghttp2_session_callbacks *cbs;
        if (nghttp2_session_callbacks_new(&cbs) != 0)
                return -ENOMEM;
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
        nghttp2_option *opt;
        if (nghttp2_option_new(&opt) != 0) {
                nghttp2_session_callbacks_del(cbs);
                return -ENOMEM;
        }
        /* HTTP request rules are checked by request_header_ok() and friends, which accept any
         * :authority; nghttp2 would reset such streams. */
        nghttp2_option_set_no_http_messaging(opt, 1);
        int r = nghttp2_session_server_new2(ret, cbs, sc, opt);
        nghttp2_option_del(opt);
        nghttp2_session_callbacks_del(cbs);
        if (r != 0)
                return -ENOMEM;
        nghttp2_settings_entry settings[] = {
                { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS_PER_CONN },
        };
        if (nghttp2_submit_settings(*ret, NGHTTP2_FLAG_NONE, settings, ELEMENTSOF(settings)) != 0) {
                nghttp2_session_del(*ret);
                return -EPROTO;
        }
        return 0;
}

static int on_accept_retry(sd_event_source *source, uint64_t usec, void *userdata)
{
        struct grpc_server *s = userdata;
        return sd_event_source_set_enabled(s->accept_source, SD_EVENT_ON);
}

/* Out of descriptors, accept4() fails at once again until one is closed: accepting pauses for
 * ACCEPT_RETRY_USEC instead of spinning the loop (and the journal). */
static void pause_accepting(struct grpc_server *s, int error)
{
        if (!s->accept_failing)
                log_warning_errno(error, "grpc: accept on %s failed, new connections wait",
                                  s->socket_path);
        s->accept_failing = true;
        if (!s->accept_source || !s->accept_retry)
                return; /* quiesce's last look: the socket closes next */
        (void)sd_event_source_set_enabled(s->accept_source, SD_EVENT_OFF);
        (void)sd_event_source_set_time_relative(s->accept_retry, ACCEPT_RETRY_USEC);
        (void)sd_event_source_set_enabled(s->accept_retry, SD_EVENT_ONESHOT);
}

/* At the limit a client is refused (closed at once: only root reaches these sockets, and a
 * kubelet reconnects); the journal gets one line per interval with the count, not one per
 * client. */
static void refuse_connection(struct grpc_server *s, int cfd)
{
        close(cfd);
        s->refused_unlogged++;
        uint64_t now = 0;
        (void)sd_event_now(s->event, CLOCK_MONOTONIC, &now);
        if (s->refused_logged_usec && now - s->refused_logged_usec < REFUSED_LOG_INTERVAL_USEC)
                return;
        log_warning("grpc: %s: %zu connections open, the limit: refused %u", s->socket_path,
                    s->n_conns, s->refused_unlogged);
        s->refused_logged_usec = now;
        s->refused_unlogged = 0;
}

static int on_accept(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        struct grpc_server *s = userdata;
        /* a few per wake-up, so a connection flood cannot starve the rest of the loop */
        for (int i = 0; i < 32; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                            errno == ENOMEM)
                                pause_accepting(s, errno);
                        else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_warning_errno(errno, "grpc: accept on %s failed",
                                                  s->socket_path);
                        return 0;
                }
                s->accept_failing = false;
                if (s->n_conns >= MAX_CONNECTIONS) {
                        refuse_connection(s, cfd);
                        continue;
                }
                struct server_conn *sc = calloc(1, sizeof(*sc));
                nghttp2_session *session = NULL;
                if (!sc || server_session_new(sc, &session) < 0) {
                        free(sc);
                        close(cfd);
                        continue;
                }
                sc->server = s;
                if (grpc_conn_init(&sc->conn, s->event, cfd, session, on_conn_dead, sc) < 0) {
                        free(sc);
                        continue;
                }
                sc->next = s->conns;
                if (s->conns)
                        s->conns->prev = sc;
                s->conns = sc;
                s->n_conns++;
                (void)grpc_conn_flush(&sc->conn);
        }
        return 0;
}

int grpc_server_new(sd_event *event, const char *socket_path, const struct grpc_method *methods,
                    size_t n_methods, void *userdata, struct grpc_server **ret)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(socket_path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG; /* the caller logs, naming the path */
        strcpy(sa.sun_path, socket_path);

        _cleanup_(grpc_server_freep) struct grpc_server *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (struct grpc_server){ .event = sd_event_ref(event),
                                   .listen_fd = -1,
                                   .methods = methods,
                                   .n_methods = n_methods,
                                   .userdata = userdata,
                                   .socket_path = strdup(socket_path) };
        if (!s->socket_path)
                /* cppcheck-suppress memleak ; _cleanup_ frees it */
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;
        s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s->listen_fd < 0)
                /* cppcheck-suppress memleak ; _cleanup_ frees it */
                return negative_errno();
        (void)unlink(socket_path);
        /* 0600 whatever the umask: only root (the kubelet) may talk to a device plugin. Set
         * before listen(), so no connection is accepted while the mode is still wider. */
        if (bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            chmod(socket_path, 0600) < 0 || listen(s->listen_fd, SOMAXCONN) < 0)
                /* cppcheck-suppress memleak ; _cleanup_ frees it */
                return negative_errno(); /* the caller logs, naming the path */
        struct stat st;
        if (stat(socket_path, &st) == 0) {
                s->socket_dev = st.st_dev;
                s->socket_ino = st.st_ino;
        }
        int r = sd_event_add_io(event, &s->accept_source, s->listen_fd, EPOLLIN, on_accept, s);
        if (r < 0)
                return r;
        /* made now, off: out of descriptors there would be none for its clock's timerfd */
        r = sd_event_add_time_relative(event, &s->accept_retry, CLOCK_MONOTONIC, ACCEPT_RETRY_USEC,
                                       10 * 1000, on_accept_retry, s);
        if (r < 0)
                return r;
        (void)sd_event_source_set_enabled(s->accept_retry, SD_EVENT_OFF);
        *ret = TAKE_PTR(s);
        return 0;
}

/* Ends every open call with UNAVAILABLE, sends GOAWAY (the peer may retry any later stream
 * elsewhere), writes what is queued and closes every connection. */
static void close_connections(struct grpc_server *s)
{
        for (struct server_conn *sc = s->conns; sc; sc = sc->next) {
                /* Writing may close streams and free their calls: queue everything first. */
                sc->conn.hold = true;
                for (struct grpc_call *call = sc->calls; call; call = call->next)
                        if (call->dispatched && !call->finishing)
                                (void)grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE,
                                                       "device plugin shutting down");
                sc->conn.hold = false;
                if (!sc->conn.dead) {
                        nghttp2_submit_goaway(
                            sc->conn.session, NGHTTP2_FLAG_NONE,
                            nghttp2_session_get_last_proc_stream_id(sc->conn.session),
                            NGHTTP2_NO_ERROR, NULL, 0);
                        (void)grpc_conn_flush(&sc->conn);
                }
        }
        while (s->conns)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): the list head has no prev */
                server_conn_free(s->conns);
}

/* Removes the socket file only if it is still the one we bound (a restarted kubelet may have
 * deleted it, and a new instance may have taken the name); never twice. */
static void unlink_own_socket(struct grpc_server *s)
{
        struct stat st;
        if (s->socket_path && s->socket_ino != 0 && stat(s->socket_path, &st) == 0 &&
            st.st_dev == s->socket_dev && st.st_ino == s->socket_ino)
                (void)unlink(s->socket_path);
        s->socket_ino = 0;
}

struct grpc_server *grpc_server_free(struct grpc_server *s)
{
        if (!s)
                return NULL;
        s->drain_timer = sd_event_source_disable_unref(s->drain_timer);
        s->drain_defer = sd_event_source_disable_unref(s->drain_defer);
        close_connections(s);
        s->accept_source = sd_event_source_disable_unref(s->accept_source);
        s->accept_retry = sd_event_source_disable_unref(s->accept_retry);
        if (s->listen_fd >= 0)
                close(s->listen_fd);
        unlink_own_socket(s);
        free(s->socket_path);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

/* Connections freed while the list is walked: step with a saved next, and only while the
 * connection is alive (a dead one is freed by its deferred callback). */
static void read_every_connection(struct grpc_server *s)
{
        for (struct server_conn *sc = s->conns, *next; sc; sc = next) {
                next = sc->next;
                if (!sc->conn.dead)
                        (void)grpc_conn_read_now(&sc->conn);
        }
}

void grpc_server_quiesce(struct grpc_server *s)
{
        if (s->listen_fd >= 0) {
                /* A client that connected just now may already have sent its first call. */
                (void)on_accept(NULL, s->listen_fd, EPOLLIN, s);
                s->accept_source = sd_event_source_disable_unref(s->accept_source);
                s->accept_retry = sd_event_source_disable_unref(s->accept_retry);
                close(s->listen_fd);
                s->listen_fd = -1;
        }
        unlink_own_socket(s);
        read_every_connection(s);
}

void grpc_server_finish_calls(struct grpc_server *s, grpc_call_pick_fn pick, void *userdata,
                              int code, const char *message)
{
        for (struct server_conn *sc = s->conns; sc; sc = sc->next) {
                if (sc->conn.dead)
                        continue;
                /* Writing may close streams and free their calls: queue everything first. */
                sc->conn.hold = true;
                for (struct grpc_call *call = sc->calls; call; call = call->next)
                        if (call->dispatched && !call->finishing && (!pick || pick(call, userdata)))
                                (void)grpc_call_finish(call, code, message);
                sc->conn.hold = false;
        }
        for (struct server_conn *sc = s->conns, *next; sc; sc = next) {
                next = sc->next;
                if (!sc->conn.dead)
                        (void)grpc_conn_flush(&sc->conn);
        }
}

static int on_drain_defer(sd_event_source *source, void *userdata)
{
        struct grpc_server *s = userdata;
        (void)sd_event_source_set_enabled(source, SD_EVENT_OFF);
        if (s->n_conns > 0 || !s->drained)
                return 0;
        s->drain_timer = sd_event_source_disable_unref(s->drain_timer);
        grpc_server_drained_fn fn = s->drained;
        s->drained = NULL;
        fn(s, s->drained_userdata); /* may free s */
        return 0;
}

static int on_drain_timeout(sd_event_source *source, uint64_t usec, void *userdata)
{
        struct grpc_server *s = userdata;
        log_debug("grpc: %s: %zu connection(s) still open after the grace period: closing them",
                  s->socket_path, s->n_conns);
        /* What came meanwhile is answered; what comes after the GOAWAY is retried elsewhere. */
        read_every_connection(s);
        close_connections(s); /* schedules on_drain_defer through the last server_conn_free */
        return 0;
}

int grpc_server_drain(struct grpc_server *s, uint64_t grace_usec, bool goaway_now,
                      grpc_server_drained_fn done, void *userdata)
{
        if (s->drained)
                return -EALREADY;
        int r = sd_event_add_defer(s->event, &s->drain_defer, on_drain_defer, s);
        if (r < 0)
                return r;
        (void)sd_event_source_set_enabled(s->drain_defer, SD_EVENT_OFF);
        /* A bound on a stop, not a deadline: 1 ms accuracy keeps it close to what is said. */
        r = sd_event_add_time_relative(s->event, &s->drain_timer, CLOCK_MONOTONIC, grace_usec, 1000,
                                       on_drain_timeout, s);
        if (r < 0) {
                s->drain_defer = sd_event_source_disable_unref(s->drain_defer);
                return r;
        }
        s->drained = done;
        s->drained_userdata = userdata;
        if (goaway_now)
                for (struct server_conn *sc = s->conns, *next; sc; sc = next) {
                        next = sc->next;
                        if (sc->conn.dead)
                                continue;
                        /* Calls up to the last one read are still answered; the client starts
                         * later ones on another connection and closes this one when idle. */
                        nghttp2_submit_goaway(
                            sc->conn.session, NGHTTP2_FLAG_NONE,
                            nghttp2_session_get_last_proc_stream_id(sc->conn.session),
                            NGHTTP2_NO_ERROR, NULL, 0);
                        (void)grpc_conn_flush(&sc->conn);
                }
        if (s->n_conns == 0)
                (void)sd_event_source_set_enabled(s->drain_defer, SD_EVENT_ONESHOT);
        return 0;
}

const char *grpc_call_path(const struct grpc_call *call)
{
        return call->path;
}

size_t grpc_server_n_connections(const struct grpc_server *s)
{
        return s->n_conns;
}
