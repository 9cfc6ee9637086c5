/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/host discovery on trees written by test/sysfs-gen/gen-sysfs.py.
 *
 * Each test generates a tree into a temp dir ($SRCDIR locates the generator), runs
 * host_discover() on it and checks what a user would check in `sriov-agent discover`: ids,
 * drivers, VF indexes and addresses, NUMA and IOMMU, netdevs, RDMA devices with their char
 * devices, and per-device errors for garbled trees while the other devices stay complete.
 * Expected addresses and groups come from the generator's --manifest, model facts (ids,
 * drivers, offsets) are spelled out. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "host/discover-kernel.h"
#include "host/discover.h"
#include "model/inventory-json.h"
#include "model/inventory.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"

extern char **environ;

struct tree {
        char dir[64];  /* temp dir */
        char root[96]; /* dir/sys: the sysfs root */
        json_t *manifest;
        struct inventory inv;
};

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        return remove(path);
}

/* Runs gen-sysfs.py --out root --manifest ARGS... and host_discover() on the result. */
static void tree_make(struct tree *t, const char *const *args)
{
        const char *srcdir = getenv("SRCDIR");
        char gen[512], manifest_path[160];
        const char *argv[32];
        size_t n = 0;

        assert_non_null(srcdir);
        snprintf(gen, sizeof(gen), "%s/test/sysfs-gen/gen-sysfs.py", srcdir);
        /* tmpfs when there is one: creating a tree's ~1000 files on a disk-backed /tmp of a
         * busy machine takes seconds */
        snprintf(t->dir, sizeof(t->dir), "%s/sriov-test-discover-XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        assert_non_null(mkdtemp(t->dir));
        snprintf(t->root, sizeof(t->root), "%s/sys", t->dir);
        snprintf(manifest_path, sizeof(manifest_path), "%s/manifest.json", t->dir);

        argv[n++] = "python3";
        argv[n++] = gen;
        argv[n++] = "--out";
        argv[n++] = t->root;
        argv[n++] = "--manifest";
        for (; args && *args; args++) {
                assert_true(n < 30);
                argv[n++] = *args;
        }
        argv[n] = NULL;

        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, manifest_path,
                                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
        pid_t pid;
        int status;
        assert_int_equal(posix_spawnp(&pid, "python3", &fa, NULL, (char *const *)argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

        json_error_t err;
        t->manifest = json_load_file(manifest_path, 0, &err);
        assert_non_null(t->manifest);
}

static void tree_discover(struct tree *t)
{
        struct discover_options opts = { .sysfs_root = t->root, .pci_names = true };
        assert_int_equal(host_discover(&opts, &t->inv), 0);
}

static void tree_free(struct tree *t)
{
        inventory_done(&t->inv);
        json_decref(t->manifest);
        nftw(t->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The manifest's entry of the PF whose netdev is ifname. */
static json_t *manifest_pf(const struct tree *t, const char *ifname)
{
        size_t i;
        json_t *pf;
        json_array_foreach(json_object_get(t->manifest, "pfs"), i, pf)
        {
                const char *name = json_string_value(json_object_get(pf, "ifname"));
                if (name && strcmp(name, ifname) == 0)
                        return pf;
        }
        fail_msg("manifest has no PF %s", ifname);
        return NULL;
}

static const struct pf_info *find_pf(const struct tree *t, const char *ifname)
{
        const struct pf_info *pf = inventory_find_pf_by_netdev(&t->inv, ifname);
        if (!pf)
                fail_msg("discovery did not report PF %s", ifname);
        return pf;
}

static bool has_char_device(const struct rdma_device *d, const char *path)
{
        for (size_t i = 0; i < d->n_char_devices; i++)
                if (strcmp(d->char_devices[i], path) == 0)
                        return true;
        return false;
}

static void assert_rdma_matches(const struct rdma_device *d, json_t *expected, bool rdma_cm)
{
        char path[96];
        assert_string_equal(d->name, json_string_value(json_object_get(expected, "name")));
        const char *kinds[] = { "uverbs", "umad", "issm" };
        for (size_t k = 0; k < 3; k++) {
                snprintf(path, sizeof(path), "/dev/infiniband/%s",
                         json_string_value(json_object_get(expected, kinds[k])));
                assert_true(has_char_device(d, path));
        }
        assert_int_equal(has_char_device(d, "/dev/infiniband/rdma_cm"), rdma_cm);
        assert_int_equal(d->n_char_devices, rdma_cm ? 4 : 3);
        assert_int_equal(strlen(d->node_guid), 19); /* "xxxx:xxxx:xxxx:xxxx" */
}

/* The pcieRoot DRA publishes, computed here independently of lib/host: the first directory
 * below <root>/devices of the function's resolved sysfs path. */
static void expected_pcie_root(const struct tree *t, const char *pci, char *buf, size_t size)
{
        char link[256], real[PATH_MAX], top[PATH_MAX];
        snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", t->root, pci);
        assert_non_null(realpath(link, real));
        assert_non_null(realpath(t->root, top));
        strcat(top, "/devices/");
        assert_int_equal(strncmp(real, top, strlen(top)), 0);
        const char *rest = real + strlen(top);
        snprintf(buf, size, "%.*s", (int)strcspn(rest, "/"), rest);
        assert_int_equal(strncmp(buf, "pci", 3), 0);
}

/* PF and VFs as the manifest describes them; no errors. */
static void assert_pf_matches(const struct tree *t, const struct pf_info *pf, json_t *m)
{
        size_t i;
        json_t *vf_m;

        assert_string_equal(pf->pci_address, json_string_value(json_object_get(m, "pciAddress")));
        assert_int_equal(pf->numa_node, json_integer_value(json_object_get(m, "numa")));
        assert_int_equal(pf->iommu_group, json_integer_value(json_object_get(m, "iommuGroup")));
        assert_int_equal(pf->num_vfs, json_integer_value(json_object_get(m, "numVfs")));
        assert_int_equal(pf->total_vfs, json_integer_value(json_object_get(m, "totalVfs")));
        assert_string_equal(pf->driver, json_string_value(json_object_get(m, "driver")));
        assert_null(pf->error);
        assert_int_equal(pf->n_vfs, json_array_size(json_object_get(m, "vfs")));
        json_array_foreach(json_object_get(m, "vfs"), i, vf_m)
        {
                const struct vf_info *vf = &pf->vfs[i];
                assert_int_equal(vf->vf_index, (int)i);
                assert_string_equal(vf->pci_address,
                                    json_string_value(json_object_get(vf_m, "pciAddress")));
                assert_string_equal(vf->driver, json_string_value(json_object_get(vf_m, "driver")));
                assert_int_equal(vf->iommu_group,
                                 json_integer_value(json_object_get(vf_m, "iommuGroup")));
                assert_int_equal(vf->numa_node, pf->numa_node);
                assert_int_equal(vf->vendor, pf->vendor);
                assert_int_equal(vf->device, pf->vf_device);
                assert_int_equal(vf->vlan, -1); /* unknown without netlink */
                char root[PCIE_ROOT_MAX];
                expected_pcie_root(t, vf->pci_address, root, sizeof(root));
                assert_string_equal(vf->pcie_root, root);
                assert_null(vf->error);
                const char *ifname = json_string_value(json_object_get(vf_m, "ifname"));
                if (ifname) {
                        assert_int_equal(vf->n_netdevs, 1);
                        assert_string_equal(vf_netdev_name(vf), ifname);
                }
                json_t *rdma_m = json_object_get(vf_m, "rdma");
                assert_int_equal(vf->n_rdma, json_array_size(rdma_m));
                if (vf->n_rdma)
                        assert_rdma_matches(&vf->rdma[0], json_array_get(rdma_m, 0), true);
        }
}

static void test_seed_connectx6(void **state)
{
        struct tree t = {};
        tree_make(&t, NULL);
        tree_discover(&t);

        const struct pf_info *pf = find_pf(&t, "ens1f0");
        assert_pf_matches(&t, pf, manifest_pf(&t, "ens1f0"));
        assert_string_equal(pf->pci_address, "0000:3b:00.0");
        assert_int_equal(pf->vendor, 0x15b3);
        assert_int_equal(pf->device, 0x101b);
        assert_int_equal(pf->vf_device, 0x101c);
        assert_int_equal(pf->subsystem_vendor, 0x15b3);
        assert_int_equal(pf->class_code, 0x020000);
        assert_string_equal(pf->driver, "mlx5_core");
        assert_int_equal(pf->num_vfs, 8);
        assert_true(pf->total_vfs >= 8);
        /* names come from pci.ids through libpci */
        assert_non_null(pf->vendor_name);
        assert_non_null(strstr(pf->vendor_name, "Mellanox"));
        assert_non_null(pf->device_name);
        assert_non_null(strstr(pf->device_name, "ConnectX-6"));

        /* the netdev, checked against the tree's own files */
        char path[256], mac[64];
        snprintf(path, sizeof(path), "%s/class/net/ens1f0/address", t.root);
        assert_int_equal(read_line_file(path, mac, sizeof(mac)), 0);
        assert_int_equal(pf->n_netdevs, 1);
        assert_string_equal(pf->netdevs[0].mac, mac);
        assert_int_equal(pf->netdevs[0].mtu, 1500);
        assert_int_equal(pf->netdevs[0].speed_mbps, 100000);
        assert_int_equal(pf->netdevs[0].link_type, LINK_TYPE_ETH);
        assert_true(pf->netdevs[0].admin_up);
        assert_string_equal(pf->netdevs[0].operstate, "up");

        /* RDMA on the PF and on every VF */
        assert_int_equal(pf->n_rdma, 1);
        assert_rdma_matches(&pf->rdma[0],
                            json_array_get(json_object_get(manifest_pf(&t, "ens1f0"), "rdma"), 0),
                            true);
        assert_string_equal(pf->rdma[0].port_state, "4: ACTIVE");
        assert_string_equal(pf->rdma[0].link_layer, "Ethernet");
        for (size_t i = 0; i < pf->n_vfs; i++) {
                assert_int_equal(pf->vfs[i].n_rdma, 1);
                assert_string_equal(pf->vfs[i].rdma[0].port_state, "1: DOWN");
                assert_false(pf->vfs[i].netdevs[0].admin_up);
                assert_int_equal(pf->vfs[i].netdevs[0].speed_mbps, -1);
        }
        assert_non_null(pf_find_vf(pf, 7));
        assert_null(pf_find_vf(pf, 8));

        /* the second port has no VFs yet */
        const struct pf_info *pf1 = find_pf(&t, "ens1f1");
        assert_pf_matches(&t, pf1, manifest_pf(&t, "ens1f1"));
        assert_int_equal(pf1->n_vfs, 0);
        tree_free(&t);
}

/* The agent's own discoveries (reconcile, plan) show no names: they skip loading pci.ids. */
static void test_names_only_when_asked(void **state)
{
        struct tree t = {};
        tree_make(&t, NULL);
        assert_int_equal(host_discover(&(struct discover_options){ .sysfs_root = t.root }, &t.inv),
                         0);
        const struct pf_info *pf = find_pf(&t, "ens1f0");
        assert_int_equal(pf->vendor, 0x15b3);
        assert_int_equal(pf->device, 0x101b);
        assert_null(pf->vendor_name);
        assert_null(pf->device_name);
        assert_pf_matches(&t, pf, manifest_pf(&t, "ens1f0"));
        tree_free(&t);
}

static void test_e810_and_igb(void **state)
{
        struct tree t = {};
        tree_make(&t, NULL);
        tree_discover(&t);

        const struct pf_info *ice = find_pf(&t, "ens2f0");
        assert_pf_matches(&t, ice, manifest_pf(&t, "ens2f0"));
        assert_int_equal(ice->vendor, 0x8086);
        assert_int_equal(ice->device, 0x159b);
        assert_int_equal(ice->vf_device, 0x1889);
        assert_string_equal(ice->driver, "ice");
        assert_string_equal(ice->vfs[0].driver, "iavf");
        assert_int_equal(ice->numa_node, 1);
        assert_int_equal(ice->netdevs[0].speed_mbps, 25000);
        assert_int_equal(ice->n_rdma, 0);
        assert_int_equal(ice->n_vfs, 4);

        const struct pf_info *igb = find_pf(&t, "eno1");
        assert_pf_matches(&t, igb, manifest_pf(&t, "eno1"));
        assert_int_equal(igb->device, 0x10c9);
        assert_int_equal(igb->vf_device, 0x10ca);
        assert_int_equal(igb->total_vfs, 7);
        assert_string_equal(igb->vfs[1].driver, "igbvf");
        /* 82576: VF offset 128, stride 2 from 0000:41:00.0 */
        assert_string_equal(igb->pci_address, "0000:41:00.0");
        assert_string_equal(igb->vfs[0].pci_address, "0000:41:10.0");
        assert_string_equal(igb->vfs[1].pci_address, "0000:41:10.2");
        tree_free(&t);
}

static void test_only_network_pfs(void **state)
{
        struct tree t = {};
        const char *args[] = { "--profile", "mixed", NULL };
        tree_make(&t, args);
        tree_discover(&t);

        /* ens1f0 ens1f1 ens2f0 eno1 ens2f1 ibs3f0; not the NVMe PF, not virtio (no SR-IOV) */
        assert_int_equal(t.inv.n_pfs, 6);
        for (size_t i = 0; i < t.inv.n_pfs; i++) {
                assert_int_not_equal(t.inv.pfs[i].vendor, 0x1b36);
                assert_int_equal(t.inv.pfs[i].class_code >> 16, 0x02);
                assert_null(t.inv.pfs[i].error);
                if (i > 0) /* sorted by PCI address */
                        assert_true(strcmp(t.inv.pfs[i - 1].pci_address, t.inv.pfs[i].pci_address) <
                                    0);
        }
        assert_null(inventory_find_pf_by_netdev(&t.inv, "enp0s3"));
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(t.manifest, "pfs"), i, m)
        {
                const char *model = json_string_value(json_object_get(m, "model"));
                const char *addr = json_string_value(json_object_get(m, "pciAddress"));
                bool expected = strcmp(model, "nvme") != 0 && strcmp(model, "virtio") != 0;
                assert_int_equal(inventory_find_pf(&t.inv, addr) != NULL, expected);
        }
        tree_free(&t);
}

static void test_numa_and_iommu(void **state)
{
        struct tree t = {};
        const char *args[] = { "--profile", "mixed", NULL };
        tree_make(&t, args);
        tree_discover(&t);

        assert_int_equal(find_pf(&t, "ens1f0")->numa_node, 0);
        assert_int_equal(find_pf(&t, "ens2f1")->numa_node, 1);
        const struct pf_info *ib = find_pf(&t, "ibs3f0");
        assert_pf_matches(&t, ib, manifest_pf(&t, "ibs3f0"));
        assert_int_equal(ib->numa_node, 2);
        for (size_t i = 0; i < ib->n_vfs; i++)
                assert_int_equal(ib->vfs[i].numa_node, 2);

        /* every function has its own group: no two reported groups are equal */
        int groups[512];
        size_t n = 0;
        for (size_t p = 0; p < t.inv.n_pfs; p++) {
                groups[n++] = t.inv.pfs[p].iommu_group;
                for (size_t v = 0; v < t.inv.pfs[p].n_vfs; v++)
                        groups[n++] = t.inv.pfs[p].vfs[v].iommu_group;
        }
        for (size_t a = 0; a < n; a++) {
                assert_true(groups[a] >= 0);
                for (size_t b = a + 1; b < n; b++)
                        assert_int_not_equal(groups[a], groups[b]);
        }

        /* no IOMMU: the link is absent and the group unknown, which is not an error */
        char path[256];
        snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/iommu_group", t.root,
                 ib->vfs[0].pci_address);
        assert_int_equal(unlink(path), 0);
        inventory_done(&t.inv);
        tree_discover(&t);
        ib = find_pf(&t, "ibs3f0");
        assert_int_equal(ib->vfs[0].iommu_group, -1);
        assert_null(ib->vfs[0].error);
        tree_free(&t);
}

static void test_infiniband_link(void **state)
{
        struct tree t = {};
        const char *args[] = { "--profile", "mixed", NULL };
        tree_make(&t, args);
        tree_discover(&t);

        const struct pf_info *ib = find_pf(&t, "ibs3f0");
        assert_int_equal(ib->netdevs[0].link_type, LINK_TYPE_IB);
        assert_int_equal(ib->netdevs[0].mtu, 2044);
        assert_int_equal(strlen(ib->netdevs[0].mac), 59); /* 20-byte IPoIB address */
        assert_string_equal(ib->rdma[0].link_layer, "InfiniBand");
        assert_int_equal(ib->vfs[0].netdevs[0].link_type, LINK_TYPE_IB);
        assert_string_equal(ib->vfs[0].rdma[0].link_layer, "InfiniBand");
        assert_int_equal(find_pf(&t, "ens2f0")->netdevs[0].link_type, LINK_TYPE_ETH);
        tree_free(&t);
}

/* An InfiniBand VF as mlx5 shows it after a driver load: the PF's VF info reports GUID 0, its
 * IPoIB netdev's 20-byte address ends with the GUID the VF carries. The inventory (and the
 * NodeState's "guid", as `sriov-agent discover` prints it) says that GUID; a node GUID the VF
 * info does report is kept. */
static void test_ib_guid_from_ipoib_address(void **state)
{
        struct tree t = {};
        const char *args[] = { "--profile", "mixed", NULL };
        tree_make(&t, args);
        tree_discover(&t);

        struct vf_info *vf = (struct vf_info *)&find_pf(&t, "ibs3f0")->vfs[0];
        const char *address = vf->netdevs[0].mac;
        assert_int_equal(strlen(address), 59);
        /* the last 8 of the address's 20 octets: the port GUID */
        uint64_t carried = 0;
        const char *p = address + 36;
        for (size_t i = 0; i < 8; i++) {
                char *end;
                unsigned long octet = strtoul(p, &end, 16);
                assert_true(end == p + 2 && octet <= 0xff);
                carried = carried << 8 | octet;
                p = *end == ':' ? end + 1 : end;
        }
        assert_true(carried != 0);

        host_discover_vf_guids(vf, &(const struct netlink_vf_info){ .has_guids = true });
        assert_true(vf->has_ib_guids);
        assert_true(vf->ib_port_guid == carried && vf->ib_node_guid == carried);
        json_t *j = vf_info_to_json(vf);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "guid")), address + 36);
        json_decref(j);

        host_discover_vf_guids(vf, &(const struct netlink_vf_info){
                                       .has_guids = true, .node_guid = 0x0200000000aa0001ULL });
        assert_true(vf->ib_port_guid == carried && vf->ib_node_guid == 0x0200000000aa0001ULL);

        /* without its IPoIB netdev here (vfio-pci, in a pod): what the VF info says */
        size_t n = vf->n_netdevs;
        vf->n_netdevs = 0;
        host_discover_vf_guids(vf, &(const struct netlink_vf_info){ .has_guids = true });
        assert_true(vf->ib_port_guid == 0 && vf->ib_node_guid == 0);
        vf->n_netdevs = n;
        tree_free(&t);
}

