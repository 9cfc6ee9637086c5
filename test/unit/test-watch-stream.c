/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/kube/watch-stream: splitting a watch body into events at any chunk
 * boundary, the 16 MiB per-event cap, and garbage handling. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/watch-stream.h"

struct seen {
        int n;
        enum kube_watch_event_type types[16];
        char names[16][64];
        int stop_after; /* callback error after this many events, 0 = never */
};

static int on_event(enum kube_watch_event_type type, json_t *object, void *userdata)
{
        struct seen *s = userdata;
        if (s->n < 16) {
                s->types[s->n] = type;
                const char *name =
                    json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
                snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name ? name : "");
        }
        s->n++;
        if (s->stop_after && s->n >= s->stop_after)
                return -ECANCELED;
        return 0;
}

static const char body[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}\n";

static void check_all_events(const struct seen *s)
{
        assert_int_equal(s->n, 5);
        assert_int_equal(s->types[0], KUBE_WATCH_ADDED);
        assert_string_equal(s->names[0], "a");
        assert_int_equal(s->types[1], KUBE_WATCH_MODIFIED);
        assert_string_equal(s->names[1], "b");
        assert_int_equal(s->types[2], KUBE_WATCH_BOOKMARK);
        assert_int_equal(s->types[3], KUBE_WATCH_DELETED);
        assert_string_equal(s->names[3], "c");
        assert_int_equal(s->types[4], KUBE_WATCH_ERROR);
}

static void test_whole_body(void **state)
{
        struct kube_watch_stream ws;
        struct seen s = {};
        kube_watch_stream_init(&ws, 0);
        assert_int_equal(kube_watch_stream_feed(&ws, body, strlen(body), on_event, &s), 0);
        check_all_events(&s);
        assert_int_equal(kube_watch_stream_pending(&ws), 0);
        kube_watch_stream_done(&ws);
}

static void test_every_split_point(void **state)
{
        /* Chunk boundaries fall anywhere: every two-piece and byte-by-byte split must agree. */
        size_t n = strlen(body);
        for (size_t cut = 0; cut <= n; cut++) {
                struct kube_watch_stream ws;
                struct seen s = {};
                kube_watch_stream_init(&ws, 0);
                assert_int_equal(kube_watch_stream_feed(&ws, body, cut, on_event, &s), 0);
                assert_int_equal(kube_watch_stream_feed(&ws, body + cut, n - cut, on_event, &s), 0);
                check_all_events(&s);
                kube_watch_stream_done(&ws);
        }
        struct kube_watch_stream ws;
        struct seen s = {};
        kube_watch_stream_init(&ws, 0);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(kube_watch_stream_feed(&ws, body + i, 1, on_event, &s), 0);
        check_all_events(&s);
        kube_watch_stream_done(&ws);
}

static void test_partial_line_pending(void **state)
{
        struct kube_watch_stream ws;
        struct seen s = {};
        kube_watch_stream_init(&ws, 0);
        const char *half = "{\"type\":\"ADDED\",\"obj";
        assert_int_equal(kube_watch_stream_feed(&ws, half, strlen(half), on_event, &s), 0);
        assert_int_equal(s.n, 0);
        assert_int_equal(kube_watch_stream_pending(&ws), strlen(half));
        kube_watch_stream_reset(&ws);
        assert_int_equal(kube_watch_stream_pending(&ws), 0);
        kube_watch_stream_done(&ws);
}

static void test_unbounded_cap(void **state)
{
        /* A cap of SIZE_MAX means "no cap": the line buffer's size arithmetic (cap + 1,
         * doubling) must not wrap to a zero-sized buffer that the next chunk overruns. */
        size_t n = strlen(body);
        for (size_t cut = 1; cut < n; cut += 7) {
                struct kube_watch_stream ws;
                struct seen s = {};
                kube_watch_stream_init(&ws, SIZE_MAX);
                assert_int_equal(kube_watch_stream_feed(&ws, body, cut, on_event, &s), 0);
                assert_true(kube_watch_stream_pending(&ws) == 0 ||
                            ws.alloc > kube_watch_stream_pending(&ws));
                assert_int_equal(kube_watch_stream_feed(&ws, body + cut, n - cut, on_event, &s), 0);
                check_all_events(&s);
                kube_watch_stream_done(&ws);
        }
}

