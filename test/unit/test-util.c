/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/util: strict number parsing, sysfs-style file reads and name checks. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/array.h"
#include "util/dl.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/names.h"
#include "util/parse.h"
#include "util/yaml-json.h"

/* Appending n elements reallocates O(log n) times, keeps every element, and a capacity below
 * the count (an array allocated to exactly n elsewhere) still grows safely. */
static void test_grow_array(void **state)
{
        (void)state;
        int *items = NULL;
        size_t n = 0, cap = 0, reallocs = 0;

        for (int i = 0; i < 100000; i++) {
                size_t before = cap;
                assert_int_equal(GROW_ARRAY(items, cap, n + 1), 0);
                assert_true(cap >= n + 1);
                if (!items) { /* fail() does not return; clang's analyzer does not know */
                        fail();
                        break;
                }
                reallocs += cap != before;
                items[n++] = i;
        }
        assert_true(reallocs <= 20);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(items[i], (int)i);
        /* enough room already: nothing changes */
        int *same = items;
        size_t cap_before = cap;
        assert_int_equal(GROW_ARRAY(items, cap, n), 0);
        assert_ptr_equal(items, same);
        assert_int_equal(cap, cap_before);
        /* overflowing sizes fail and leave the array as it was */
        assert_int_equal(GROW_ARRAY(items, cap, SIZE_MAX / sizeof(int) + 1), -ENOMEM);
        assert_ptr_equal(items, same);
        assert_int_equal(cap, cap_before);
        free(items);

        int *exact = malloc(3 * sizeof(int));
        assert_non_null(exact);
        exact[0] = 7, exact[1] = 8, exact[2] = 9;
        size_t exact_cap = 0, exact_n = 3;
        assert_int_equal(GROW_ARRAY(exact, exact_cap, exact_n + 1), 0);
        assert_true(exact_cap >= exact_n + 1);
        /* cppcheck-suppress arrayIndexOutOfBounds ; GROW_ARRAY() reallocated it */
        exact[exact_n++] = 10;
        const int want[] = { 7, 8, 9, 10 };
        assert_memory_equal(exact, want, sizeof(want));
        free(exact);
}

static void test_parse_int(void **state)
{
        int v = 0;
        assert_int_equal(parse_int("42", &v), 0);
        assert_int_equal(v, 42);
        assert_int_equal(parse_int("-1\n", &v), 0);
        assert_int_equal(v, -1);
        assert_int_equal(parse_int("", &v), -EINVAL);
        assert_int_equal(parse_int("4x", &v), -EINVAL);
        assert_int_equal(parse_int("abc", &v), -EINVAL);
        assert_int_equal(parse_int("99999999999", &v), -ERANGE);
}

static void test_parse_hex(void **state)
{
        uint32_t v = 0;
        assert_int_equal(parse_hex_u32("0x15b3", &v), 0);
        assert_int_equal(v, 0x15b3);
        assert_int_equal(parse_hex_u32("8086\n", &v), 0);
        assert_int_equal(v, 0x8086);
        assert_int_equal(parse_hex_u32("0x", &v), -EINVAL);
        assert_int_equal(parse_hex_u32("zz", &v), -EINVAL);
        assert_int_equal(parse_hex_u32("-1", &v), -EINVAL);
}

