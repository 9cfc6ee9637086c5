/* SPDX-License-Identifier: Apache-2.0 */
#include "grpc/grpc-client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "grpc/grpc-conn.h"
#include "grpc/grpc-frame.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"

struct grpc_client_call {
        struct grpc_conn conn;
        sd_event_source *timer;
        int32_t stream_id;
        uint8_t *request; /* framed */
        size_t request_len, request_off;
        struct grpc_frame_reader reader;
        bool have_status;
        bool have_result;
        int http_status;
        struct grpc_status result;
        uint8_t *response;
        size_t response_len;
        grpc_unary_done_fn done;
        void *userdata;
};

static void call_free(struct grpc_client_call *c)
{
        grpc_conn_done(&c->conn);
        c->timer = sd_event_source_disable_unref(c->timer);
        grpc_frame_reader_done(&c->reader);
        free(c->request);
        free(c->response);
        free(c);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct grpc_client_call *, call_free);

static void set_result(struct grpc_client_call *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_result(struct grpc_client_call *c, int code, const char *fmt, ...)
{
        if (c->have_result)
                return;
        va_list ap;
        va_start(ap, fmt);
        c->result.code = code;
        vsnprintf(c->result.message, sizeof(c->result.message), fmt, ap);
        va_end(ap);
        c->have_result = true;
}

/* Connection over (or killed after the stream closed / the deadline): report once, free. */
static void on_dead(struct grpc_conn *conn, void *userdata)
{
        struct grpc_client_call *c = userdata;
        set_result(c, GRPC_STATUS_UNAVAILABLE, "connection closed before the response");
        if (c->result.code != GRPC_STATUS_OK) {
                free(c->response);
                c->response = NULL;
                c->response_len = 0;
        }
        if (c->done)
                c->done(c->userdata, &c->result, c->response, c->response_len);
        call_free(c);
}

static int parse_code(const char *s, int *ret)
{
        int v;
        int r = parse_int(s, &v);
        if (r < 0 || v < 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
        struct grpc_client_call *c = user_data;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->hd.stream_id != c->stream_id)
                return 0;
        if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
                char buf[8] = { 0 };
                memcpy(buf, value, valuelen < 7 ? valuelen : 7);
                if (parse_int(buf, &c->http_status) < 0)
                        c->http_status = 0; /* not a number: no HTTP status seen */
        } else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
                char buf[8] = { 0 };
                memcpy(buf, value, valuelen < 7 ? valuelen : 7);
                if (parse_code(buf, &c->result.code) == 0)
                        c->have_status = true;
        } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
                _cleanup_free_ char *m = grpc_percent_decode((const char *)value, valuelen);
                if (m)
                        snprintf(c->result.message, sizeof(c->result.message), "%s", m);
        }
        return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data)
{
        struct grpc_client_call *c = user_data;
        if (stream_id != c->stream_id || c->have_result)
                return 0;
        int r = grpc_frame_reader_feed(&c->reader, data, len);
        if (r < 0) {
                set_result(c,
                           r == -EMSGSIZE ? GRPC_STATUS_RESOURCE_EXHAUSTED : GRPC_STATUS_INTERNAL,
                           "bad response framing: %s", strerror(-r));
                nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
        }
        return 0;
}

static void finish_from_stream(struct grpc_client_call *c, uint32_t error_code)
{
        if (c->have_result)
                return;
        if (!c->have_status) {
                if (c->http_status != 0 && c->http_status != 200)
                        set_result(c, GRPC_STATUS_UNAVAILABLE, "HTTP status %d", c->http_status);
                else
                        set_result(c,
                                   error_code == NGHTTP2_CANCEL ? GRPC_STATUS_CANCELLED
                                                                : GRPC_STATUS_UNAVAILABLE,
                                   "stream closed without grpc-status (%s)",
                                   nghttp2_http2_strerror(error_code));
                return;
        }
        if (c->result.code != GRPC_STATUS_OK) {
                c->have_result = true;
                return;
        }
        uint8_t *msg = NULL;
        size_t len = 0;
        int r = grpc_frame_reader_next(&c->reader, &msg, &len);
        if (r <= 0 || grpc_frame_reader_has_partial(&c->reader)) {
                free(msg);
                set_result(c, GRPC_STATUS_INTERNAL, "expected exactly one response message");
                return;
        }
        c->response = msg;
        c->response_len = len;
        c->have_result = true;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
        struct grpc_client_call *c = user_data;
        if (stream_id != c->stream_id)
                return 0;
        finish_from_stream(c, error_code);
        grpc_conn_kill(&c->conn);
        return 0;
}

static ssize_t request_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
                            size_t length, uint32_t *data_flags, nghttp2_data_source *source,
                            void *user_data)
{
        struct grpc_client_call *c = source->ptr;
        size_t n = c->request_len - c->request_off;
        if (n > length)
                n = length;
        memcpy(buf, c->request + c->request_off, n);
        c->request_off += n;
        if (c->request_off == c->request_len)
                *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t)n;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct grpc_client_call *c = userdata;
        set_result(c, GRPC_STATUS_DEADLINE_EXCEEDED, "no response within the deadline");
        grpc_conn_kill(&c->conn);
        return 0;
}