static void test_garbage(void **state)
{
        const char *bad[] = {
                "{\"type\":\"ADDED\",\"object\":{\"kind\":,,garbled]\n",
                "not json at all\n",
                "{\"type\":\"ADDED\"}\n",                       /* no object */
                "{\"type\":\"EXPLODED\",\"object\":{}}\n",      /* unknown type */
                "{\"type\":\"ADDED\",\"object\":\"string\"}\n", /* object not an object */
                "[1,2,3]\n",
                "{\"type\":\"ADDED\",\"type\":\"DELETED\",\"object\":{}}\n", /* duplicate key */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct kube_watch_stream ws;
                struct seen s = {};
                kube_watch_stream_init(&ws, 0);
                const char *good =
                    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"ok\"}}}\n";
                assert_int_equal(kube_watch_stream_feed(&ws, good, strlen(good), on_event, &s), 0);
                assert_int_equal(kube_watch_stream_feed(&ws, bad[i], strlen(bad[i]), on_event, &s),
                                 -EBADMSG);
                assert_true(strlen(ws.error) > 0);
                /* The stream stays failed: nothing after garbage is trusted. */
                assert_int_equal(kube_watch_stream_feed(&ws, good, strlen(good), on_event, &s),
                                 -EBADMSG);
                assert_int_equal(s.n, 1);
                kube_watch_stream_done(&ws);
        }
}

/* An event whose object cannot be decoded (an integer beyond 64 bits) is delivered as a named
 * stub and the stream goes on; the events after it arrive. */
static void test_undecodable_object_isolated(void **state)
{
        struct kube_watch_stream ws;
        struct seen s = {};
        kube_watch_stream_init(&ws, 0);
        const char *text = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"huge\"},"
                           "\"spec\":{\"mtu\":100000000000000000000}}}\n"
                           "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"next\"}}}\n";
        assert_int_equal(kube_watch_stream_feed(&ws, text, strlen(text), on_event, &s), 0);
        assert_int_equal(s.n, 2);
        assert_int_equal(s.types[0], KUBE_WATCH_MODIFIED);
        assert_string_equal(s.names[0], "huge");
        assert_string_equal(s.names[1], "next");
        kube_watch_stream_done(&ws);
}

static void test_callback_error_stops(void **state)
{
        struct kube_watch_stream ws;
        struct seen s = { .stop_after = 2 };
        kube_watch_stream_init(&ws, 0);
        assert_int_equal(kube_watch_stream_feed(&ws, body, strlen(body), on_event, &s), -ECANCELED);
        assert_int_equal(s.n, 2);
        kube_watch_stream_done(&ws);
}

static void test_oversized_event(void **state)
{
        /* One event of 17 MiB, fed in 64 KiB chunks like a socket would: rejected once the cap
         * is crossed, without buffering more than the cap. */
        size_t size = 17u * 1024 * 1024;
        char *big = malloc(size + 1);
        assert_non_null(big);
        const char *head =
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"big\"},\"pad\":\"";
        memset(big, 'x', size);
        /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): fed by length, not a string */
        memcpy(big, head, strlen(head));
        /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): fed by length, not a string */
        memcpy(big + size - 4, "\"}}\n", 4);

        struct kube_watch_stream ws;
        struct seen s = {};
        kube_watch_stream_init(&ws, 0);
        assert_int_equal(ws.max_line, KUBE_WATCH_MAX_EVENT);
        int r = 0;
        size_t fed = 0;
        for (size_t off = 0; off < size && r == 0; off += 65536) {
                size_t n = size - off < 65536 ? size - off : 65536;
                r = kube_watch_stream_feed(&ws, big + off, n, on_event, &s);
                fed = off + n;
        }
        assert_int_equal(r, -EFBIG);
        assert_true(fed <= KUBE_WATCH_MAX_EVENT + 65536);
        assert_true(ws.alloc <= KUBE_WATCH_MAX_EVENT + 1);
        assert_int_equal(s.n, 0);
        assert_non_null(strstr(ws.error, "larger than"));

        /* Just under the cap is fine, in one piece too. */
        kube_watch_stream_reset(&ws);
        size_t ok_size = KUBE_WATCH_MAX_EVENT - 16;
        /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): fed by length, not a string */
        memcpy(big + ok_size - 4, "\"}}\n", 4);
        assert_int_equal(kube_watch_stream_feed(&ws, big, ok_size, on_event, &s), 0);
        assert_int_equal(s.n, 1);
        assert_string_equal(s.names[0], "big");
        kube_watch_stream_done(&ws);
        free(big);
}

