/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the gRPC server and client together on a unix socket in a temp dir, on one
 * sd-event loop: unary calls, errors with percent-encoded messages, trailers-only errors,
 * unknown methods, oversized requests, a held server stream answered later (deferred data),
 * client deadlines and the server learning that a client went away; silent and half-sent
 * clients at and far beyond the connection limit, and what they held given back when they go;
 * and the HTTP/2 request rules the server enforces itself (any :authority, every other rule
 * of RFC 9113 §8); a graceful stop answering the calls already sent before it ends the
 * streams. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <systemd/sd-event.h>
#include <valgrind/valgrind.h>

#include "grpc/grpc-client.h"
#include "grpc/grpc-server.h"
#include "util/macro.h"

struct fixture {
        char dir[64];
        char path[128];
        sd_event *event;
        struct grpc_server *server;
        struct grpc_call *held;
        int closed_count;
        /* last client result */
        bool done;
        struct grpc_status st;
        uint8_t resp[64];
        size_t resp_len;
};

static int echo(void *userdata, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                struct grpc_status *st)
{
        *ret = malloc(len ?: 1);
        if (len)
                memcpy(*ret, req, len);
        *ret_len = len;
        return GRPC_STATUS_OK;
}

static int fail_handler(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                        size_t *ret_len, struct grpc_status *st)
{
        return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT, "bad \"x\" 100%%\nnext line");
}

static void held_closed(struct grpc_call *call, void *userdata)
{
        struct fixture *f = userdata;
        f->closed_count++;
        if (f->held == call)
                f->held = NULL;
}

static int hold(void *userdata, struct grpc_call *call, const uint8_t *req, size_t len,
                struct grpc_status *st)
{
        struct fixture *f = userdata;
        f->held = call;
        grpc_call_set_closed_handler(call, held_closed, f);
        return GRPC_STATUS_OK;
}