static void test_rxe_tied_by_parent(void **state)
{
        struct tree t = {};
        tree_make(&t, NULL);
        tree_discover(&t);

        json_t *rxe = json_array_get(json_object_get(t.manifest, "rxe"), 0);
        assert_string_equal(json_string_value(json_object_get(rxe, "parent")), "eno1");

        const struct pf_info *igb = find_pf(&t, "eno1");
        assert_int_equal(igb->n_rdma, 1);
        assert_string_equal(igb->rdma[0].name, "rxe0");
        assert_string_equal(igb->rdma[0].node_guid, "5054:00ff:fe12:3456");
        assert_string_equal(igb->rdma[0].port_state, "4: ACTIVE");
        char path[64];
        snprintf(path, sizeof(path), "/dev/infiniband/%s",
                 json_string_value(json_object_get(rxe, "uverbs")));
        assert_true(has_char_device(&igb->rdma[0], path));
        assert_true(has_char_device(&igb->rdma[0], "/dev/infiniband/rdma_cm"));
        /* the igb VFs have their own netdevs, so rxe0 is not theirs */
        for (size_t i = 0; i < igb->n_vfs; i++)
                assert_int_equal(igb->vfs[i].n_rdma, 0);

        /* tie it to a VF's netdev instead */
        tree_free(&t);
        const char *args[] = { "--rxe", "rxe3:ens2f0v1", NULL };
        tree_make(&t, args);
        tree_discover(&t);
        const struct pf_info *ice = find_pf(&t, "ens2f0");
        assert_int_equal(ice->n_rdma, 0);
        assert_int_equal(ice->vfs[1].n_rdma, 1);
        assert_string_equal(ice->vfs[1].rdma[0].name, "rxe3");
        assert_int_equal(find_pf(&t, "eno1")->n_rdma, 0);
        tree_free(&t);
}

