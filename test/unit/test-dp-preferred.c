/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the GetPreferredAllocation rule (lib/deviceplugin/preferred.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "deviceplugin.pb-c.h"
#include "deviceplugin/preferred.h"
#include "dp-fixture.h"
#include "util/fileio.h"
#include "util/parse.h"

/* Pool over PF A (bus 0x3b, NUMA 0, 4 VFs), PF B (0x5e, NUMA 0, 4 VFs), PF C (0x86, NUMA 1). */
static void build(struct dp_pool *p)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "a", "mlx5_core", 4, 0);
        fx_add_pf(&inv, 0x5e, "b", "mlx5_core", 4, 0);
        fx_add_pf(&inv, 0x86, "c", "mlx5_core", 4, 1);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "r", DEVICE_TYPE_NETDEVICE, 0, 3);
        fx_add_group(&d, "0000:5e:00.0", "r", DEVICE_TYPE_NETDEVICE, 0, 3);
        fx_add_group(&d, "0000:86:00.0", "r", DEVICE_TYPE_NETDEVICE, 0, 3);
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &s), 0);
        *p = s.pools[0];
        free(s.pools);
        desired_state_done(&d);
        inventory_done(&inv);
}

static char *all[] = { "0000:86:01.0", "0000:86:01.1", "0000:86:01.2", "0000:86:01.3",
                       "0000:3b:01.0", "0000:3b:01.1", "0000:3b:01.2", "0000:3b:01.3",
                       "0000:5e:01.0", "0000:5e:01.1", "0000:5e:01.2", "0000:5e:01.3" };

static void expect(const struct dp_pool *p, char **avail, size_t n_avail, char **must,
                   size_t n_must, size_t size, const char *const *want, size_t n_want)
{
        const char **out = NULL;
        size_t n = 0;
        assert_int_equal(dp_preferred_allocation(p, avail, n_avail, must, n_must, size, &out, &n),
                         0);
        for (size_t i = 0; i < n && i < n_want; i++)
                assert_string_equal(out[i], want[i]);
        assert_int_equal(n, n_want);
        free(out);
}

/* NUMA 0 has 8 candidates, NUMA 1 only 4: NUMA 0, alternating PFs A and B. */
static void test_one_numa_spread_over_pfs(void **state)
{
        struct dp_pool p;
        build(&p);
        const char *want[] = { "0000:3b:01.0", "0000:5e:01.0", "0000:3b:01.1", "0000:5e:01.1" };
        expect(&p, all, 12, NULL, 0, 4, want, 4);
        dp_pool_done(&p);
}

/* must_include first; its NUMA node (1) wins over the bigger node 0. */
static void test_must_include_decides_node(void **state)
{
        struct dp_pool p;
        build(&p);
        char *must[] = { "0000:86:01.2" };
        const char *want[] = { "0000:86:01.2", "0000:86:01.0", "0000:86:01.1" };
        expect(&p, all, 12, must, 1, 3, want, 3);
        dp_pool_done(&p);
}

/* must_include on PF A counts for spreading: the next pick goes to PF B. */
static void test_must_include_counts_for_spread(void **state)
{
        struct dp_pool p;
        build(&p);
        char *must[] = { "0000:3b:01.3" };
        const char *want[] = { "0000:3b:01.3", "0000:5e:01.0" };
        expect(&p, all, 12, must, 1, 2, want, 2);
        dp_pool_done(&p);
}

/* Not enough on one node: fill from the other. Unhealthy and unknown IDs only at the end, in the
 * order given. */
static void test_fill_across_nodes_then_leftovers(void **state)
{
        struct dp_pool p;
        build(&p);
        p.devices[1].healthy = false; /* 0000:3b:01.1 */
        char *avail[] = { "bogus", "0000:3b:01.1", "0000:3b:01.0", "0000:86:01.0" };
        const char *want[] = { "0000:3b:01.0", "0000:86:01.0", "bogus", "0000:3b:01.1" };
        expect(&p, avail, 4, NULL, 0, 5, want, 4); /* size > what exists: all of it */
        dp_pool_done(&p);
}

static void test_rdma_shared_order(void **state)
{
        struct dp_pool p = { .kind = DP_POOL_RDMA_SHARED };
        p.devices = calloc(3, sizeof(*p.devices));
        for (int i = 0; i < 3; i++)
                p.devices[i] = (struct dp_device){ .id = { (char)('0' + i) },
                                                   .healthy = true,
                                                   .numa_node = -1 };
        p.n_devices = 3;
        char *avail[] = { "2", "0", "1" }, *must[] = { "1" };
        const char *want[] = { "1", "2" };
        expect(&p, avail, 3, must, 1, 2, want, 2);
        free(p.devices);
}

/* The kubelet's allocation_size is an int32 we do not control: the answer is bounded by what was
 * offered and the request must not size an allocation (fuzz-dp-requests found a 6 GB calloc). */
static void test_huge_allocation_size(void **state)
{
        struct dp_pool p;
        build(&p);
        const char *want[] = { "0000:5e:01.0", "0000:3b:01.0" }; /* must-include first */
        expect(&p, &all[4], 1, &all[8], 1, SIZE_MAX, want, 2);
        expect(&p, &all[4], 1, &all[8], 1, SIZE_MAX / 2, want, 2);

        /* the fuzzer's input, decoded as the GetPreferredAllocation handler does */
        char path[4096];
        assert_int_equal(path_printf(path, sizeof(path),
                                     "%s/test/fuzz/regressions/dp-requests/"
                                     "preferred-huge-allocation-size",
                                     getenv("SRCDIR") ?: "."),
                         0);
        char *data = NULL;
        size_t size = 0;
        assert_int_equal(read_full_file(path, 4096, &data, &size), 0);
        assert_true(size > 1);
        V1beta1__PreferredAllocationRequest *r = v1beta1__preferred_allocation_request__unpack(
            NULL, size - 1, (const uint8_t *)data + 1); /* byte 0 selects the fuzzed handler */
        assert_non_null(r);
        assert_int_equal(r->n_container_requests, 1);
        const V1beta1__ContainerPreferredAllocationRequest *c = r->container_requests[0];
        assert_true(c->allocation_size > 100000000);
        const char **out = NULL;
        size_t n = 0;
        assert_int_equal(
            dp_preferred_allocation(&p, c->available_deviceids, c->n_available_deviceids,
                                    c->must_include_deviceids, c->n_must_include_deviceids,
                                    (size_t)c->allocation_size, &out, &n),
            0);
        assert_int_equal(n, c->n_available_deviceids + c->n_must_include_deviceids);
        free(out);
        v1beta1__preferred_allocation_request__free_unpacked(r, NULL);
        free(data);
        dp_pool_done(&p);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_one_numa_spread_over_pfs),
                cmocka_unit_test(test_must_include_decides_node),
                cmocka_unit_test(test_must_include_counts_for_spread),
                cmocka_unit_test(test_fill_across_nodes_then_leftovers),
                cmocka_unit_test(test_rdma_shared_order),
                cmocka_unit_test(test_huge_allocation_size),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