static const struct grpc_method methods[] = {
        { .path = "/t.T/Echo", .unary = echo },
        { .path = "/t.T/Fail", .unary = fail_handler },
        { .path = "/t.T/Hold", .stream = hold },
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        strcpy(f->dir, "/tmp/test-grpc-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->path, sizeof(f->path), "%s/s.sock", f->dir);
        assert_int_equal(sd_event_new(&f->event), 0);
        assert_int_equal(grpc_server_new(f->event, f->path, methods, 3, f, &f->server), 0);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        grpc_server_free(f->server);
        assert_int_equal(access(f->path, F_OK), -1); /* socket removed */
        sd_event_unref(f->event);
        rmdir(f->dir);
        free(f);
        return 0;
}

static void on_done(void *userdata, const struct grpc_status *st, const uint8_t *resp, size_t len)
{
        struct fixture *f = userdata;
        f->done = true;
        f->st = *st;
        f->resp_len = len < sizeof(f->resp) ? len : sizeof(f->resp);
        if (len)
                memcpy(f->resp, resp, f->resp_len);
}

static void run_until_done(struct fixture *f)
{
        for (int i = 0; i < 1000 && !f->done; i++)
                assert_true(sd_event_run(f->event, 1000000) >= 0);
        assert_true(f->done);
}

static void call(struct fixture *f, const char *method, const void *req, size_t len,
                 uint64_t timeout)
{
        f->done = false;
        assert_int_equal(grpc_unary_call(f->event, f->path, method, (const uint8_t *)req, len,
                                         timeout, on_done, f, NULL),
                         0);
        run_until_done(f);
}

static void test_unary_echo(void **state)
{
        struct fixture *f = *state;
        call(f, "/t.T/Echo", "ping", 4, 2000000);
        assert_int_equal(f->st.code, GRPC_STATUS_OK);
        assert_int_equal(f->resp_len, 4);
        assert_memory_equal(f->resp, "ping", 4);
        call(f, "/t.T/Echo", NULL, 0, 2000000); /* empty message */
        assert_int_equal(f->st.code, GRPC_STATUS_OK);
        assert_int_equal(f->resp_len, 0);
}

static void test_error_message_roundtrip(void **state)
{
        struct fixture *f = *state;
        call(f, "/t.T/Fail", "x", 1, 2000000);
        assert_int_equal(f->st.code, GRPC_STATUS_INVALID_ARGUMENT);
        assert_string_equal(f->st.message, "bad \"x\" 100%\nnext line");
        assert_int_equal(f->resp_len, 0);
}

static void test_unknown_method(void **state)
{
        struct fixture *f = *state;
        call(f, "/t.T/Nope", "x", 1, 2000000);
        assert_int_equal(f->st.code, GRPC_STATUS_UNIMPLEMENTED);
        assert_non_null(strstr(f->st.message, "/t.T/Nope"));
}

static void test_oversized_request(void **state)
{
        struct fixture *f = *state;
        size_t n = 4 * 1024 * 1024 + 1;
        uint8_t *big = calloc(1, n);
        call(f, "/t.T/Echo", big, n, 5000000);
        free(big);
        assert_int_equal(f->st.code, GRPC_STATUS_RESOURCE_EXHAUSTED);
        /* and the server still serves */
        call(f, "/t.T/Echo", "ok", 2, 2000000);
        assert_int_equal(f->st.code, GRPC_STATUS_OK);
}

/* A held call answered later: the data provider was deferred and is resumed. */
static void test_held_stream_answered_later(void **state)
{
        struct fixture *f = *state;
        f->done = false;
        assert_int_equal(grpc_unary_call(f->event, f->path, "/t.T/Hold", (const uint8_t *)"", 0,
                                         2000000, on_done, f, NULL),
                         0);
        for (int i = 0; i < 100 && !f->held; i++)
                assert_true(sd_event_run(f->event, 100000) >= 0);
        assert_non_null(f->held);
        assert_false(f->done);
        assert_int_equal(grpc_call_send(f->held, (const uint8_t *)"late", 4), 0);
        for (int i = 0; i < 5; i++)
                assert_true(sd_event_run(f->event, 10000) >= 0);
        assert_false(f->done); /* a message alone does not end a call */
        assert_int_equal(grpc_call_finish(f->held, GRPC_STATUS_OK, NULL), 0);
        run_until_done(f);
        assert_int_equal(f->st.code, GRPC_STATUS_OK);
        assert_memory_equal(f->resp, "late", 4);
}

/* The client gives up (deadline): its connection goes, the server's handler hears of it. */
static void test_deadline_and_server_notices_cancel(void **state)
{
        struct fixture *f = *state;
        f->closed_count = 0;
        call(f, "/t.T/Hold", "", 0, 100000);
        assert_int_equal(f->st.code, GRPC_STATUS_DEADLINE_EXCEEDED);
        for (int i = 0; i < 100 && f->closed_count == 0; i++)
                assert_true(sd_event_run(f->event, 10000) >= 0);
        assert_int_equal(f->closed_count, 1);
        assert_null(f->held);
        for (int i = 0; i < 100 && grpc_server_n_connections(f->server) > 0; i++)
                assert_true(sd_event_run(f->event, 10000) >= 0);
        assert_int_equal(grpc_server_n_connections(f->server), 0);
}

static void test_no_server(void **state)
{
        struct fixture *f = *state;
        char path[160];
        snprintf(path, sizeof(path), "%s/absent.sock", f->dir);
        assert_int_equal(grpc_unary_call(f->event, path, "/t.T/Echo", (const uint8_t *)"x", 1, 0,
                                         on_done, f, NULL),
                         -ENOENT);
        struct grpc_status st;
        uint8_t *resp = NULL;
        size_t len;
        assert_int_equal(
            grpc_unary_call_sync(path, "/t.T/Echo", (const uint8_t *)"x", 1, 0, &st, &resp, &len),
            -ENOENT);
}

static int raw_connect(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        return fd;
}

/* Peers that send garbage, stop mid-frame, or send random frames after a valid preface are
 * dropped; the server keeps serving. */
static void test_garbage_peers(void **state)
{
        struct fixture *f = *state;
        static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        uint8_t junk[4096];
        uint32_t x = 42; /* xorshift32: the same junk on every run */
        for (size_t i = 0; i < sizeof(junk); i++) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                junk[i] = (uint8_t)x;
        }
        for (int kind = 0; kind < 4; kind++) {
                int fd = raw_connect(f->path);
                if (kind >= 1)
                        assert_int_equal(write(fd, preface, sizeof(preface) - 1),
                                         (ssize_t)sizeof(preface) - 1);
                if (kind == 0 || kind == 2)
                        assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
                if (kind == 3) /* a SETTINGS frame header announcing 64 bytes, then nothing */
                        assert_int_equal(write(fd, "\x00\x00\x40\x04\x00\x00\x00\x00\x00", 9), 9);
                for (int i = 0; i < 20; i++)
                        assert_true(sd_event_run(f->event, 10000) >= 0);
                close(fd);
                for (int i = 0; i < 100 && grpc_server_n_connections(f->server) > 0; i++)
                        assert_true(sd_event_run(f->event, 10000) >= 0);
                assert_int_equal(grpc_server_n_connections(f->server), 0);
                call(f, "/t.T/Echo", "ok", 2, 2000000);
                assert_int_equal(f->st.code, GRPC_STATUS_OK);
        }
}

