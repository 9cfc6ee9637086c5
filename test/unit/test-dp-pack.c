/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for dp_pack() and dp_pack_reply(): the bytes sent are the message's protobuf
 * encoding, which the peer decodes back to the same message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "deviceplugin.pb-c.h"
#include "deviceplugin/pb-pack.h"

/* A message with fields round-trips: the length is the packed size, the bytes decode back. */
static void test_pack_roundtrip(void **state)
{
        V1beta1__Device dev = V1BETA1__DEVICE__INIT;
        dev.id = "0000:3b:02.1";
        dev.health = "Healthy";
        V1beta1__Device *devs[] = { &dev };
        V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
        resp.n_devices = 1;
        resp.devices = devs;

        struct grpc_status st = { 0 };
        uint8_t *buf = NULL;
        size_t len = 0;
        assert_int_equal(dp_pack_reply(&resp.base, &buf, &len, &st), GRPC_STATUS_OK);
        assert_non_null(buf);
        assert_int_equal(len, v1beta1__list_and_watch_response__get_packed_size(&resp));
        V1beta1__ListAndWatchResponse *back =
            v1beta1__list_and_watch_response__unpack(NULL, len, buf);
        assert_non_null(back);
        assert_int_equal(back->n_devices, 1);
        assert_string_equal(back->devices[0]->id, "0000:3b:02.1");
        assert_string_equal(back->devices[0]->health, "Healthy");
        v1beta1__list_and_watch_response__free_unpacked(back, NULL);
        free(buf);
        assert_int_equal(st.code, GRPC_STATUS_OK);
}

/* An all-default message packs to zero bytes, still in a buffer the caller frees. */
static void test_pack_empty(void **state)
{
        V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        struct grpc_status st = { 0 };
        uint8_t *buf = NULL;
        size_t len = 99;
        assert_int_equal(dp_pack_reply(&opts.base, &buf, &len, &st), GRPC_STATUS_OK);
        assert_non_null(buf);
        assert_int_equal(len, 0);
        free(buf);

        opts.get_preferred_allocation_available = true;
        assert_int_equal(dp_pack_reply(&opts.base, &buf, &len, &st), GRPC_STATUS_OK);
        V1beta1__DevicePluginOptions *back = v1beta1__device_plugin_options__unpack(NULL, len, buf);
        assert_non_null(back);
        assert_true(back->get_preferred_allocation_available);
        assert_false(back->pre_start_required);
        v1beta1__device_plugin_options__free_unpacked(back, NULL);
        free(buf);
}

/* dp_pack() (streams and client calls) gives the same bytes as the reply form, and 0. */
static void test_pack_plain(void **state)
{
        V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        opts.pre_start_required = true;
        struct grpc_status st = { 0 };
        uint8_t *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        assert_int_equal(dp_pack(&opts.base, &a, &na), 0);
        assert_int_equal(dp_pack_reply(&opts.base, &b, &nb, &st), GRPC_STATUS_OK);
        assert_int_equal(na, v1beta1__device_plugin_options__get_packed_size(&opts));
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na);
        free(a);
        free(b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pack_roundtrip),
                cmocka_unit_test(test_pack_empty),
                cmocka_unit_test(test_pack_plain),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