static void test_rdma_cm_absent(void **state)
{
        struct tree t = {};
        char path[256];
        tree_make(&t, NULL);
        snprintf(path, sizeof(path), "%s/class/misc/rdma_cm", t.root);
        assert_int_equal(unlink(path), 0);
        tree_discover(&t);

        const struct pf_info *pf = find_pf(&t, "ens1f0");
        assert_rdma_matches(&pf->rdma[0],
                            json_array_get(json_object_get(manifest_pf(&t, "ens1f0"), "rdma"), 0),
                            false);
        tree_free(&t);
}

/* Discovery of a garbled tree: the damaged device carries an error mentioning `what`, and
 * every other PF is still reported complete. */
static const struct pf_info *discover_garbled(struct tree *t, const char *kind, const char *what)
{
        char garble[64];
        snprintf(garble, sizeof(garble), "%s:ens1f0", kind);
        const char *args[] = { "--garble", garble, NULL };
        tree_make(t, args);
        tree_discover(t);

        assert_int_equal(t->inv.n_pfs, 4);
        const char *others[] = { "ens1f1", "ens2f0", "eno1" };
        for (size_t i = 0; i < 3; i++)
                assert_pf_matches(t, find_pf(t, others[i]), manifest_pf(t, others[i]));

        const struct pf_info *pf = inventory_find_pf(&t->inv, "0000:3b:00.0");
        assert_non_null(pf);
        if (what) {
                assert_non_null(pf->error);
                if (!strstr(pf->error, what))
                        fail_msg("PF error '%s' does not mention '%s'", pf->error, what);
        }
        return pf;
}