/* The device-plugin and DRA sockets: as many silent connections as the server takes (its
 * MAX_CONNECTIONS, 64), held, then gone; a real call is answered at once after. */
static void test_connection_limit_then_released(void **state)
{
        enum { LIMIT = 64 };
        struct fixture *f = *state;
        int fds[LIMIT];
        for (int i = 0; i < LIMIT; i++) {
                fds[i] = raw_connect(f->path);
                for (int j = 0; j < 3; j++)
                        assert_true(sd_event_run(f->event, 1000) >= 0);
        }
        for (int i = 0; i < 100 && grpc_server_n_connections(f->server) < LIMIT; i++)
                assert_true(sd_event_run(f->event, 10000) >= 0);
        assert_int_equal(grpc_server_n_connections(f->server), LIMIT);
        for (int i = 0; i < LIMIT; i++)
                close(fds[i]);
        call(f, "/t.T/Echo", "ok", 2, 2000000);
        assert_int_equal(f->st.code, GRPC_STATUS_OK);
        assert_int_equal(f->resp_len, 2);
        assert_memory_equal(f->resp, "ok", 2);
}

/* Out of descriptors: accept4() fails with EMFILE while the client waits in the listen queue.
 * The server pauses accepting instead of being woken for it again at once (which spun the loop
 * and logged a line per turn), and takes the client once descriptors are free again. */
static void test_out_of_descriptors_pauses_accepting(void **state)
{
        struct fixture *f = *state;
        struct rlimit old;
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
        int waiting = raw_connect(f->path); /* queued: nothing accepted it yet */
        /* every descriptor below a small limit taken, so accept4() gets EMFILE */
        struct rlimit low = { .rlim_cur = 256, .rlim_max = old.rlim_max };
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
        int filler[256], n_filler = 0;
        for (int fd; n_filler < 256 && (fd = dup(waiting)) >= 0;)
                filler[n_filler++] = fd;
        assert_int_equal(errno, EMFILE);

        /* the listen socket stays readable: without the pause each run returned at once on it
         * (an accept4() that failed, a warning), 30 runs in well under a millisecond; paused,
         * each run waits out its 10 ms but for the retry timer's wake-ups */
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < 30; i++)
                (void)sd_event_run(f->event, 10000);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int64_t waited_ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        size_t n_conns = grpc_server_n_connections(f->server);

        for (int i = 0; i < n_filler; i++)
                close(filler[i]);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
        assert_int_equal(n_conns, 0);
        assert_true(waited_ms >= 150);
        /* Under valgrind (scripts/memcheck) the re-armed listen socket is not reported again
         * (valgrind 3.19 emulates the descriptor limit; natively, in the gcc and ASan runs, it
         * is): the rest is checked there. */
        if (RUNNING_ON_VALGRIND) {
                close(waiting);
                return;
        }
        for (int i = 0; i < 100 && grpc_server_n_connections(f->server) == 0; i++)
                assert_true(sd_event_run(f->event, 10000) >= 0);
        assert_int_equal(grpc_server_n_connections(f->server), 1);
        close(waiting);
        call(f, "/t.T/Echo", "ok", 2, 2000000);
        assert_int_equal(f->st.code, GRPC_STATUS_OK);
}

/* A hand-driven nghttp2 client that sends exactly the header fields it is given. */
struct raw_result {
        bool closed;
        uint32_t close_code; /* RST_STREAM error code, 0 after a normal end */
        int grpc_status;     /* -1: none received */
};

static int raw_on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                         size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                         void *user_data)
{
        struct raw_result *r = user_data;
        if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0)
                r->grpc_status = (int)strtol((const char *)value, NULL, 10);
        return 0;
}

static int raw_on_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                        void *user_data)
{
        struct raw_result *r = user_data;
        r->closed = true;
        r->close_code = error_code;
        return 0;
}

static ssize_t raw_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                        uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
        static const uint8_t empty_message[5] = { 0 }; /* one empty gRPC message */
        memcpy(buf, empty_message, sizeof(empty_message));
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return 5;
}

