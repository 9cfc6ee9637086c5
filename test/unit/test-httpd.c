/* SPDX-License-Identifier: Apache-2.0 */
/* httpd/httpd.h: the --metrics-listen forms that are accepted, and those refused with a clear
 * error before anything listens; and that clients at or beyond the connection limits never stop
 * the endpoint: a scrape is answered once they are gone. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-event.h>

#include "httpd/httpd.h"

static void test_listen_forms(void **state)
{
        char host[64];
        unsigned port;
        assert_int_equal(httpd_parse_listen(":9809", host, sizeof(host), &port), 0);
        assert_string_equal(host, "");
        assert_int_equal(port, 9809);
        assert_int_equal(httpd_parse_listen("127.0.0.1:0", host, sizeof(host), &port), 0);
        assert_string_equal(host, "127.0.0.1");
        assert_int_equal(port, 0);
        assert_int_equal(httpd_parse_listen("[fd00::7]:65535", host, sizeof(host), &port), 0);
        assert_string_equal(host, "fd00::7");
        assert_int_equal(port, 65535);
        static const char *const bad[] = {
                "9809",              /* no colon */
                "::1:9809",          /* IPv6 without brackets */
                "[::1]9809",         /* no colon after the bracket */
                ":65536",            /* port out of range */
                ":-1",       ":+80", /* signs */
                ":",                 /* no port */
                "host:80x",          /* trailing garbage */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(httpd_parse_listen(bad[i], host, sizeof(host), &port), -EINVAL);
}

static void handler(struct httpd_request *req, void *userdata)
{
}

static void test_bad_address_is_refused(void **state)
{
        sd_event *e;
        struct httpd *h = NULL;
        assert_int_equal(sd_event_new(&e), 0);
        const struct httpd_options bad_host = { .listen = "node-1:9809",
                                                .path = "/metrics",
                                                .handler = handler };
        assert_int_equal(httpd_new(e, &bad_host, &h), -EINVAL); /* names are not resolved */
        assert_null(h);
        const struct httpd_options ok = { .listen = "127.0.0.1:0",
                                          .path = "/metrics",
                                          .handler = handler };
        assert_int_equal(httpd_new(e, &ok, &h), 0);
        assert_true(httpd_port(h) > 0);
        httpd_free(h);
        sd_event_unref(e);
}

static void answer_ok(struct httpd_request *req, void *userdata)
{
        char *body = strdup("ok\n");
        httpd_respond(req, 200, "text/plain", body, body ? 3 : 0);
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pump(sd_event *e, int rounds)
{
        for (int i = 0; i < rounds; i++)
                assert_true(sd_event_run(e, 1000) >= 0);
}

/* A non-blocking TCP client from a loopback address of its own (127.0.0.N). */
static int client(const char *from, int port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        struct sockaddr_in a = { .sin_family = AF_INET };
        assert_int_equal(inet_pton(AF_INET, from, &a.sin_addr), 1);
        assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int r = connect(fd, (struct sockaddr *)&to, sizeof(to));
        assert_true(r == 0 || errno == EINPROGRESS);
        return fd;
}

/* Sends a whole GET /metrics from `from` and drives the server's loop until the answer's status
 * line arrives; "" when none came within the (generous, hang-only) deadline. */
static void scrape(sd_event *e, int port, const char *from, char *status, size_t size)
{
        static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        int fd = client(from, port);
        bool sent = false;
        size_t got = 0;
        char buf[256];
        for (double end = now_s() + 30; now_s() < end;) {
                assert_true(sd_event_run(e, 10000) >= 0);
                struct pollfd p = { .fd = fd, .events = POLLOUT | POLLIN };
                if (poll(&p, 1, 0) <= 0)
                        continue;
                if (!sent && (p.revents & POLLOUT)) {
                        sent = send(fd, get, sizeof(get) - 1, MSG_NOSIGNAL) == sizeof(get) - 1;
                        continue;
                }
                ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, MSG_DONTWAIT);
                if (n > 0)
                        got += (size_t)n;
                if (n == 0 || (n < 0 && errno != EAGAIN) || memchr(buf, '\n', got))
                        break;
        }
        close(fd);
        buf[got] = 0;
        char *eol = strpbrk(buf, "\r\n");
        if (eol)
                *eol = 0;
        snprintf(status, size, "%s", buf);
}