static void test_garble_numvfs_nonnumeric(void **state)
{
        struct tree t = {};
        const struct pf_info *pf = discover_garbled(&t, "numvfs-nonnumeric", "sriov_numvfs");
        assert_non_null(strstr(pf->error, "'x3'"));
        assert_int_equal(pf->num_vfs, -1);
        assert_int_equal(pf->total_vfs, 16);
        assert_int_equal(pf->n_vfs, 8); /* the VFs themselves are fine */
        assert_null(pf->vfs[7].error);
        assert_string_equal(pf->driver, "mlx5_core");
        tree_free(&t);
}

static void test_garble_dangling_driver(void **state)
{
        struct tree t = {};
        const struct pf_info *pf = discover_garbled(&t, "dangling-driver", "driver");
        assert_non_null(strstr(pf->error, "gone_driver"));
        assert_string_equal(pf->driver, "");
        assert_int_equal(pf->n_vfs, 8);
        assert_int_equal(pf->vendor, 0x15b3);
        tree_free(&t);
}

static void test_garble_dangling_virtfn(void **state)
{
        struct tree t = {};
        const struct pf_info *pf = discover_garbled(&t, "dangling-virtfn", NULL);
        assert_null(pf->error);
        assert_int_equal(pf->n_vfs, 8);
        assert_non_null(pf->vfs[0].error);
        assert_non_null(strstr(pf->vfs[0].error, "virtfn0"));
        assert_non_null(strstr(pf->vfs[0].error, "missing"));
        assert_string_equal(pf->vfs[0].pci_address, "0000:3b:00.2");
        for (size_t i = 1; i < pf->n_vfs; i++) {
                assert_null(pf->vfs[i].error);
                assert_string_equal(pf->vfs[i].driver, "mlx5_core");
        }
        tree_free(&t);
}