static struct raw_result raw_request(struct fixture *f, const nghttp2_nv *nv, size_t n)
{
        struct raw_result res = { .grpc_status = -1 };
        int fd = raw_connect(f->path);
        assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
        nghttp2_session_callbacks *cbs;
        assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
        nghttp2_session_callbacks_set_on_header_callback(cbs, raw_on_header);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, raw_on_close);
        nghttp2_option *opt;
        assert_int_equal(nghttp2_option_new(&opt), 0);
        nghttp2_option_set_no_http_messaging(opt, 1); /* send what we are told */
        nghttp2_session *s;
        assert_int_equal(nghttp2_session_client_new2(&s, cbs, &res, opt), 0);
        nghttp2_option_del(opt);
        nghttp2_session_callbacks_del(cbs);
        nghttp2_data_provider prd = { .read_callback = raw_body };
        assert_int_equal(nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0), 0);
        assert_true(nghttp2_submit_request(s, NULL, nv, n, &prd, NULL) > 0);
        for (int i = 0; i < 300 && !res.closed; i++) {
                const uint8_t *d;
                ssize_t k;
                while ((k = nghttp2_session_mem_send(s, &d)) > 0)
                        assert_int_equal(write(fd, d, (size_t)k), k);
                assert_true(sd_event_run(f->event, 10000) >= 0);
                uint8_t buf[16384];
                ssize_t m = read(fd, buf, sizeof(buf));
                if (m > 0)
                        assert_int_equal(nghttp2_session_mem_recv(s, buf, (size_t)m), m);
                else if (m == 0)
                        break;
        }
        nghttp2_session_del(s);
        close(fd);
        return res;
}

