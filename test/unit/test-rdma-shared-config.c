/* Unit tests for the k8s-rdma-shared-dev-plugin config format and whole-card pools
 * (lib/deviceplugin/rdma-shared-config.c), including bad input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "deviceplugin/rdma-shared-config.h"
#include "dp-fixture.h"

static void test_fixture_file(void **state)
{
        char path[512];
        const char *src = getenv("SRCDIR");
        snprintf(path, sizeof(path), "%s/test/fixtures/rdma-shared-hca.json", src ? src : ".");
        struct rdma_shared_config c = { 0 };
        assert_int_equal(rdma_shared_config_load(path, &c, NULL), 0);
        assert_int_equal(c.periodic_update_sec, 300);
        assert_int_equal(c.n_resources, 1);
        assert_string_equal(c.resources[0].name, "rdma_hca");
        assert_string_equal(c.resources[0].prefix, "rdma");
        assert_int_equal(c.resources[0].hca_max, 1);
        assert_int_equal(c.resources[0].selectors.n_vendors, 1);
        assert_string_equal(c.resources[0].selectors.vendors[0], "15b3");
        rdma_shared_config_done(&c);
}

static void test_defaults_and_devices_alias(void **state)
{
        struct rdma_shared_config c = { 0 };
        assert_int_equal(rdma_shared_config_parse(
                             "{\"configList\":[{\"resourceName\":\"hca_a\",\"resourcePrefix\":"
                             "\"nvidia.com\",\"rdmaHcaMax\":63,\"devices\":[\"ib0\",\"ib1\"]}]}",
                             "t", &c, NULL),
                         0);
        assert_int_equal(c.periodic_update_sec, 60);
        assert_string_equal(c.resources[0].prefix, "nvidia.com");
        assert_int_equal(c.resources[0].hca_max, 63);
        assert_int_equal(c.resources[0].selectors.n_if_names, 2);
        rdma_shared_config_done(&c);
        assert_int_equal(rdma_shared_config_parse("{\"periodicUpdateInterval\":0,\"configList\":"
                                                  "[{\"resourceName\":\"x\",\"selectors\":{"
                                                  "\"drivers\":[\"mlx5_core\"]}}]}",
                                                  "t", &c, NULL),
                         0);
        assert_int_equal(c.periodic_update_sec, 0);
        assert_int_equal(c.resources[0].hca_max, 0);
        rdma_shared_config_done(&c);
}

static void test_bad_input(void **state)
{
        static const char *const bad[] = {
                "",
                "not json",
                "[]",
                "{}",
                "{\"configList\":[]}",
                "{\"periodicUpdateInterval\":-1,\"configList\":[{\"resourceName\":\"a\","
                "\"devices\":[\"ib0\"]}]}",
                "{\"periodicUpdateInterval\":\"60\",\"configList\":[{\"resourceName\":\"a\","
                "\"devices\":[\"ib0\"]}]}",
                "{\"configList\":[{\"devices\":[\"ib0\"]}]}",
                "{\"configList\":[{\"resourceName\":\"../x\",\"devices\":[\"ib0\"]}]}",
                "{\"configList\":[{\"resourceName\":\"a-b\",\"devices\":[\"ib0\"]}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"resourcePrefix\":\"a/"
                "b\",\"devices\":[\"ib0\"]}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":-1,\"devices\":[\"ib0\"]}]"
                "}",
                "{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":\"3\",\"devices\":["
                "\"ib0\"]}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":1000000,\"devices\":["
                "\"ib0\"]}]"
                "}",
                "{\"configList\":[{\"resourceName\":\"a\"}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"selectors\":{\"vendor\":[\"15b3\"]}}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"selectors\":{\"vendors\":\"15b3\"}}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"selectors\":{\"drivers\":[1]}}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"devices\":[\"ib0\"]},{\"resourceName\":"
                "\"a\",\"devices\":[\"ib0\"]}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"devices\":[\"ib0\"]}],\"configList\":[]"
                "}",
                "{\"configList\":[\"a\"]}",
                /* both empty: would share every card */
                "{\"configList\":[{\"resourceName\":\"a\",\"selectors\":{},\"devices\":[]}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"selectors\":{\"vendors\":[]}}]}",
                /* both non-empty */
                "{\"configList\":[{\"resourceName\":\"a\",\"selectors\":{\"vendors\":[\"15b3\"]},"
                "\"devices\":[\"ib0\"]}]}",
                /* one name under two prefixes (one socket name) */
                "{\"configList\":[{\"resourceName\":\"a\",\"resourcePrefix\":\"x.io\",\"devices\":["
                "\"ib0\"]},{\"resourceName\":\"a\",\"resourcePrefix\":\"y.io\",\"devices\":["
                "\"ib1\"]}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":100001,\"devices\":["
                "\"ib0\"]}]}",
                "{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":1.5,\"devices\":[\"ib0\"]}"
                "]}",
                "{\"periodicUpdateInterval\":1.5,\"configList\":[{\"resourceName\":\"a\","
                "\"devices\":[\"ib0\"]}]}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct rdma_shared_config c = { 0 };
                char *error = NULL;
                if (rdma_shared_config_parse(bad[i], "bad", &c, &error) != -EINVAL)
                        fail_msg("accepted: %s", bad[i]);
                assert_non_null(error);
                assert_non_null(strstr(error, "bad: ")); /* names the file */
                free(error);
                assert_int_equal(c.n_resources, 0);
        }
        struct rdma_shared_config c = { 0 };
        assert_int_equal(rdma_shared_config_load("/nonexistent/config.json", &c, NULL), -ENOENT);
}