static void test_garble_missing_files(void **state)
{
        struct tree t = {};
        const struct pf_info *pf = discover_garbled(&t, "missing-files", "device");
        assert_non_null(strstr(pf->error, "numa_node"));
        assert_non_null(strstr(pf->error, "sriov_numvfs"));
        assert_non_null(strstr(pf->error, "net/ens1f0/mtu"));
        assert_int_equal(pf->vendor, 0x15b3);
        assert_int_equal(pf->device, 0);
        assert_int_equal(pf->numa_node, -1);
        assert_int_equal(pf->num_vfs, -1);
        assert_int_equal(pf->netdevs[0].mtu, -1);
        assert_int_equal(pf->netdevs[0].speed_mbps, 100000);
        assert_int_equal(pf->n_vfs, 8);
        tree_free(&t);
}

static void test_garble_orphan_vf(void **state)
{
        struct tree t = {};
        const struct pf_info *pf = discover_garbled(&t, "orphan-vf", NULL);
        assert_null(pf->error);
        assert_non_null(pf->vfs[1].error);
        assert_non_null(strstr(pf->vfs[1].error, "physfn"));
        assert_null(pf->vfs[0].error);
        assert_null(pf->vfs[2].error);
        /* what could be read is still there */
        assert_string_equal(pf->vfs[1].driver, "mlx5_core");
        assert_int_equal(pf->vfs[1].n_rdma, 1);
        tree_free(&t);
}