#define RAW_NV(n, v)                                                                               \
        {                                                                                          \
                (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, NGHTTP2_NV_FLAG_NONE \
        }
#define GOOD_HEAD RAW_NV(":method", "POST"), RAW_NV(":scheme", "http"), RAW_NV(":path", "/t.T/Echo")
#define GOOD_TAIL RAW_NV("content-type", "application/grpc"), RAW_NV("te", "trailers")

/* Kubernetes <= 1.25 sends the socket path as :authority, gRPC C-core >= 1.57 the path
 * percent-encoded, 1.26+ "localhost"; some clients send none. All are served. */
static void test_any_authority_accepted(void **state)
{
        struct fixture *f = *state;
        const nghttp2_nv with_path[] = {
                GOOD_HEAD, RAW_NV(":authority", "/var/lib/kubelet/device-plugins/x.sock"), GOOD_TAIL
        };
        const nghttp2_nv with_pct[] = {
                GOOD_HEAD, RAW_NV(":authority", "%2Fvar%2Flib%2Fkubelet%2Fdevice-plugins%2Fx.sock"),
                GOOD_TAIL
        };
        const nghttp2_nv with_localhost[] = { GOOD_HEAD, RAW_NV(":authority", "localhost"),
                                              GOOD_TAIL };
        const nghttp2_nv with_none[] = { GOOD_HEAD, GOOD_TAIL };
        const nghttp2_nv with_host_path[] = { GOOD_HEAD, GOOD_TAIL, RAW_NV("host", "/run/x.sock") };
        struct {
                const nghttp2_nv *nv;
                size_t n;
        } cases[] = {
                { with_path, ELEMENTSOF(with_path) },
                { with_pct, ELEMENTSOF(with_pct) },
                { with_localhost, ELEMENTSOF(with_localhost) },
                { with_none, ELEMENTSOF(with_none) },
                { with_host_path, ELEMENTSOF(with_host_path) },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct raw_result r = raw_request(f, cases[i].nv, cases[i].n);
                print_message("authority case %zu: closed %d code %u grpc-status %d\n", i, r.closed,
                              r.close_code, r.grpc_status);
                assert_true(r.closed);
                assert_int_equal(r.close_code, NGHTTP2_NO_ERROR);
                assert_int_equal(r.grpc_status, GRPC_STATUS_OK);
        }
}

/* Every other request rule nghttp2 would enforce still holds: the stream is reset with
 * PROTOCOL_ERROR and nothing is dispatched. */
static void test_malformed_requests_reset(void **state)
{
        struct fixture *f = *state;
        const nghttp2_nv no_path[] = { RAW_NV(":method", "POST"), RAW_NV(":scheme", "http"),
                                       GOOD_TAIL };
        const nghttp2_nv no_method[] = { RAW_NV(":scheme", "http"), RAW_NV(":path", "/t.T/Echo"),
                                         GOOD_TAIL };
        const nghttp2_nv no_scheme[] = { RAW_NV(":method", "POST"), RAW_NV(":path", "/t.T/Echo"),
                                         GOOD_TAIL };
        const nghttp2_nv twice_path[] = { GOOD_HEAD, RAW_NV(":path", "/t.T/Echo"), GOOD_TAIL };
        const nghttp2_nv twice_authority[] = { GOOD_HEAD, RAW_NV(":authority", "a"),
                                               RAW_NV(":authority", "b"), GOOD_TAIL };
        const nghttp2_nv unknown_pseudo[] = { GOOD_HEAD, RAW_NV(":protocol", "x"), GOOD_TAIL };
        const nghttp2_nv pseudo_late[] = { RAW_NV(":method", "POST"), RAW_NV(":scheme", "http"),
                                           RAW_NV("content-type", "application/grpc"),
                                           RAW_NV(":path", "/t.T/Echo") };
        const nghttp2_nv connection[] = { GOOD_HEAD, GOOD_TAIL, RAW_NV("connection", "close") };
        const nghttp2_nv te_gzip[] = { GOOD_HEAD, RAW_NV("content-type", "application/grpc"),
                                       RAW_NV("te", "gzip") };
        const nghttp2_nv chunked[] = { GOOD_HEAD, GOOD_TAIL,
                                       RAW_NV("transfer-encoding", "chunked") };
        const nghttp2_nv rel_path[] = { RAW_NV(":method", "POST"), RAW_NV(":scheme", "http"),
                                        RAW_NV(":path", "t.T/Echo"), GOOD_TAIL };
        const nghttp2_nv bad_scheme[] = { RAW_NV(":method", "POST"), RAW_NV(":scheme", "1http"),
                                          RAW_NV(":path", "/t.T/Echo"), GOOD_TAIL };
        const nghttp2_nv bad_method[] = { RAW_NV(":method", "PO ST"), RAW_NV(":scheme", "http"),
                                          RAW_NV(":path", "/t.T/Echo"), GOOD_TAIL };
        const nghttp2_nv short_body[] = { GOOD_HEAD, GOOD_TAIL, RAW_NV("content-length", "3") };
        const nghttp2_nv long_body[] = { GOOD_HEAD, GOOD_TAIL, RAW_NV("content-length", "9") };
        const nghttp2_nv authority_lf[] = { GOOD_HEAD, RAW_NV(":authority", "a\nb"), GOOD_TAIL };
        struct {
                const char *name;
                const nghttp2_nv *nv;
                size_t n;
        } cases[] = {
#define C(x) { #x, x, ELEMENTSOF(x) }
                C(no_path),         C(no_method),      C(no_scheme),   C(twice_path),
                C(twice_authority), C(unknown_pseudo), C(pseudo_late), C(connection),
                C(te_gzip),         C(chunked),        C(rel_path),    C(bad_scheme),
                C(bad_method),      C(short_body),     C(long_body),   C(authority_lf),
#undef C
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct raw_result r = raw_request(f, cases[i].nv, cases[i].n);
                print_message("%s: closed %d code %u grpc-status %d\n", cases[i].name, r.closed,
                              r.close_code, r.grpc_status);
                assert_true(r.closed);
                assert_int_equal(r.close_code, NGHTTP2_PROTOCOL_ERROR);
                assert_int_equal(r.grpc_status, -1);
        }
        call(f, "/t.T/Echo", "ok", 2, 2000000); /* and the server still serves */
        assert_int_equal(f->st.code, GRPC_STATUS_OK);
}

/* Issue 12.11: the socket is 0600 whatever the umask. */
static void test_socket_mode(void **state)
{
        struct fixture *f = *state;
        char path[160];
        snprintf(path, sizeof(path), "%s/m.sock", f->dir);
        mode_t old = umask(0);
        struct grpc_server *s = NULL;
        int r = grpc_server_new(f->event, path, methods, 3, f, &s);
        umask(old);
        assert_int_equal(r, 0);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        grpc_server_free(s);
}

/* A stream that sends part of a large message and never ends. */
struct budget_stream {
        size_t left; /* bytes still to send */
        bool prefix_sent;
};

static ssize_t budget_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                           uint32_t *data_flags, nghttp2_data_source *source, void *user_data)
{
        struct budget_stream *b = source->ptr;
        if (b->left == 0)
                return NGHTTP2_ERR_DEFERRED; /* the rest never comes */
        size_t n = b->left < length ? b->left : length;
        memset(buf, 'x', n);
        if (!b->prefix_sent) { /* a message of 3.5 MiB: within the per-message cap */
                static const uint8_t prefix[5] = { 0, 0x00, 0x38, 0x00, 0x00 };
                memcpy(buf, prefix, sizeof(prefix));
                b->prefix_sent = true;
        }
        b->left -= n;
        return (ssize_t)n;
}

struct budget_result {
        int grpc_status[8]; /* by stream index; -1: none */
        bool closed[8];
};

static int budget_on_header(nghttp2_session *session, const nghttp2_frame *frame,
                            const uint8_t *name, size_t namelen, const uint8_t *value,
                            size_t valuelen, uint8_t flags, void *user_data)
{
        struct budget_result *r = user_data;
        int i = (frame->hd.stream_id - 1) / 2;
        if (i < 8 && namelen == 11 && memcmp(name, "grpc-status", 11) == 0)
                r->grpc_status[i] = (int)strtol((const char *)value, NULL, 10);
        return 0;
}

static int budget_on_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
        struct budget_result *r = user_data;
        int i = (stream_id - 1) / 2;
        if (i < 8)
                r->closed[i] = true;
        return 0;
}

