/* SPDX-License-Identifier: Apache-2.0 */
/* lib/httpd/mhd-loader: libmicrohttpd is mapped only once the metrics endpoint starts (an agent
 * without --metrics-listen never pays for it, nor for Debian's build's GnuTLS chain), and calls
 * reach it with their arguments intact, variadic ones included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <microhttpd.h>

#include "httpd/mhd-loader.h"

static bool mapped(const char *needle)
{
        FILE *f = fopen("/proc/self/maps", "re");
        assert_non_null(f);
        char line[512];
        bool found = false;
        while (!found && fgets(line, sizeof(line), f))
                found = strstr(line, needle) != NULL;
        fclose(f);
        return found;
}

static enum MHD_Result no_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
        return MHD_NO;
}

static void test_not_mapped_until_used(void **state)
{
        /* Must run first: nothing in this process has started a daemon yet. */
        assert_false(mhd_loader_loaded());
        assert_false(mapped("libmicrohttpd"));
        assert_false(mapped("libgnutls"));

        /* options through the variadic MHD_start_daemon: a limit MHD must see to refuse 0 */
        struct MHD_Daemon *d = MHD_start_daemon(
            MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, no_request, NULL,
            MHD_OPTION_CONNECTION_LIMIT, 4, MHD_OPTION_CONNECTION_TIMEOUT, 10, MHD_OPTION_END);
        assert_non_null(d);
        assert_true(mhd_loader_loaded());
        assert_null(mhd_loader_error());

        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
        assert_non_null(info);
        assert_true(info->epoll_fd >= 0);
        MHD_UNSIGNED_LONG_LONG timeout = 0;
        (void)MHD_get_timeout(d, &timeout); /* no connection: MHD_NO, and no crash */
        assert_int_equal(MHD_run(d), MHD_YES);
        MHD_stop_daemon(d);
}

static void test_responses(void **state)
{
        static char body[] = "x 1\n";
        struct MHD_Response *r =
            MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_PERSISTENT);
        assert_non_null(r);
        assert_int_equal(MHD_add_response_header(r, "Content-Type", "text/plain"), MHD_YES);
        /* a header with a line break is refused by the library itself: the call reached it */
        assert_int_equal(MHD_add_response_header(r, "X-Bad", "a\r\nb"), MHD_NO);
        MHD_destroy_response(r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_not_mapped_until_used),
                cmocka_unit_test(test_responses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
