/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the supported-NIC list: the built-in table (upstream's supported-nic-ids
 * chart ConfigMap), the "<vendor> <pf-device> <vf-device>" value format, and additions from
 * ConfigMap-shaped JSON. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/supported-nics.h"

static void test_builtin_table(void **state)
{
        struct supported_nic n;
        size_t count = 0;

        (void)state;
        for (size_t i = 0; SUPPORTED_NICS_BUILTIN[i].name; i++, count++) {
                /* Every value in upstream's format; every key once (ConfigMap keys). */
                if (supported_nic_parse(SUPPORTED_NICS_BUILTIN[i].name,
                                        SUPPORTED_NICS_BUILTIN[i].value, &n) < 0)
                        fail_msg("built-in %s: bad value \"%s\"", SUPPORTED_NICS_BUILTIN[i].name,
                                 SUPPORTED_NICS_BUILTIN[i].value);
                for (size_t j = 0; j < i; j++)
                        assert_string_not_equal(SUPPORTED_NICS_BUILTIN[i].name,
                                                SUPPORTED_NICS_BUILTIN[j].name);
        }
        /* The chart at 249e20012 lists 48 models. */
        assert_int_equal(count, 48);
        assert_true(supported_nics_find(NULL, 0x15b3, 0x101d, &n));
        assert_string_equal(n.name, "Nvidia_mlx5_ConnectX-6_Dx");
        assert_int_equal(n.vf_device, 0x101e);
        assert_true(supported_nics_allows(NULL, 0x8086, 0x159b));  /* E810-XXVDA2 */
        assert_true(supported_nics_allows(NULL, 0x1d0f, 0xec20));  /* ENA */
        assert_false(supported_nics_allows(NULL, 0x8086, 0x1521)); /* I350 */
        assert_true(supported_nics_has_vendor(NULL, 0x177d));
        assert_false(supported_nics_has_vendor(NULL, 0x8087));
        assert_true(supported_nics_has_device(NULL, 0x1592));
        assert_false(supported_nics_has_device(NULL, 0x4321));
}

static void test_parse_values(void **state)
{
        static const char *const bad[] = { "",          "8086 1521",      "8086 1521 1520 1",
                                           "80867 1 1", "8086,1521,1520", "zzzz 1521 1520",
                                           "8086 -1 1" };
        struct supported_nic n;

        (void)state;
        assert_int_equal(supported_nic_parse("X", "8086 1521 1520", &n), 0);
        assert_int_equal(n.vendor, 0x8086);
        assert_int_equal(n.pf_device, 0x1521);
        assert_int_equal(n.vf_device, 0x1520);
        assert_int_equal(supported_nic_parse("X", " 15B3 101D 101E\n", &n), 0);
        assert_int_equal(n.pf_device, 0x101d);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (supported_nic_parse("X", bad[i], &n) != -EINVAL)
                        fail_msg("\"%s\" accepted", bad[i]);
}

static void test_add_json(void **state)
{
        struct supported_nics s = { 0 };
        char *error = NULL;
        json_t *cm =
            json_pack("{s:s, s:{s:s}}", "kind", "ConfigMap", "data", "MyNIC", "8086 1521 1520");
        json_t *bad = json_pack("{s:s, s:i}", "Good", "8086 1521 1520", "Bad", 5);

        (void)state;
        assert_false(supported_nics_allows(&s, 0x8086, 0x1521));
        assert_int_equal(supported_nics_add_json(&s, cm, "cm", &error), 0);
        assert_null(error);
        assert_true(supported_nics_allows(&s, 0x8086, 0x1521));
        assert_true(supported_nics_allows(&s, 0x15b3, 0x101b)); /* built-in stays */
        /* A bad key rejects the whole input, naming the origin and the key. */
        assert_int_equal(supported_nics_add_json(&s, bad, "extra.yaml", &error), -EINVAL);
        assert_non_null(strstr(error, "extra.yaml: key Bad"));
        assert_int_equal(s.n_extra, 1);
        free(error);
        s.any = true;
        assert_true(supported_nics_allows(&s, 0x1234, 0x5678));
        supported_nics_done(&s);
        json_decref(cm);
        json_decref(bad);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_builtin_table),
                cmocka_unit_test(test_parse_values),
                cmocka_unit_test(test_add_json),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
