/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for model/inventory-json: the SriovNetworkNodeState status shape of an inventory.
 *
 * Builds inventories by hand (the model is plain data) and checks key names, value forms
 * ("15b3", "25000 Mb/s", "up"), that unknown values are left out instead of reported as 0, and
 * that per-device errors appear. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "model/inventory-json.h"
#include "model/inventory.h"

static char *xstrdup(const char *s)
{
        char *p = strdup(s);
        assert_non_null(p);
        return p;
}

/* One ConnectX-6 PF with two VFs: VF 0 complete with RDMA, VF 1 bound to vfio-pci (no netdev)
 * and carrying an error. Heap-allocated like discovery does, freed by inventory_done(). */
static void make_inventory(struct inventory *inv)
{
        struct pf_info *pf = calloc(1, sizeof(*pf));
        assert_non_null(pf);
        *inv = (struct inventory){ .pfs = pf, .n_pfs = 1 };
        *pf = (struct pf_info){
                .pci_address = "0000:3b:00.0",
                .vendor = 0x15b3,
                .device = 0x101b,
                .vf_device = 0x101c,
                .driver = "mlx5_core",
                .numa_node = 1,
                .iommu_group = 10,
                .total_vfs = 16,
                .num_vfs = 2,
        };
        pf->netdevs = calloc(1, sizeof(*pf->netdevs));
        assert_non_null(pf->netdevs);
        netdev_info_init(&pf->netdevs[0]);
        strcpy(pf->netdevs[0].name, "ens1f0");
        strcpy(pf->netdevs[0].mac, "0c:42:a1:00:00:01");
        pf->netdevs[0].mtu = 9000;
        pf->netdevs[0].speed_mbps = 25000;
        pf->netdevs[0].admin_up = true;
        pf->netdevs[0].link_type = LINK_TYPE_ETH;
        pf->n_netdevs = 1;

        pf->vfs = calloc(2, sizeof(*pf->vfs));
        assert_non_null(pf->vfs);
        pf->n_vfs = 2;
        struct vf_info *vf = &pf->vfs[0];
        *vf = (struct vf_info){ .pci_address = "0000:3b:00.2",
                                .vf_index = 0,
                                .vendor = 0x15b3,
                                .device = 0x101c,
                                .driver = "mlx5_core",
                                .numa_node = 1,
                                .iommu_group = 11,
                                .vlan = 100 };
        vf->netdevs = calloc(1, sizeof(*vf->netdevs));
        assert_non_null(vf->netdevs);
        netdev_info_init(&vf->netdevs[0]);
        strcpy(vf->netdevs[0].name, "ens1f0v0");
        strcpy(vf->netdevs[0].mac, "0c:42:a1:00:00:02");
        vf->netdevs[0].mtu = 1500;
        vf->n_netdevs = 1;
        vf->rdma = calloc(1, sizeof(*vf->rdma));
        assert_non_null(vf->rdma);
        vf->n_rdma = 1;
        strcpy(vf->rdma[0].name, "mlx5_1");
        vf->rdma[0].char_devices = calloc(2, sizeof(char *));
        assert_non_null(vf->rdma[0].char_devices);
        vf->rdma[0].char_devices[0] = xstrdup("/dev/infiniband/rdma_cm");
        vf->rdma[0].char_devices[1] = xstrdup("/dev/infiniband/uverbs1");
        vf->rdma[0].n_char_devices = 2;

        pf->vfs[1] = (struct vf_info){ .pci_address = "0000:3b:00.3",
                                       .vf_index = 1,
                                       .vendor = 0x15b3,
                                       .device = 0x101c,
                                       .driver = "vfio-pci",
                                       .numa_node = 1,
                                       .iommu_group = -1,
                                       .vlan = -1 };
        pf->vfs[1].error = xstrdup("physfn: link to '0000:3b:00.0' dangles (PF vanished?)");
}