/* Each selectors list is read into its own field, and a bad one is named (the first one when
 * several are bad, in the order vendors, deviceIDs, drivers, ifNames, linkTypes). */
static void test_selector_lists(void **state)
{
        (void)state;
        struct rdma_shared_config c = { 0 };
        assert_int_equal(rdma_shared_config_parse(
                             "{\"configList\":[{\"resourceName\":\"a\",\"selectors\":{"
                             "\"vendors\":[\"15b3\"],\"deviceIDs\":[\"1017\"],\"drivers\":["
                             "\"mlx5_core\"],\"ifNames\":[\"ib0\"],\"linkTypes\":[\"ether\"]}}]}",
                             "ok", &c, NULL),
                         0);
        const struct rdma_shared_selectors *s = &c.resources[0].selectors;
        assert_int_equal(
            s->n_vendors + s->n_device_ids + s->n_drivers + s->n_if_names + s->n_link_types, 5);
        assert_string_equal(s->vendors[0], "15b3");
        assert_string_equal(s->device_ids[0], "1017");
        assert_string_equal(s->drivers[0], "mlx5_core");
        assert_string_equal(s->if_names[0], "ib0");
        assert_string_equal(s->link_types[0], "ether");
        rdma_shared_config_done(&c);

        static const char *const keys[] = { "vendors", "deviceIDs", "drivers", "ifNames",
                                            "linkTypes" };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                char text[256], want[128];
                char *error = NULL;
                snprintf(text, sizeof(text),
                         "{\"configList\":[{\"resourceName\":\"a\",\"selectors\":{\"%s\":[1]}}]}",
                         keys[i]);
                assert_int_equal(rdma_shared_config_parse(text, "f", &c, &error), -EINVAL);
                snprintf(want, sizeof(want), "f: configList[0].selectors.%s[0]: not a string",
                         keys[i]);
                assert_string_equal(error, want);
                free(error);
                error = NULL;
                /* linkTypes, parsed last, is bad too: the error still names keys[i] */
                snprintf(
                    text, sizeof(text),
                    "{\"configList\":[{\"resourceName\":\"a\",\"selectors\":{\"%s\":\"y\"%s}}]}",
                    keys[i], strcmp(keys[i], "linkTypes") ? ",\"linkTypes\":\"x\"" : "");
                assert_int_equal(rdma_shared_config_parse(text, "f", &c, &error), -EINVAL);
                snprintf(want, sizeof(want),
                         "f: configList[0].selectors.%s: must be a list of strings", keys[i]);
                assert_string_equal(error, want);
                free(error);
        }
}

