/* SPDX-License-Identifier: Apache-2.0 */
/* httpd/httpd.h: the --metrics-listen forms that are accepted, and those refused with a clear
 * error before anything listens. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_listen_forms),
                cmocka_unit_test(test_bad_address_is_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