static void test_pf_fields(void **state)
{
        struct inventory inv;
        make_inventory(&inv);
        json_t *j = inventory_to_json(&inv);
        assert_non_null(j);

        json_t *ifs = json_object_get(j, "interfaces");
        assert_true(json_is_array(ifs));
        assert_int_equal(json_array_size(ifs), 1);
        json_t *pf = json_array_get(ifs, 0);
        assert_string_equal(json_string_value(json_object_get(pf, "name")), "ens1f0");
        assert_string_equal(json_string_value(json_object_get(pf, "mac")), "0c:42:a1:00:00:01");
        assert_string_equal(json_string_value(json_object_get(pf, "driver")), "mlx5_core");
        assert_string_equal(json_string_value(json_object_get(pf, "pciAddress")), "0000:3b:00.0");
        assert_string_equal(json_string_value(json_object_get(pf, "vendor")), "15b3");
        assert_string_equal(json_string_value(json_object_get(pf, "deviceID")), "101b");
        assert_int_equal(json_integer_value(json_object_get(pf, "mtu")), 9000);
        assert_int_equal(json_integer_value(json_object_get(pf, "numVfs")), 2);
        assert_int_equal(json_integer_value(json_object_get(pf, "totalvfs")), 16);
        assert_string_equal(json_string_value(json_object_get(pf, "linkType")), "ETH");
        assert_string_equal(json_string_value(json_object_get(pf, "linkSpeed")), "25000 Mb/s");
        assert_string_equal(json_string_value(json_object_get(pf, "linkAdminState")), "up");
        assert_int_equal(json_integer_value(json_object_get(pf, "numaNode")), 1);
        assert_int_equal(json_integer_value(json_object_get(pf, "iommuGroup")), 10);
        assert_null(json_object_get(pf, "error"));
        assert_null(json_object_get(pf, "rdmaDevices")); /* none on this PF */
        assert_null(json_object_get(pf, "eSwitchMode")); /* unknown without devlink */
        assert_null(json_object_get(pf, "vfs"));         /* the key is "Vfs" */
        assert_int_equal(json_array_size(json_object_get(pf, "Vfs")), 2);
        json_decref(j);
        inventory_done(&inv);
}

static void test_vf_fields(void **state)
{
        struct inventory inv;
        make_inventory(&inv);
        json_t *j = inventory_to_json(&inv);
        assert_non_null(j);
        json_t *vfs = json_object_get(json_array_get(json_object_get(j, "interfaces"), 0), "Vfs");

        json_t *vf = json_array_get(vfs, 0);
        assert_string_equal(json_string_value(json_object_get(vf, "name")), "ens1f0v0");
        assert_string_equal(json_string_value(json_object_get(vf, "mac")), "0c:42:a1:00:00:02");
        assert_string_equal(json_string_value(json_object_get(vf, "pciAddress")), "0000:3b:00.2");
        assert_string_equal(json_string_value(json_object_get(vf, "vendor")), "15b3");
        assert_string_equal(json_string_value(json_object_get(vf, "deviceID")), "101c");
        assert_int_equal(json_integer_value(json_object_get(vf, "mtu")), 1500);
        assert_int_equal(json_integer_value(json_object_get(vf, "vfID")), 0);
        assert_int_equal(json_integer_value(json_object_get(vf, "Vlan")), 100);
        assert_null(json_object_get(vf, "vlan"));
        assert_int_equal(json_integer_value(json_object_get(vf, "iommuGroup")), 11);
        json_t *rdma = json_object_get(vf, "rdmaDevices");
        assert_int_equal(json_array_size(rdma), 1);
        json_t *dev = json_array_get(rdma, 0);
        assert_string_equal(json_string_value(json_object_get(dev, "name")), "mlx5_1");
        json_t *chars = json_object_get(dev, "charDevices");
        assert_int_equal(json_array_size(chars), 2);
        assert_string_equal(json_string_value(json_array_get(chars, 1)), "/dev/infiniband/uverbs1");

        /* vfio-bound VF: no netdev, so no name/mac/mtu; unknown VLAN and group left out */
        vf = json_array_get(vfs, 1);
        assert_int_equal(json_integer_value(json_object_get(vf, "vfID")), 1);
        assert_string_equal(json_string_value(json_object_get(vf, "driver")), "vfio-pci");
        assert_null(json_object_get(vf, "name"));
        assert_null(json_object_get(vf, "mac"));
        assert_null(json_object_get(vf, "mtu"));
        assert_null(json_object_get(vf, "Vlan"));
        assert_null(json_object_get(vf, "iommuGroup"));
        assert_null(json_object_get(vf, "rdmaDevices"));
        assert_non_null(strstr(json_string_value(json_object_get(vf, "error")), "physfn"));
        json_decref(j);
        inventory_done(&inv);
}