static struct httpd *start(sd_event *e)
{
        struct httpd *h = NULL;
        const struct httpd_options o = { .listen = "127.0.0.1:0",
                                         .path = "/metrics",
                                         .handler = answer_ok };
        assert_int_equal(httpd_new(e, &o, &h), 0);
        return h;
}

/* Exactly the limits, from two addresses (half of the total each), without a byte sent; they
 * go; the next scrape is answered. On the way, a connection over its address's half is told
 * 503, not dropped. */
static void test_limit_reached_then_released(void **state)
{
        enum { MAX = HTTPD_MAX_CONNECTIONS };
        sd_event *e;
        assert_int_equal(sd_event_new(&e), 0);
        struct httpd *h = start(e);
        int port = httpd_port(h);
        int fds[MAX];
        for (int i = 0; i < MAX - 1; i++) {
                fds[i] = client(i < MAX / 2 ? "127.0.0.1" : "127.0.0.2", port);
                pump(e, 5);
        }
        pump(e, 20);
        char status[256];
        scrape(e, port, "127.0.0.1", status, sizeof(status)); /* its half is taken */
        assert_string_equal(status, "HTTP/1.1 503 Service Unavailable");
        fds[MAX - 1] = client("127.0.0.2", port); /* the total limit, exactly */
        pump(e, 20);
        for (int i = 0; i < MAX; i++)
                close(fds[i]);
        scrape(e, port, "127.0.0.1", status, sizeof(status));
        assert_string_equal(status, "HTTP/1.1 200 OK");
        /* and again: the endpoint did not answer only once */
        scrape(e, port, "127.0.0.2", status, sizeof(status));
        assert_string_equal(status, "HTTP/1.1 200 OK");
        httpd_free(h);
        sd_event_unref(e);
}

/* The agent's handler answers later, from the loop (it waits for the kubelet): here every
 * waiting request is answered 50 ms after the last one came. */
struct later {
        sd_event_source *timer;
        struct httpd_request *waiting[HTTPD_MAX_CONNECTIONS];
        size_t n;
};

static int answer_waiting(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct later *l = userdata;
        for (size_t i = 0; i < l->n; i++) {
                char *body = strdup("ok\n");
                httpd_respond(l->waiting[i], 200, "text/plain", body, body ? 3 : 0);
        }
        l->n = 0;
        return 0;
}

static void answer_later(struct httpd_request *req, void *userdata)
{
        struct later *l = userdata;
        assert_true(l->n < HTTPD_MAX_CONNECTIONS);
        l->waiting[l->n++] = req;
        assert_int_equal(sd_event_source_set_time_relative(l->timer, 50 * 1000), 0);
        assert_int_equal(sd_event_source_set_enabled(l->timer, SD_EVENT_ONESHOT), 0);
}

/* Ordinary scrapers, as many as the limit, from two addresses, all at once, each waiting for
 * its answer: every one is answered, and so are the scrapes after them. */
