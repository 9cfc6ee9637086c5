/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/cni/ipam: running the IPAM plugin while a VF's lock is held. A plugin that
 * hangs is killed after the time given, and a plugin that answers more than a pipe holds before
 * it has read all of its stdin does not deadlock with the plugin feeding it (stand-in plugins
 * are shell scripts in a temporary CNI_PATH). */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cni/ipam.h"

static int setup(void **state)
{
        char *dir = strdup("/tmp/sriov-test-cni-ipam-XXXXXX");
        assert_non_null(mkdtemp(dir));
        *state = dir;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

static int teardown(void **state)
{
        assert_int_equal(nftw(*state, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(*state);
        return 0;
}

static void write_plugin(const char *dir, const char *name, const char *script)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "#!/bin/sh\n%s\n", script);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(chmod(path, 0755), 0);
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_hung_plugin_is_killed(void **state)
{
        const char *dir = *state;
        write_plugin(dir, "hangs", "exec sleep 30");
        char *out = NULL;
        size_t out_len = 0;
        struct cni_error e = { 0 };
        double t0 = now_s();
        alarm(20); /* a plugin waited for without bound is a failure, not a hung test */
        int r = cni_ipam_exec("hangs", "ADD", dir, "{}", 2, 300, &out, &out_len, &e);
        alarm(0);
        assert_int_equal(r, -ETIMEDOUT);
        /* killed at its 0.3 s timeout, not waited for (30 s): the bound leaves room for a
         * slow fork and exec under valgrind */
        assert_true(now_s() - t0 < 15);
        assert_non_null(strstr(e.msg, "IPAM plugin hangs ADD did not finish"));
        assert_null(out);
}

static void test_large_answer_before_reading_stdin(void **state)
{
        const char *dir = *state;
        /* 256 KiB out before a byte of its 512 KiB stdin is read: both pipes fill up unless the
         * caller reads while it writes */
        write_plugin(dir, "chatty",
                     "head -c 262144 /dev/zero | tr '\\000' ' '\n"
                     "n=$(wc -c)\n"
                     "printf '{\"read\":%d}' \"$n\"");
        size_t in_len = 512 * 1024;
        char *in = malloc(in_len);
        assert_non_null(in);
        memset(in, ' ', in_len);
        char *out = NULL;
        size_t out_len = 0;
        struct cni_error e = { 0 };
        alarm(20);
        int r = cni_ipam_exec("chatty", "ADD", dir, in, in_len, 10000, &out, &out_len, &e);
        alarm(0);
        free(in);
        assert_int_equal(r, 0);
        char want[64];
        snprintf(want, sizeof(want), "{\"read\":%zu}", in_len);
        assert_int_equal(out_len, 262144 + strlen(want));
        assert_string_equal(out + 262144, want);
        free(out);
}

static void test_failing_plugin_message(void **state)
{
        const char *dir = *state;
        write_plugin(dir, "refuses",
                     "cat >/dev/null\n"
                     "echo '{\"code\":11,\"msg\":\"no addresses left\",\"details\":\"pool x\"}'\n"
                     "exit 1");
        char *out = NULL;
        size_t out_len = 0;
        struct cni_error e = { 0 };
        assert_int_equal(cni_ipam_exec("refuses", "ADD", dir, "{}", 2, 10000, &out, &out_len, &e),
                         -EIO);
        assert_string_equal(e.msg, "IPAM plugin refuses ADD failed: no addresses left: pool x");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_hung_plugin_is_killed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_large_answer_before_reading_stdin, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_failing_plugin_message, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