/* "guid" as upstream's NodeState VF entries have it (eight octets): the GUID the PF reports
 * for an InfiniBand VF wins over its RDMA device's sysfs node_guid; none without either. */
static void test_vf_guid(void **state)
{
        struct inventory inv;
        make_inventory(&inv);
        struct vf_info *vf0 = &inv.pfs[0].vfs[0], *vf1 = &inv.pfs[0].vfs[1];
        snprintf(vf0->rdma[0].node_guid, sizeof(vf0->rdma[0].node_guid), "0c42:a103:00b8:c0de");
        json_t *j = inventory_to_json(&inv);
        json_t *vfs = json_object_get(json_array_get(json_object_get(j, "interfaces"), 0), "Vfs");
        assert_string_equal(json_string_value(json_object_get(json_array_get(vfs, 0), "guid")),
                            "0c:42:a1:03:00:b8:c0:de");
        assert_null(json_object_get(json_array_get(vfs, 1), "guid"));
        json_decref(j);

        vf0->has_ib_guids = true;
        vf0->ib_node_guid = 0x0200000000000007ULL;
        vf1->has_ib_guids = true; /* zero, as a fresh ConnectX VF: shown, so it can be seen */
        j = inventory_to_json(&inv);
        vfs = json_object_get(json_array_get(json_object_get(j, "interfaces"), 0), "Vfs");
        assert_string_equal(json_string_value(json_object_get(json_array_get(vfs, 0), "guid")),
                            "02:00:00:00:00:00:00:07");
        assert_string_equal(json_string_value(json_object_get(json_array_get(vfs, 1), "guid")),
                            "00:00:00:00:00:00:00:00");
        json_decref(j);
        inventory_done(&inv);
}

static void test_unknowns_and_down(void **state)
{
        struct inventory inv;
        make_inventory(&inv);
        struct pf_info *pf = &inv.pfs[0];
        pf->num_vfs = -1;
        pf->netdevs[0].speed_mbps = -1;
        pf->netdevs[0].admin_up = false;
        strcpy(pf->netdevs[0].operstate, "lowerlayerdown"); /* no carrier */
        pf->netdevs[0].link_type = LINK_TYPE_IB;
        pf->error = xstrdup("sriov_numvfs: 'x3' is not a VF count");
        strcpy(pf->eswitch_mode, "switchdev");

        json_t *j = inventory_to_json(&inv);
        assert_non_null(j);
        json_t *o = json_array_get(json_object_get(j, "interfaces"), 0);
        assert_null(json_object_get(o, "numVfs"));
        assert_null(json_object_get(o, "linkSpeed"));
        assert_string_equal(json_string_value(json_object_get(o, "linkAdminState")), "down");
        assert_string_equal(json_string_value(json_object_get(o, "linkState")), "lowerlayerdown");
        assert_string_equal(json_string_value(json_object_get(o, "linkType")), "IB");
        assert_string_equal(json_string_value(json_object_get(o, "eSwitchMode")), "switchdev");
        assert_string_equal(json_string_value(json_object_get(o, "error")),
                            "sriov_numvfs: 'x3' is not a VF count");
        json_decref(j);
        inventory_done(&inv);
}

static void test_empty(void **state)
{
        struct inventory inv = {};
        json_t *j = inventory_to_json(&inv);
        assert_non_null(j);
        char *s = json_dumps(j, JSON_COMPACT);
        assert_string_equal(s, "{\"interfaces\":[]}");
        free(s);
        json_decref(j);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pf_fields), cmocka_unit_test(test_vf_fields),
                cmocka_unit_test(test_vf_guid),   cmocka_unit_test(test_unknowns_and_down),
                cmocka_unit_test(test_empty),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