static void test_concurrent_scrapers_at_limit(void **state)
{
        enum { MAX = HTTPD_MAX_CONNECTIONS };
        static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        sd_event *e;
        assert_int_equal(sd_event_new(&e), 0);
        struct later l = { .n = 0 };
        assert_int_equal(
            sd_event_add_time_relative(e, &l.timer, CLOCK_MONOTONIC, 0, 1000, answer_waiting, &l),
            0);
        assert_int_equal(sd_event_source_set_enabled(l.timer, SD_EVENT_OFF), 0);
        struct httpd *h = NULL;
        const struct httpd_options o = {
                .listen = "127.0.0.1:0", .path = "/metrics", .handler = answer_later, .userdata = &l
        };
        assert_int_equal(httpd_new(e, &o, &h), 0);
        int port = httpd_port(h);
        int fds[MAX];
        bool sent[MAX] = { false }, done[MAX] = { false };
        char got[MAX][64];
        size_t n[MAX] = { 0 };
        for (int i = 0; i < MAX; i++)
                fds[i] = client(i < MAX / 2 ? "127.0.0.1" : "127.0.0.2", port);
        int answered = 0;
        for (double end = now_s() + 30; answered < MAX && now_s() < end;) {
                assert_true(sd_event_run(e, 10000) >= 0);
                for (int i = 0; i < MAX; i++) {
                        if (done[i])
                                continue;
                        if (!sent[i]) {
                                sent[i] = send(fds[i], get, sizeof(get) - 1,
                                               MSG_NOSIGNAL | MSG_DONTWAIT) == sizeof(get) - 1;
                                continue;
                        }
                        ssize_t k =
                            recv(fds[i], got[i] + n[i], sizeof(got[i]) - 1 - n[i], MSG_DONTWAIT);
                        if (k > 0)
                                n[i] += (size_t)k;
                        if (k == 0 || (k < 0 && errno != EAGAIN) || memchr(got[i], '\n', n[i]) ||
                            n[i] == sizeof(got[i]) - 1) {
                                done[i] = true;
                                answered++;
                        }
                }
        }
        for (int i = 0; i < MAX; i++) {
                got[i][n[i]] = 0;
                char *eol = strpbrk(got[i], "\r\n");
                if (eol)
                        *eol = 0;
                assert_string_equal(got[i], "HTTP/1.1 200 OK");
                close(fds[i]);
        }
        char status[256];
        scrape(e, port, "127.0.0.1", status, sizeof(status));
        assert_string_equal(status, "HTTP/1.1 200 OK");
        scrape(e, port, "127.0.0.2", status, sizeof(status));
        assert_string_equal(status, "HTTP/1.1 200 OK");
        httpd_free(h);
        sd_event_source_unref(l.timer);
        sd_event_unref(e);
}

/* Hundreds of requests stopped half-way, from eight addresses, held while the server runs;
 * once they are gone a scrape is answered. (Some of them may hold their slot until the
 * whole-request deadline: libmicrohttpd can miss an end of stream that arrives together with
 * the request's first bytes. The deadline here only catches a hang.) */
static void test_half_sent_requests(void **state)
{
        static const char half[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
        enum { N = 200 };
        sd_event *e;
        assert_int_equal(sd_event_new(&e), 0);
        struct httpd *h = start(e);
        int port = httpd_port(h);
        int fds[N];
        bool sent[N] = { false };
        for (int i = 0; i < N; i++) {
                char from[32];
                snprintf(from, sizeof(from), "127.0.0.%d", 1 + i % 8);
                fds[i] = client(from, port);
                pump(e, 1);
        }
        for (int round = 0; round < 100; round++) {
                pump(e, 2);
                for (int i = 0; i < N; i++)
                        if (!sent[i])
                                sent[i] = send(fds[i], half, sizeof(half) - 1,
                                               MSG_NOSIGNAL | MSG_DONTWAIT) > 0;
        }
        for (int i = 0; i < N; i++)
                close(fds[i]);
        char status[256];
        scrape(e, port, "127.0.0.1", status, sizeof(status));
        assert_string_equal(status, "HTTP/1.1 200 OK");
        httpd_free(h);
        sd_event_unref(e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_listen_forms),
                cmocka_unit_test(test_bad_address_is_refused),
                cmocka_unit_test(test_limit_reached_then_released),
                cmocka_unit_test(test_concurrent_scrapers_at_limit),
                cmocka_unit_test(test_half_sent_requests),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