static int connect_unix(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS &&
            errno != EAGAIN) {
                int r = negative_errno();
                close(fd);
                return r;
        }
        return fd;
}

#define NV(n, v)                                                                                   \
        {                                                                                          \
                (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE     \
        }

static int client_session_new(struct grpc_client_call *c, nghttp2_session **ret)
{
        nghttp2_session_callbacks *cbs;
        if (nghttp2_session_callbacks_new(&cbs) != 0)
                return -ENOMEM;
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
        int r = nghttp2_session_client_new(ret, cbs, c);
        nghttp2_session_callbacks_del(cbs);
        return r == 0 ? 0 : -ENOMEM;
}

int grpc_unary_call(sd_event *event, const char *socket_path, const char *method_path,
                    const uint8_t *request, size_t len, uint64_t timeout_usec,
                    grpc_unary_done_fn done, void *userdata, struct grpc_client_call **ret)
{
        _cleanup_close_ int fd = connect_unix(socket_path);
        if (fd < 0)
                return fd;

        _cleanup_(call_freep) struct grpc_client_call *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->conn.fd = -1;
        c->done = done;
        c->userdata = userdata;
        grpc_frame_reader_init(&c->reader, GRPC_MESSAGE_MAX_DEFAULT);

        nghttp2_session *session = NULL;
        int r = grpc_frame_encode(request, len, &c->request, &c->request_len);
        if (r >= 0)
                r = client_session_new(c, &session);
        if (r < 0)
                return r;
        /* owns the fd and the session from here, also when it fails */
        r = grpc_conn_init(&c->conn, event, TAKE_FD(fd), session, on_dead, c);
        if (r < 0)
                return r;

        /* The deadline travels too, so the server may give up as early as we do. */
        char timeout_value[24];
        snprintf(timeout_value, sizeof(timeout_value), "%lluu",
                 (unsigned long long)(timeout_usec < 100000000ULL ? timeout_usec : 99999999ULL));
        nghttp2_nv hdrs[] = {
                NV(":method", "POST"),
                NV(":scheme", "http"),
                NV(":path", method_path),
                NV(":authority", "localhost"),
                NV("content-type", "application/grpc"),
                NV("te", "trailers"),
                NV("user-agent", "sriov-agent-grpc/" SRIOV_AGENT_VERSION),
                NV("grpc-timeout", timeout_value), /* last: left out without a deadline */
        };
        nghttp2_data_provider prd = { .source.ptr = c, .read_callback = request_read };
        if (nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, NULL, 0) != 0 ||
            (c->stream_id = nghttp2_submit_request(
                 session, NULL, hdrs, ELEMENTSOF(hdrs) - (timeout_usec ? 0 : 1), &prd, NULL)) < 0)
                return -EPROTO;
        if (timeout_usec > 0) {
                r = sd_event_add_time_relative(event, &c->timer, CLOCK_MONOTONIC, timeout_usec,
                                               1000, on_timeout, c);
                if (r < 0)
                        return r;
        }
        /* From here the event loop owns the call: on_dead or the caller's cancel frees it. */
        struct grpc_client_call *call = TAKE_PTR(c);
        (void)grpc_conn_flush(&call->conn); /* failures surface through on_dead */
        if (ret)
                *ret = call;
        return 0;
}

void grpc_client_call_cancel(struct grpc_client_call *call)
{
        if (call)
                call_free(call);
}

struct sync_result {
        bool done;
        struct grpc_status *st;
        uint8_t *response;
        size_t len;
};

static void sync_done(void *userdata, const struct grpc_status *st, const uint8_t *response,
                      size_t len)
{
        struct sync_result *res = userdata;
        *res->st = *st;
        if (st->code == GRPC_STATUS_OK && len > 0) {
                res->response = malloc(len);
                if (res->response) {
                        memcpy(res->response, response, len);
                        res->len = len;
                } else {
                        res->st->code = GRPC_STATUS_RESOURCE_EXHAUSTED;
                        snprintf(res->st->message, sizeof(res->st->message), "out of memory");
                }
        }
        res->done = true;
}

int grpc_unary_call_sync(const char *socket_path, const char *method_path, const uint8_t *request,
                         size_t len, uint64_t timeout_usec, struct grpc_status *st,
                         uint8_t **ret_response, size_t *ret_len)
{
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        int r = sd_event_new(&event);
        if (r < 0)
                return r;
        struct sync_result res = { .st = st };
        r = grpc_unary_call(event, socket_path, method_path, request, len, timeout_usec, sync_done,
                            &res, NULL);
        while (r >= 0 && !res.done) {
                r = sd_event_run(event, UINT64_MAX);
                if (r > 0)
                        r = 0;
        }
        if (r < 0) {
                free(res.response);
                return r;
        }
        *ret_response = res.response;
        *ret_len = res.len;
        return 0;
}