static void test_pools_from_cards(void **state)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 1, 0);
        fx_add_pf(&inv, 0x5e, "ens2f0", "mlx5_core", 0, 1);
        fx_add_pf(&inv, 0x86, "ens3f0", "iavf", 0, 1);
        struct pf_info *a = &inv.pfs[0], *b = &inv.pfs[1], *e = &inv.pfs[2];
        e->vendor = 0x8086;
        fx_add_rdma(&a->rdma, &a->n_rdma, 0);
        fx_add_rdma(&b->rdma, &b->n_rdma, 5);
        fx_add_rdma(&a->vfs[0].rdma, &a->vfs[0].n_rdma, 1); /* VFs are not cards */
        b->netdevs[0].link_type = LINK_TYPE_IB;

        struct rdma_shared_config c = { 0 };
        assert_int_equal(
            rdma_shared_config_parse(
                "{\"configList\":["
                "{\"resourceName\":\"all\",\"rdmaHcaMax\":3,\"selectors\":{\"vendors\":[\"15b3\"]}}"
                ","
                "{\"resourceName\":\"ib\",\"rdmaHcaMax\":2,\"selectors\":{\"linkTypes\":["
                "\"infiniband\"]}},"
                "{\"resourceName\":\"one\",\"rdmaHcaMax\":1,\"selectors\":{\"ifNames\":[\"ens1f0\"]"
                ",\"deviceIDs\":[\"101b\"],\"drivers\":[\"mlx5_core\"]}},"
                "{\"resourceName\":\"none\",\"rdmaHcaMax\":5,\"selectors\":{\"vendors\":[\"8086\"]}"
                "}]}",
                "t", &c, NULL),
            0);
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_rdma_shared(&c, &inv, &s), 0);
        assert_int_equal(s.n_pools, 4);

        const struct dp_pool *p = dp_pool_set_find(&s, "rdma/all");
        assert_non_null(p);
        assert_int_equal(p->kind, DP_POOL_RDMA_SHARED);
        assert_int_equal(p->n_devices, 3);
        assert_string_equal(p->devices[0].id, "0");
        assert_string_equal(p->devices[2].id, "2");
        assert_int_equal(p->devices[2].numa_node, -1);
        assert_true(p->devices[2].healthy);
        assert_int_equal(p->n_shared_char_devices, 7); /* 3 + 3 + rdma_cm */
        assert_true(strv_contains(p->shared_char_devices, 7, "/dev/infiniband/uverbs5"));
        assert_true(strv_contains(p->shared_char_devices, 7, "/dev/infiniband/rdma_cm"));
        assert_false(strv_contains(p->shared_char_devices, 7, "/dev/infiniband/uverbs1"));

        p = dp_pool_set_find(&s, "rdma/ib");
        assert_int_equal(p->n_shared_char_devices, 4);
        assert_true(strv_contains(p->shared_char_devices, 4, "/dev/infiniband/umad5"));
        p = dp_pool_set_find(&s, "rdma/one");
        assert_int_equal(p->n_devices, 1);
        assert_true(strv_contains(p->shared_char_devices, 4, "/dev/infiniband/issm0"));
        p = dp_pool_set_find(&s, "rdma/none"); /* the Intel card has no RDMA device */
        assert_int_equal(p->n_devices, 0);
        assert_int_equal(p->n_shared_char_devices, 0);
        dp_pool_set_done(&s);
        rdma_shared_config_done(&c);
        inventory_done(&inv);
}

/* Issue 15.3: like the upstream whole-card plugin, a card without rdma_cm (or umad, or uverbs)
 * is skipped: a pod given a missing device path does not start. */
