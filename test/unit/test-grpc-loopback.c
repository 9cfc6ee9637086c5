/* Unit tests for the gRPC server and client together on a unix socket in a temp dir, on one
 * sd-event loop: unary calls, errors with percent-encoded messages, trailers-only errors,
 * unknown methods, oversized requests, a held server stream answered later (deferred data),
 * client deadlines and the server learning that a client went away. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-event.h>

#include "deviceplugin/grpc-client.h"
#include "deviceplugin/grpc-server.h"

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
        srand(42);
        for (size_t i = 0; i < sizeof(junk); i++)
                junk[i] = (uint8_t)rand();
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
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