/* Issue 12.11: one peer's streams together hold at most the connection's budget (8 MiB): with
 * three streams of 3.5 MiB each the third is refused, RESOURCE_EXHAUSTED, the others stay. */
static void test_connection_memory_budget(void **state)
{
        struct fixture *f = *state;
        struct budget_result res;
        for (int i = 0; i < 8; i++)
                res.grpc_status[i] = -1, res.closed[i] = false;
        int fd = raw_connect(f->path);
        assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
        nghttp2_session_callbacks *cbs;
        assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
        nghttp2_session_callbacks_set_on_header_callback(cbs, budget_on_header);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, budget_on_close);
        nghttp2_session *s;
        assert_int_equal(nghttp2_session_client_new(&s, cbs, &res), 0);
        nghttp2_session_callbacks_del(cbs);
        /* Large windows, so flow control is not what limits the peer. */
        nghttp2_settings_entry iv[] = { { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 30 } };
        assert_int_equal(nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, iv, 1), 0);
        struct budget_stream bs[3];
        const nghttp2_nv hdrs[] = { GOOD_HEAD, GOOD_TAIL };
        for (int i = 0; i < 3; i++) {
                bs[i] = (struct budget_stream){ .left = 3u * 1024u * 1024u }; /* never all */
                nghttp2_data_provider prd = { .source.ptr = &bs[i], .read_callback = budget_body };
                assert_true(nghttp2_submit_request(s, NULL, hdrs, ELEMENTSOF(hdrs), &prd, NULL) >
                            0);
        }
        for (int i = 0; i < 3000 && res.grpc_status[2] < 0; i++) {
                const uint8_t *d;
                ssize_t k;
                while ((k = nghttp2_session_mem_send(s, &d)) > 0) {
                        ssize_t w = 0;
                        while (w < k) {
                                ssize_t x = write(fd, d + w, (size_t)(k - w));
                                if (x < 0) {
                                        assert_true(errno == EAGAIN);
                                        assert_true(sd_event_run(f->event, 1000) >= 0);
                                        continue;
                                }
                                w += x;
                        }
                }
                assert_true(sd_event_run(f->event, 1000) >= 0);
                uint8_t buf[16384];
                ssize_t m;
                while ((m = read(fd, buf, sizeof(buf))) > 0)
                        assert_int_equal(nghttp2_session_mem_recv(s, buf, (size_t)m), m);
        }
        print_message("streams: %d %d %d\n", res.grpc_status[0], res.grpc_status[1],
                      res.grpc_status[2]);
        assert_int_equal(res.grpc_status[2], GRPC_STATUS_RESOURCE_EXHAUSTED);
        assert_int_equal(res.grpc_status[0], -1);
        assert_int_equal(res.grpc_status[1], -1);
        nghttp2_session_del(s);
        close(fd);
        for (int i = 0; i < 100 && grpc_server_n_connections(f->server) > 0; i++)
                assert_true(sd_event_run(f->event, 10000) >= 0);
        call(f, "/t.T/Echo", "ok", 2, 2000000); /* the budget is free again */
        assert_int_equal(f->st.code, GRPC_STATUS_OK);
}

/* The device-plugin and DRA sockets under a flood of half-sent calls, far beyond the 64
 * connections the server takes: each client sends the preface, a call's HEADERS and the first
 * 100 bytes of a message announced at 3.5 MiB, then nothing; together they announce far more
 * than the 24 MiB the server reserves for request data. The server stays at its limit, and
 * once the clients go a call is answered, one as large as the budget lets (so whatever the
 * half-sent messages reserved was given back). */