static void test_card_without_rdma_cm_skipped(void **state)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 0, 0);
        fx_add_pf(&inv, 0x5e, "ens2f0", "mlx5_core", 0, 1);
        fx_add_rdma(&inv.pfs[0].rdma, &inv.pfs[0].n_rdma, 0);
        fx_add_rdma(&inv.pfs[1].rdma, &inv.pfs[1].n_rdma, 1);
        struct rdma_shared_config c = { 0 };
        assert_int_equal(rdma_shared_config_parse("{\"configList\":[{\"resourceName\":\"hca\","
                                                  "\"rdmaHcaMax\":2,\"selectors\":{"
                                                  "\"vendors\":[\"15b3\"]}}]}",
                                                  "t", &c, NULL),
                         0);
        struct dp_pool_set s = { 0 };
        fx_drop_rdma_cm(&inv.pfs[1].rdma[0]);
        assert_int_equal(dp_pools_from_rdma_shared(&c, &inv, &s), 0);
        const struct dp_pool *p = dp_pool_set_find(&s, "rdma/hca");
        assert_int_equal(p->n_devices, 2);
        assert_int_equal(p->n_shared_char_devices, 4); /* card 0 only, with rdma_cm */
        assert_false(strv_contains(p->shared_char_devices, 4, "/dev/infiniband/uverbs1"));
        dp_pool_set_done(&s);
        fx_drop_rdma_cm(&inv.pfs[0].rdma[0]); /* no card has it: no devices at all */
        assert_int_equal(dp_pools_from_rdma_shared(&c, &inv, &s), 0);
        p = dp_pool_set_find(&s, "rdma/hca");
        assert_int_equal(p->n_devices, 0);
        assert_int_equal(p->n_shared_char_devices, 0);
        dp_pool_set_done(&s);
        rdma_shared_config_done(&c);
        inventory_done(&inv);
}

/* Issue 15.7: what the upstream plugin accepts (its ReadConfig/ValidateConfigs and
 * resources_manager_test.go "ReadConfig"/"ValidateConfigs" cases) is accepted here too. */
static void test_upstream_acceptance(void **state)
{
        struct rdma_shared_config c = { 0 };
        char *error = NULL;
        /* periodicUpdateInterval null = the default; resourcePrefix "" = rdma; rdmaHcaMax
         * beyond 1000; unknown keys ignored with a warning */
        assert_int_equal(rdma_shared_config_parse(
                             "{\"periodicUpdateInterval\":null,\"extra\":1,\"configList\":[{"
                             "\"resourceName\":\"hca\",\"resourcePrefix\":\"\",\"rdmaHcaMax\":"
                             "5000,\"note\":\"x\",\"selectors\":{\"vendors\":[\"15b3\"],"
                             "\"pciAddresses\":[\"0000:3b:00.0\"]}}]}",
                             "t", &c, &error),
                         0);
        assert_null(error);
        assert_int_equal(c.periodic_update_sec, 60);
        assert_string_equal(c.resources[0].prefix, "rdma");
        assert_int_equal(c.resources[0].hca_max, 5000);
        assert_int_equal(c.n_warnings, 3);
        assert_non_null(strstr(c.warnings[0], "\"extra\""));
        rdma_shared_config_done(&c);
        /* empty selectors with devices: the devices are the ifNames selector; selectors with an
         * empty devices list: the selectors */
        assert_int_equal(rdma_shared_config_parse("{\"configList\":[{\"resourceName\":\"a\","
                                                  "\"selectors\":{},\"devices\":[\"ib0\"]},{"
                                                  "\"resourceName\":\"b\",\"selectors\":{"
                                                  "\"drivers\":[\"mlx5_core\"]},\"devices\":[]}]}",
                                                  "t", &c, NULL),
                         0);
        assert_int_equal(c.resources[0].selectors.n_if_names, 1);
        assert_string_equal(c.resources[0].selectors.if_names[0], "ib0");
        assert_int_equal(c.resources[1].selectors.n_drivers, 1);
        rdma_shared_config_done(&c);
        /* values that match nothing are valid and select nothing */
        assert_int_equal(rdma_shared_config_parse("{\"configList\":[{\"resourceName\":\"a\","
                                                  "\"selectors\":{\"linkTypes\":[\"token\"],"
                                                  "\"vendors\":[\"mellanox\"]}}]}",
                                                  "t", &c, NULL),
                         0);
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 0, 0);
        fx_add_rdma(&inv.pfs[0].rdma, &inv.pfs[0].n_rdma, 0);
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_rdma_shared(&c, &inv, &s), 0);
        assert_int_equal(s.pools[0].n_devices, 0);
        dp_pool_set_done(&s);
        rdma_shared_config_done(&c);
        inventory_done(&inv);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fixture_file),
                cmocka_unit_test(test_defaults_and_devices_alias),
                cmocka_unit_test(test_bad_input),
                cmocka_unit_test(test_selector_lists),
                cmocka_unit_test(test_pools_from_cards),
                cmocka_unit_test(test_upstream_acceptance),
                cmocka_unit_test(test_card_without_rdma_cm_skipped),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