static void test_garble_hostile_names(void **state)
{
        struct tree t = {};
        const struct pf_info *pf =
            discover_garbled(&t, "hostile-names", "'bad name': not a valid interface name");
        assert_non_null(strstr(pf->error, "'../../../etc' is not a valid RDMA device name"));
        assert_int_equal(pf->n_netdevs, 1);
        assert_string_equal(pf->netdevs[0].name, "ens1f0");
        /* With two RDMA devices on the function its entries' ibdev files decide: the uverbs
         * entry with the hostile ibdev is attributed to neither, umad0 to the device it names. */
        assert_int_equal(pf->n_rdma, 2);
        for (size_t i = 0; i < pf->n_rdma; i++) {
                assert_false(has_char_device(&pf->rdma[i], "/dev/infiniband/uverbs0"));
                assert_int_equal(has_char_device(&pf->rdma[i], "/dev/infiniband/umad0"),
                                 strcmp(pf->rdma[i].name, "mlx5_99") != 0);
        }
        /* rxe66's parent "../../etc" is ignored; rxe0 stays on eno1 */
        for (size_t p = 0; p < t.inv.n_pfs; p++)
                for (size_t r = 0; r < t.inv.pfs[p].n_rdma; r++)
                        assert_string_not_equal(t.inv.pfs[p].rdma[r].name, "rxe66");
        assert_string_equal(find_pf(&t, "eno1")->rdma[0].name, "rxe0");
        tree_free(&t);
}