static void test_small_cap(void **state)
{
        struct kube_watch_stream ws;
        struct seen s = {};
        kube_watch_stream_init(&ws, 32);
        const char *line =
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"toolong\"}}}\n";
        assert_int_equal(kube_watch_stream_feed(&ws, line, strlen(line), on_event, &s), -EFBIG);
        kube_watch_stream_done(&ws);
}

/* A large event (a NodeState with hundreds of VFs) arriving in chunks needs a line buffer as
 * large as itself; once decoded, the buffer is not kept resident for the next small event. */
static void test_large_event_buffer_released(void **state)
{
        (void)state;
        const size_t pad = 300 * 1024;
        const char head[] = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"big\"},"
                            "\"pad\":\"";
        const char tail[] = "\"}}\n";
        size_t len = sizeof(head) - 1 + pad + sizeof(tail) - 1;
        char *line = malloc(len);
        assert_non_null(line);
        memcpy(line, head, sizeof(head) - 1);
        memset(line + sizeof(head) - 1, 'x', pad);
        memcpy(line + sizeof(head) - 1 + pad, tail, sizeof(tail) - 1);

        struct kube_watch_stream ws;
        kube_watch_stream_init(&ws, 0);
        struct seen s = {};
        for (size_t off = 0; off < len; off += 16384) {
                size_t n = len - off < 16384 ? len - off : 16384;
                assert_int_equal(kube_watch_stream_feed(&ws, line + off, n, on_event, &s), 0);
        }
        assert_int_equal(s.n, 1);
        assert_string_equal(s.names[0], "big");
        assert_true(ws.alloc <= KUBE_WATCH_KEEP_BUFFER);
        /* and the stream goes on */
        assert_int_equal(kube_watch_stream_feed(&ws, body, sizeof(body) - 1, on_event, &s), 0);
        assert_int_equal(s.n, 6);
        kube_watch_stream_done(&ws);
        free(line);
}

static void test_type_strings(void **state)
{
        for (int i = 0; i < _KUBE_WATCH_EVENT_TYPE_MAX; i++)
                assert_int_equal(
                    kube_watch_event_type_from_string(kube_watch_event_type_to_string(i)), i);
        assert_int_equal(kube_watch_event_type_from_string("added"), -EINVAL);
        assert_int_equal(kube_watch_event_type_from_string(NULL), -EINVAL);
        assert_null(kube_watch_event_type_to_string(_KUBE_WATCH_EVENT_TYPE_MAX));
}

static int count_only(enum kube_watch_event_type type, json_t *object, void *userdata)
{
        (*(unsigned *)userdata)++;
        return 0;
}

static void test_random_bytes_never_crash(void **state)
{
        /* Deterministic noise, split at random points, with valid events mixed in: the
         * splitter must only ever deliver events or fail cleanly. */
        unsigned seed = 12345, delivered = 0;
        char buf[512];
        for (int round = 0; round < 2000; round++) {
                struct kube_watch_stream ws;
                kube_watch_stream_init(&ws, 256);
                size_t len = (size_t)(rand_r(&seed) % sizeof(buf));
                for (size_t i = 0; i < len; i++) {
                        int r = rand_r(&seed) % 8;
                        buf[i] = r == 0 ? '\n' : r == 1 ? '{' : r == 2 ? '"' : (char)rand_r(&seed);
                }
                static const char valid[] = "{\"type\":\"ADDED\",\"object\":{}}\n";
                if (round % 3 == 0 && len > sizeof(valid))
                        memcpy(buf, valid, sizeof(valid) - 1);
                size_t off = 0;
                while (off < len) {
                        size_t n = 1 + (size_t)(rand_r(&seed) % 64);
                        if (n > len - off)
                                n = len - off;
                        int k = kube_watch_stream_feed(&ws, buf + off, n, count_only, &delivered);
                        assert_true(k == 0 || k == -EBADMSG || k == -EFBIG);
                        off += n;
                }
                kube_watch_stream_done(&ws);
        }
        assert_true(delivered > 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_whole_body),
                cmocka_unit_test(test_every_split_point),
                cmocka_unit_test(test_partial_line_pending),
                cmocka_unit_test(test_unbounded_cap),
                cmocka_unit_test(test_garbage),
                cmocka_unit_test(test_undecodable_object_isolated),
                cmocka_unit_test(test_callback_error_stops),
                cmocka_unit_test(test_oversized_event),
                cmocka_unit_test(test_small_cap),
                cmocka_unit_test(test_large_event_buffer_released),
                cmocka_unit_test(test_type_strings),
                cmocka_unit_test(test_random_bytes_never_crash),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
