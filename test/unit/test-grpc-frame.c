/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for gRPC message framing and grpc-status/grpc-message encoding. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grpc/grpc-frame.h"
#include "grpc/grpc-status.h"

static void test_encode_prefix(void **state)
{
        uint8_t *b = NULL;
        size_t n = 0;
        assert_int_equal(grpc_frame_encode((const uint8_t *)"abc", 3, &b, &n), 0);
        assert_int_equal(n, 8);
        const uint8_t want[] = { 0, 0, 0, 0, 3, 'a', 'b', 'c' };
        assert_memory_equal(b, want, sizeof(want));
        free(b);
        assert_int_equal(grpc_frame_encode(NULL, 0, &b, &n), 0);
        assert_int_equal(n, 5);
        free(b);
}

/* Two messages fed one byte at a time come out whole, in order, and only when complete. */
static void test_reassembly_bytewise(void **state)
{
        uint8_t *a, *b;
        size_t na, nb;
        assert_int_equal(grpc_frame_encode((const uint8_t *)"hello", 5, &a, &na), 0);
        assert_int_equal(grpc_frame_encode(NULL, 0, &b, &nb), 0);
        uint8_t stream[32];
        memcpy(stream, a, na);
        memcpy(stream + na, b, nb);

        struct grpc_frame_reader r;
        grpc_frame_reader_init(&r, 0);
        uint8_t *msg;
        size_t len;
        int got = 0;
        for (size_t i = 0; i < na + nb; i++) {
                assert_int_equal(grpc_frame_reader_feed(&r, stream + i, 1), 0);
                int k;
                while ((k = grpc_frame_reader_next(&r, &msg, &len)) == 1) {
                        if (got == 0) {
                                assert_int_equal(i, na - 1); /* not before its last byte */
                                assert_int_equal(len, 5);
                                assert_memory_equal(msg, "hello", 5);
                        } else {
                                assert_int_equal(len, 0);
                                assert_null(msg);
                        }
                        free(msg);
                        got++;
                }
                assert_int_equal(k, 0);
        }
        assert_int_equal(got, 2);
        assert_false(grpc_frame_reader_has_partial(&r));
        grpc_frame_reader_done(&r);
        free(a);
        free(b);
}

static void test_oversized_refused_from_prefix(void **state)
{
        struct grpc_frame_reader r;
        grpc_frame_reader_init(&r, 1024);
        const uint8_t prefix[] = { 0, 0, 0, 0x04, 0x01 }; /* 1025 bytes announced */
        assert_int_equal(grpc_frame_reader_feed(&r, prefix, 3), 0);
        assert_int_equal(grpc_frame_reader_feed(&r, prefix + 3, 2), -EMSGSIZE);
        grpc_frame_reader_done(&r);

        /* The default cap is 4 MiB. */
        grpc_frame_reader_init(&r, 0);
        const uint8_t big[] = { 0, 0, 0x40, 0, 0x01 };
        assert_int_equal(grpc_frame_reader_feed(&r, big, 5), -EMSGSIZE);
        grpc_frame_reader_done(&r);
}

static void test_many_small_messages_bounded(void **state)
{
        struct grpc_frame_reader r;
        grpc_frame_reader_init(&r, 64);
        const uint8_t small[] = { 0, 0, 0, 0, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
        int k = 0;
        for (int i = 0; i < 10 && k == 0; i++)
                k = grpc_frame_reader_feed(&r, small, sizeof(small));
        assert_int_equal(k, -EMSGSIZE);
        grpc_frame_reader_done(&r);
}

static void test_compressed_and_garbage(void **state)
{
        struct grpc_frame_reader r;
        grpc_frame_reader_init(&r, 0);
        const uint8_t compressed[] = { 1, 0, 0, 0, 1, 'x' };
        assert_int_equal(grpc_frame_reader_feed(&r, compressed, sizeof(compressed)), -EPROTO);
        grpc_frame_reader_done(&r);
        grpc_frame_reader_init(&r, 0);
        assert_int_equal(grpc_frame_reader_feed(&r, (const uint8_t *)"GET / HTTP/1.1", 14),
                         -EBADMSG);
        grpc_frame_reader_done(&r);
}

static void test_partial(void **state)
{
        struct grpc_frame_reader r;
        grpc_frame_reader_init(&r, 0);
        const uint8_t part[] = { 0, 0, 0, 0, 4, 'a' };
        assert_int_equal(grpc_frame_reader_feed(&r, part, sizeof(part)), 0);
        uint8_t *msg;
        size_t len;
        assert_int_equal(grpc_frame_reader_next(&r, &msg, &len), 0);
        assert_true(grpc_frame_reader_has_partial(&r));
        grpc_frame_reader_done(&r);
}

static void test_percent_encoding(void **state)
{
        char *e = grpc_percent_encode("unknown device \"x\" 100%\nh\xc3\xa9");
        assert_string_equal(e, "unknown device \"x\" 100%25%0Ah%C3%A9");
        char *d = grpc_percent_decode(e, strlen(e));
        assert_string_equal(d, "unknown device \"x\" 100%\nh\xc3\xa9");
        free(e);
        free(d);
        /* Malformed escapes are kept literally, like grpc-go does. */
        d = grpc_percent_decode("a%zzb%4", 7);
        assert_string_equal(d, "a%zzb%4");
        free(d);
}

static void test_status_names(void **state)
{
        assert_string_equal(grpc_status_to_string(GRPC_STATUS_OK), "OK");
        assert_string_equal(grpc_status_to_string(GRPC_STATUS_INVALID_ARGUMENT),
                            "INVALID_ARGUMENT");
        assert_string_equal(grpc_status_to_string(GRPC_STATUS_RESOURCE_EXHAUSTED),
                            "RESOURCE_EXHAUSTED");
        assert_string_equal(grpc_status_to_string(99), "UNKNOWN_STATUS");
        struct grpc_status st;
        assert_int_equal(grpc_fail(&st, GRPC_STATUS_NOT_FOUND, "no %s", "thing"),
                         GRPC_STATUS_NOT_FOUND);
        assert_string_equal(st.message, "no thing");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_encode_prefix),
                cmocka_unit_test(test_reassembly_bytewise),
                cmocka_unit_test(test_oversized_refused_from_prefix),
                cmocka_unit_test(test_many_small_messages_bounded),
                cmocka_unit_test(test_compressed_and_garbage),
                cmocka_unit_test(test_partial),
                cmocka_unit_test(test_percent_encoding),
                cmocka_unit_test(test_status_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