/* A function with one RDMA device owns every char device under it: found by the class walk,
 * without reading their ibdev files (here removed: discovery neither needs nor misses them). */
static void test_char_devices_of_one_device_without_ibdev(void **state)
{
        struct tree t = {};
        tree_make(&t, NULL);
        json_t *expected = json_array_get(json_object_get(manifest_pf(&t, "ens1f0"), "rdma"), 0);
        const char *entries[][2] = { { "infiniband_verbs", "uverbs" },
                                     { "infiniband_mad", "umad" },
                                     { "infiniband_mad", "issm" } };
        for (size_t i = 0; i < ELEMENTSOF(entries); i++) {
                char path[512];
                snprintf(path, sizeof(path), "%s/class/%s/%s/ibdev", t.root, entries[i][0],
                         json_string_value(json_object_get(expected, entries[i][1])));
                assert_int_equal(unlink(path), 0);
        }
        tree_discover(&t);

        const struct pf_info *pf = find_pf(&t, "ens1f0");
        assert_null(pf->error);
        assert_int_equal(pf->n_rdma, 1);
        assert_rdma_matches(&pf->rdma[0], expected, true);
        /* and every VF's, whose ibdev files are there, as before */
        json_t *vfs = json_object_get(manifest_pf(&t, "ens1f0"), "vfs");
        assert_int_equal(pf->n_vfs, json_array_size(vfs));
        for (size_t v = 0; v < pf->n_vfs; v++) {
                assert_null(pf->vfs[v].error);
                assert_int_equal(pf->vfs[v].n_rdma, 1);
                assert_int_equal(pf->vfs[v].rdma[0].n_char_devices, 4);
        }
        tree_free(&t);
}

/* Each VF of ens1f0 has the one RDMA device the generator gave it, with its char devices. */
static void assert_vfs_rdma_as_generated(const struct tree *t)
{
        const struct pf_info *pf = find_pf(t, "ens1f0");
        json_t *vfs = json_object_get(manifest_pf(t, "ens1f0"), "vfs");
        assert_int_equal(pf->n_vfs, json_array_size(vfs));
        for (size_t v = 0; v < pf->n_vfs; v++) {
                json_t *expected = json_array_get(
                    json_object_get(json_array_get(vfs, pf->vfs[v].vf_index), "rdma"), 0);
                assert_null(pf->vfs[v].error);
                assert_int_equal(pf->vfs[v].n_rdma, 1);
                assert_rdma_matches(&pf->vfs[v].rdma[0], expected, true);
        }
}

/* A function's RDMA devices come from the class/infiniband walk, one readlinkat per device,
 * instead of a listing of each function's infiniband/; where that walk is not whole its
 * listing is still read. Here class/infiniband is gone (a tree without it, as written by hand)
 * and every device is still found. */