static void test_half_sent_flood_then_released(void **state)
{
        enum { N = 200, LIMIT = 64 };
        struct fixture *f = *state;
        int fds[N];
        const nghttp2_nv hdrs[] = { GOOD_HEAD, GOOD_TAIL };
        nghttp2_session_callbacks *cbs;
        assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
        for (int i = 0; i < N; i++) {
                fds[i] = raw_connect(f->path);
                nghttp2_session *s;
                assert_int_equal(nghttp2_session_client_new(&s, cbs, NULL), 0);
                assert_int_equal(nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0), 0);
                struct budget_stream bs = { .left = 100 };
                nghttp2_data_provider prd = { .source.ptr = &bs, .read_callback = budget_body };
                assert_true(nghttp2_submit_request(s, NULL, hdrs, ELEMENTSOF(hdrs), &prd, NULL) >
                            0);
                const uint8_t *d;
                ssize_t k;
                /* a client over the limit is closed by the server: its writes may fail */
                while ((k = nghttp2_session_mem_send(s, &d)) > 0)
                        (void)send(fds[i], d, (size_t)k, MSG_NOSIGNAL | MSG_DONTWAIT);
                nghttp2_session_del(s);
                for (int j = 0; j < 3; j++)
                        assert_true(sd_event_run(f->event, 1000) >= 0);
        }
        nghttp2_session_callbacks_del(cbs);
        for (int i = 0; i < 50; i++)
                assert_true(sd_event_run(f->event, 1000) >= 0);
        assert_int_equal(grpc_server_n_connections(f->server), LIMIT);
        for (int i = 0; i < N; i++)
                close(fds[i]);
        for (int i = 0; i < 1000 && grpc_server_n_connections(f->server) > 0; i++)
                assert_true(sd_event_run(f->event, 10000) >= 0);
        assert_int_equal(grpc_server_n_connections(f->server), 0);
        size_t n = 3u * 1024u * 1024u;
        uint8_t *big = calloc(1, n);
        assert_non_null(big);
        big[0] = 'o';
        call(f, "/t.T/Echo", big, n, 5000000);
        free(big);
        assert_int_equal(f->st.code, GRPC_STATUS_OK);
        assert_int_equal(f->resp[0], 'o');
}

/* ---- graceful stop: grpc_server_quiesce, _finish_calls, _drain ---- */

/* One client connection carrying several streams, as the kubelet's to a device plugin. */
struct drain_client {
        int fd;
        nghttp2_session *s;
        int32_t closed[8]; /* stream ids in the order they ended */
        int grpc_status[8];
        size_t n_closed;
        int last_status;
        bool eof;
};

static int dc_on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                        size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                        void *user_data)
{
        struct drain_client *c = user_data;
        if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0)
                c->last_status = (int)strtol((const char *)value, NULL, 10);
        return 0;
}

static int dc_on_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                       void *user_data)
{
        struct drain_client *c = user_data;
        if (c->n_closed < 8) {
                c->closed[c->n_closed] = stream_id;
                c->grpc_status[c->n_closed++] = c->last_status;
        }
        c->last_status = -1;
        return 0;
}

static void dc_open(struct drain_client *c, const char *path)
{
        *c = (struct drain_client){ .last_status = -1 };
        c->fd = raw_connect(path);
        assert_int_equal(fcntl(c->fd, F_SETFL, O_NONBLOCK), 0);
        nghttp2_session_callbacks *cbs;
        assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
        nghttp2_session_callbacks_set_on_header_callback(cbs, dc_on_header);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, dc_on_close);
        assert_int_equal(nghttp2_session_client_new(&c->s, cbs, c), 0);
        nghttp2_session_callbacks_del(cbs);
        assert_int_equal(nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, NULL, 0), 0);
}

/* Submits a call and writes it to the socket; the server reads it whenever its loop runs. */
static int32_t dc_call(struct drain_client *c, const char *path)
{
        nghttp2_nv nv[] = { RAW_NV(":method", "POST"),
                            RAW_NV(":scheme", "http"),
                            { (uint8_t *)":path", (uint8_t *)path, 5, strlen(path),
                              NGHTTP2_NV_FLAG_NONE },
                            GOOD_TAIL };
        nghttp2_data_provider prd = { .read_callback = raw_body };
        int32_t id = nghttp2_submit_request(c->s, NULL, nv, ELEMENTSOF(nv), &prd, NULL);
        assert_true(id > 0);
        const uint8_t *d;
        ssize_t k;
        while ((k = nghttp2_session_mem_send(c->s, &d)) > 0)
                assert_int_equal(write(c->fd, d, (size_t)k), k);
        return id;
}

/* Reads what the server wrote so far (nothing of the server runs). */
static void dc_read(struct drain_client *c)
{
        uint8_t buf[16384];
        ssize_t m;
        while ((m = read(c->fd, buf, sizeof(buf))) > 0)
                assert_int_equal(nghttp2_session_mem_recv(c->s, buf, (size_t)m), m);
        if (m == 0)
                c->eof = true;
}

static void dc_close(struct drain_client *c)
{
        nghttp2_session_del(c->s);
        close(c->fd);
}

static void on_drained(struct grpc_server *s, void *userdata)
{
        *(int *)userdata += 1;
}

/* A call the client sent before the stop, still unread by the server, is answered before the
 * held stream ends (the kubelet closes the connection when it sees that end); the socket file
 * goes at once; the drain ends when the client closes. */