static void test_parse_on_off(void **state)
{
        int v = -1;
        assert_int_equal(parse_on_off("on", &v), 0);
        assert_int_equal(v, 1);
        assert_int_equal(parse_on_off("off", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(parse_on_off("yes", &v), -EINVAL);
        assert_int_equal(parse_on_off("On", &v), -EINVAL);
        assert_int_equal(parse_on_off("", &v), -EINVAL);
        assert_int_equal(v, 0); /* untouched by a refusal */
}

static void test_dl_load_symbols(void **state)
{
        size_t (*len)(const char *) = NULL;
        void *missing = NULL;
        char error[128] = "";

        const struct dl_symbol ok[] = { { "strlen", (void **)&len } };
        assert_int_equal(dl_load_symbols("libc.so.6", ok, 1, error, sizeof(error)), 0);
        assert_non_null(len);
        assert_int_equal(len("four"), 4);
        assert_true(dl_is_loaded("libc.so.6"));

        const struct dl_symbol bad[] = { { "strlen", (void **)&len },
                                         { "sriov_no_such_symbol", &missing } };
        assert_int_equal(dl_load_symbols("libc.so.6", bad, 2, error, sizeof(error)), -ENOENT);
        assert_non_null(strstr(error, "libc.so.6: no symbol sriov_no_such_symbol"));

        assert_int_equal(dl_load_symbols("libsriov-no-such.so.9", ok, 1, error, sizeof(error)),
                         -ENOENT);
        assert_non_null(strstr(error, "libsriov-no-such.so.9"));
        assert_false(dl_is_loaded("libsriov-no-such.so.9"));
}

static void test_read_files(void **state)
{
        char dir[] = "/tmp/sriov-test-util-XXXXXX";
        char path[256], buf[8];
        int v;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/attr", dir);
        assert_int_equal(write_file_atomic(path, "7\n", 2, 0644), 0);
        assert_int_equal(read_int_file(path, &v), 0);
        assert_int_equal(v, 7);
        assert_int_equal(write_file_atomic(path, "garbage\n", 8, 0644), 0);
        assert_int_equal(read_int_file(path, &v), -EINVAL);
        assert_int_equal(write_file_atomic(path, "0123456789", 10, 0644), 0);
        assert_int_equal(read_line_file(path, buf, sizeof(buf)), -ENOBUFS);
        unlink(path);
        assert_int_equal(read_int_file(path, &v), -ENOENT);
        rmdir(dir);
}

static void slurp(const char *path, char *buf, size_t size)
{
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        size_t n = fread(buf, 1, size - 1, f);
        buf[n] = '\0';
        fclose(f);
}

/* Planted symlinks: at the old predictable temporary name (path.tmp.<pid>), at the target
 * name, and as the directory. None may make the write land in the victim file. */
static void test_write_atomic_symlinks(void **state)
{
        char dir[] = "/tmp/sriov-test-util-XXXXXX";
        char victim[256], target[256], planted[300], linkdir[256], via[300], buf[64];

        assert_non_null(mkdtemp(dir));
        snprintf(victim, sizeof(victim), "%s/victim", dir);
        snprintf(target, sizeof(target), "%s/record.json", dir);
        FILE *f = fopen(victim, "w");
        assert_non_null(f);
        fputs("precious", f);
        fclose(f);

        snprintf(planted, sizeof(planted), "%s.tmp.%ld", target, (long)getpid());
        assert_int_equal(symlink(victim, planted), 0);
        assert_int_equal(write_file_atomic(target, "new", 3, 0644), 0);
        slurp(victim, buf, sizeof(buf));
        assert_string_equal(buf, "precious");
        slurp(target, buf, sizeof(buf));
        assert_string_equal(buf, "new");
        unlink(planted);

        /* A symlink at the target name is replaced, not followed. */
        unlink(target);
        assert_int_equal(symlink(victim, target), 0);
        assert_int_equal(write_file_atomic(target, "new", 3, 0644), 0);
        slurp(victim, buf, sizeof(buf));
        assert_string_equal(buf, "precious");
        assert_int_equal(readlink(target, buf, sizeof(buf)), -1); /* a regular file now */

        /* A symlinked directory is refused. */
        snprintf(linkdir, sizeof(linkdir), "%s/linkdir", dir);
        assert_int_equal(symlink(dir, linkdir), 0);
        snprintf(via, sizeof(via), "%s/other.json", linkdir);
        assert_int_equal(write_file_atomic(via, "x", 1, 0644), -ELOOP);
        snprintf(via, sizeof(via), "%s/other.json", dir);
        assert_int_equal(access(via, F_OK), -1);

        /* No temporary file is left behind. */
        DIR *d = opendir(dir);
        struct dirent *e;
        int n = 0;
        assert_non_null(d);
        while ((e = readdir(d)))
                n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        closedir(d);
        assert_int_equal(n, 3); /* victim, record.json, linkdir */
        unlink(linkdir);
        unlink(target);
        unlink(victim);
        assert_int_equal(rmdir(dir), 0);
}

/* A newline in a value echoed into a log line (a pfNames entry, a policy name) must not start
 * a forged line, and no raw control character may reach the log. */
static void test_log_no_forged_lines(void **state)
{
        char path[] = "/tmp/sriov-test-log-XXXXXX", buf[4096];
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);

        assert_true(fd >= 0 && saved >= 0);
        fflush(stderr);
        assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        log_setup(LOG_TARGET_STDERR, LOG_DEBUG);
        const struct log_ctx ctx = {
                .policy = "p\nsriov-agent[notice]: POLICY=admin PF released by admin",
                .pf = "0000:3b:00.0\r\x1b[2K",
        };
        log_ctx_msg(LOG_WARNING, 0, &ctx, "pfNames entry \"%s\" not found",
                    "ens9\nsriov-agent[notice]: PF=0000:3b:00.0 PF released by admin\tx\x7f");
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        close(fd);
        unlink(path);
        assert_true(n > 0);
        buf[n] = '\0';
        print_message("%s", buf);
        assert_non_null(strchr(buf, '\n'));
        assert_ptr_equal(strchr(buf, '\n'), buf + n - 1); /* exactly one line */
        for (ssize_t i = 0; i < n - 1; i++)
                assert_true((unsigned char)buf[i] >= 0x20 && buf[i] != 0x7f);
        assert_non_null(strstr(buf, "ens9\\nsriov-agent[notice]: PF=0000:3b:00.0"));
        assert_non_null(strstr(buf, "\\tx\\x7f"));
        assert_non_null(strstr(buf, "PF=0000:3b:00.0\\r\\x1b[2K "));
        assert_non_null(strstr(buf, "POLICY=p\\nsriov-agent"));
}

/* Depth is checked as the text is parsed: a document nested 200,000 levels deep (never
 * closed, so nothing after loading would ever see it) fails at level 65 with the reason, not
 * with a syntax error after libyaml has read and stacked every level. */
static void test_yaml_depth_while_parsing(void **state)
{
        const size_t n = 200000;
        char *deep = malloc(n + 1);
        char *err = NULL;
        json_t *j = NULL;

        assert_non_null(deep);
        alarm(10); /* before the fix this took minutes: fail instead of hanging the suite */
        memset(deep, '[', n);
        deep[n] = '\0';
        assert_int_equal(yaml_to_json(deep, n, 0, &j, &err), -EINVAL);
        assert_non_null(err);
        print_message("%s\n", err);
        assert_non_null(strstr(err, "nesting too deep"));
        free(err);
        err = NULL;
        /* The same in block style. */
        size_t len = 0;
        for (int i = 0; i < 200 && len + 600 < n; i++) {
                memset(deep + len, ' ', (size_t)i);
                len += (size_t)i;
                len += (size_t)sprintf(deep + len, "k%d:\n", i);
        }
        assert_int_equal(yaml_to_json(deep, len, 0, &j, &err), -EINVAL);
        assert_non_null(strstr(err, "nesting too deep"));
        free(err);
        err = NULL;
        free(deep);

        /* Through an alias: 40 levels anchored, used 40 levels down. */
        char text[1024] = "a: &x ", *p;
        p = text + strlen(text);
        for (int i = 0; i < 40; i++)
                *p++ = '[';
        for (int i = 0; i < 40; i++)
                *p++ = ']';
        p += sprintf(p, "\nb: ");
        for (int i = 0; i < 40; i++)
                *p++ = '[';
        *p++ = '*';
        *p++ = 'x';
        for (int i = 0; i < 40; i++)
                *p++ = ']';
        *p = '\0';
        assert_int_equal(yaml_to_json(text, strlen(text), 0, &j, &err), -EINVAL);
        assert_non_null(strstr(err, "nesting too deep"));
        free(err);
        err = NULL;

        /* Aliases still work, per document, and never refer to an enclosing node. */
        const char *ok = "a: &x {b: [1, 2]}\nc: *x\n'8': !!str 8\n";
        assert_int_equal(yaml_to_json(ok, strlen(ok), YAML_JSON_TYPED, &j, &err), 0);
        assert_true(json_equal(json_object_get(j, "a"), json_object_get(j, "c")));
        assert_string_equal(json_string_value(json_object_get(j, "8")), "8");
        json_decref(j);
        const char *self = "a: &x [1, *x]\n";
        assert_int_equal(yaml_to_json(self, strlen(self), 0, &j, &err), -EINVAL);
        free(err);
        err = NULL;
        const char *docs = "--- &a [1]\n--- *a\n";
        assert_int_equal(yaml_to_json_documents(docs, strlen(docs), 0, &j, &err), -EINVAL);
        free(err);
        alarm(0);
}

static void test_names(void **state)
{
        assert_true(ifname_is_valid("ens1f0"));
        assert_false(ifname_is_valid("../x"));
        assert_false(ifname_is_valid(".."));
        assert_false(ifname_is_valid("a b"));
        assert_false(ifname_is_valid("0123456789abcdef"));
        assert_false(ifname_is_valid(""));
        assert_true(pci_address_is_valid("0000:3b:02.1"));
        assert_false(pci_address_is_valid("0000:3b:02.8"));
        assert_false(pci_address_is_valid("0000:3b:02"));
        assert_false(pci_address_is_valid("../3b:02.1/x"));
        assert_true(resource_name_is_valid("sriov_highnet"));
        assert_true(resource_name_is_valid("a-b"));
        assert_false(resource_name_is_valid("-ab"));
        assert_false(resource_name_is_valid("ab_"));
        assert_false(resource_name_is_valid("a/b"));
        assert_false(filename_is_valid(".."));
        assert_false(filename_is_valid("a/b"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_grow_array),
                cmocka_unit_test(test_parse_int),
                cmocka_unit_test(test_parse_hex),
                cmocka_unit_test(test_parse_on_off),
                cmocka_unit_test(test_dl_load_symbols),
                cmocka_unit_test(test_read_files),
                cmocka_unit_test(test_write_atomic_symlinks),
                cmocka_unit_test(test_log_no_forged_lines),
                cmocka_unit_test(test_yaml_depth_while_parsing),
                cmocka_unit_test(test_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