static void test_rdma_devices_without_class_dir(void **state)
{
        struct tree t = {};
        char path[512];
        tree_make(&t, NULL);
        snprintf(path, sizeof(path), "%s/class/infiniband", t.root);
        assert_int_equal(nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
        tree_discover(&t);
        assert_vfs_rdma_as_generated(&t);
        tree_free(&t);
}

/* An entry of class/infiniband that names no device (not a link: readlinkat fails) makes the
 * walk not whole: a VF whose own link is missing from it still has its device, from its
 * listing. */
static void test_rdma_devices_class_walk_not_whole(void **state)
{
        struct tree t = {};
        char path[512];
        tree_make(&t, NULL);
        json_t *vf0 = json_array_get(json_object_get(manifest_pf(&t, "ens1f0"), "vfs"), 0);
        const char *name = json_string_value(
            json_object_get(json_array_get(json_object_get(vf0, "rdma"), 0), "name"));
        snprintf(path, sizeof(path), "%s/class/infiniband/%s", t.root, name);
        assert_int_equal(unlink(path), 0);
        snprintf(path, sizeof(path), "%s/class/infiniband/not-a-link", t.root);
        assert_int_equal(write_file_atomic(path, "x", 1, 0644), 0);
        tree_discover(&t);
        assert_vfs_rdma_as_generated(&t);
        tree_free(&t);
}

static void test_hostile_virtfn_link(void **state)
{
        struct tree t = {};
        char path[256];
        tree_make(&t, NULL);
        snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:3b:00.0/virtfn9", t.root);
        assert_int_equal(symlink("../../../../../etc", path), 0);
        snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:3b:00.0/virtfn..", t.root);
        assert_int_equal(symlink("../0000:3b:00.2", path), 0);
        tree_discover(&t);

        const struct pf_info *pf = find_pf(&t, "ens1f0");
        assert_non_null(pf->error);
        assert_non_null(strstr(pf->error, "virtfn9: link does not name a PCI address"));
        assert_non_null(strstr(pf->error, "'virtfn..': not a virtfn index"));
        assert_int_equal(pf->n_vfs, 8);
        for (size_t i = 0; i < pf->n_vfs; i++)
                assert_null(pf->vfs[i].error);
        tree_free(&t);
}

static void test_empty_and_missing_roots(void **state)
{
        struct tree t = {};
        const char *args[] = { "--profile", "none", NULL };
        tree_make(&t, args);
        tree_discover(&t);
        assert_int_equal(t.inv.n_pfs, 0);
        assert_null(t.inv.pfs);

        struct inventory inv;
        struct discover_options opts = { .sysfs_root = t.dir }; /* no bus/pci/devices */
        assert_int_equal(host_discover(&opts, &inv), -ENOENT);
        assert_int_equal(inv.n_pfs, 0);
        opts.sysfs_root = "/nonexistent/sriov-agent-test";
        assert_int_equal(host_discover(&opts, &inv), -ENOENT);
        tree_free(&t);
}

static void test_scale(void **state)
{
        struct tree t = {};
        const char *args[] = { "--scale", "2x64", NULL };
        tree_make(&t, args);
        tree_discover(&t);
        assert_int_equal(t.inv.n_pfs, 2);
        for (size_t p = 0; p < 2; p++) {
                char ifname[16];
                snprintf(ifname, sizeof(ifname), "sc%zup0", p);
                assert_pf_matches(&t, find_pf(&t, ifname), manifest_pf(&t, ifname));
                assert_int_equal(t.inv.pfs[p].n_vfs, 64);
        }
        tree_free(&t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_seed_connectx6),
                cmocka_unit_test(test_names_only_when_asked),
                cmocka_unit_test(test_e810_and_igb),
                cmocka_unit_test(test_only_network_pfs),
                cmocka_unit_test(test_numa_and_iommu),
                cmocka_unit_test(test_infiniband_link),
                cmocka_unit_test(test_ib_guid_from_ipoib_address),
                cmocka_unit_test(test_rxe_tied_by_parent),
                cmocka_unit_test(test_rdma_cm_absent),
                cmocka_unit_test(test_garble_numvfs_nonnumeric),
                cmocka_unit_test(test_garble_dangling_driver),
                cmocka_unit_test(test_garble_dangling_virtfn),
                cmocka_unit_test(test_garble_missing_files),
                cmocka_unit_test(test_garble_orphan_vf),
                cmocka_unit_test(test_garble_hostile_names),
                cmocka_unit_test(test_char_devices_of_one_device_without_ibdev),
                cmocka_unit_test(test_rdma_devices_without_class_dir),
                cmocka_unit_test(test_rdma_devices_class_walk_not_whole),
                cmocka_unit_test(test_hostile_virtfn_link),
                cmocka_unit_test(test_empty_and_missing_roots),
                cmocka_unit_test(test_scale),
        };
        log_setup(LOG_TARGET_STDERR, LOG_ERR);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