static void test_graceful_stop_answers_calls_already_sent(void **state)
{
        struct fixture *f = *state;
        struct drain_client c;
        dc_open(&c, f->path);
        int32_t held = dc_call(&c, "/t.T/Hold");
        for (int i = 0; i < 100 && !f->held; i++)
                assert_true(sd_event_run(f->event, 10000) >= 0);
        assert_non_null(f->held);
        int32_t echo_id = dc_call(&c, "/t.T/Echo"); /* on the wire, not read by the server */

        grpc_server_quiesce(f->server);
        assert_int_equal(access(f->path, F_OK), -1);
        grpc_server_finish_calls(f->server, NULL, NULL, GRPC_STATUS_UNAVAILABLE, "stopping");
        assert_null(f->held); /* its owner heard of the end */
        dc_read(&c);
        assert_int_equal(c.n_closed, 2);
        assert_int_equal(c.closed[0], echo_id); /* answered first ... */
        assert_int_equal(c.grpc_status[0], GRPC_STATUS_OK);
        assert_int_equal(c.closed[1], held); /* ... then the stream ended */
        assert_int_equal(c.grpc_status[1], GRPC_STATUS_UNAVAILABLE);

        int drained = 0;
        assert_int_equal(grpc_server_drain(f->server, 5000000, false, on_drained, &drained), 0);
        assert_int_equal(grpc_server_drain(f->server, 5000000, false, on_drained, &drained),
                         -EALREADY);
        /* Still served until the client closes (a call it sent meanwhile is answered). */
        int32_t late = dc_call(&c, "/t.T/Echo");
        for (int i = 0; i < 100 && c.n_closed < 3; i++) {
                assert_true(sd_event_run(f->event, 10000) >= 0);
                dc_read(&c);
        }
        assert_int_equal(c.n_closed, 3);
        assert_int_equal(c.closed[2], late);
        assert_int_equal(c.grpc_status[2], GRPC_STATUS_OK);
        assert_int_equal(drained, 0);
        dc_close(&c);
        for (int i = 0; i < 100 && !drained; i++)
                assert_true(sd_event_run(f->event, 10000) >= 0);
        assert_int_equal(drained, 1);
        assert_int_equal(grpc_server_n_connections(f->server), 0);
}

/* A peer that keeps its connection: the grace ends the drain, the connection is closed. With
 * goaway_now the GOAWAY goes out at once; a server without connections is drained at once. */
static void test_graceful_stop_grace(void **state)
{
        struct fixture *f = *state;
        struct drain_client c;
        dc_open(&c, f->path);
        (void)dc_call(&c, "/t.T/Echo");
        for (int i = 0; i < 100 && c.n_closed < 1; i++) {
                assert_true(sd_event_run(f->event, 10000) >= 0);
                dc_read(&c);
        }
        assert_int_equal(c.n_closed, 1);
        grpc_server_quiesce(f->server);
        int drained = 0;
        assert_int_equal(grpc_server_drain(f->server, 50000, true, on_drained, &drained), 0);
        for (int i = 0; i < 200 && !drained; i++) {
                assert_true(sd_event_run(f->event, 10000) >= 0);
                dc_read(&c);
        }
        assert_int_equal(drained, 1);
        assert_int_equal(grpc_server_n_connections(f->server), 0);
        dc_read(&c);
        assert_true(c.eof);
        dc_close(&c);

        struct grpc_server *empty = NULL;
        char path[160];
        snprintf(path, sizeof(path), "%s/e.sock", f->dir);
        assert_int_equal(grpc_server_new(f->event, path, methods, 3, f, &empty), 0);
        grpc_server_quiesce(empty);
        drained = 0;
        assert_int_equal(grpc_server_drain(empty, 5000000, false, on_drained, &drained), 0);
        assert_true(sd_event_run(f->event, 100000) >= 0);
        assert_int_equal(drained, 1);
        grpc_server_free(empty);
        assert_int_equal(access(path, F_OK), -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_unary_echo, setup, teardown),
                cmocka_unit_test_setup_teardown(test_error_message_roundtrip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unknown_method, setup, teardown),
                cmocka_unit_test_setup_teardown(test_oversized_request, setup, teardown),
                cmocka_unit_test_setup_teardown(test_held_stream_answered_later, setup, teardown),
                cmocka_unit_test_setup_teardown(test_deadline_and_server_notices_cancel, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_no_server, setup, teardown),
                cmocka_unit_test_setup_teardown(test_garbage_peers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_connection_limit_then_released, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_out_of_descriptors_pauses_accepting, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_any_authority_accepted, setup, teardown),
                cmocka_unit_test_setup_teardown(test_malformed_requests_reset, setup, teardown),
                cmocka_unit_test_setup_teardown(test_socket_mode, setup, teardown),
                cmocka_unit_test_setup_teardown(test_connection_memory_budget, setup, teardown),
                cmocka_unit_test_setup_teardown(test_half_sent_flood_then_released, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_graceful_stop_answers_calls_already_sent,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_graceful_stop_grace, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
