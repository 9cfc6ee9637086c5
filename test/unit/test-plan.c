/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the planner: minimal actions, order, resets of previously owned PFs, never
 * touching foreign PFs, externally managed PFs, idempotence (plan, simulate, re-plan = nothing)
 * and the applied-state records (JSON and state directory). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/applied-store.h"
#include "fake-inventory.h"
#include "host/discover-kernel.h"
#include "plan/ib-guids.h"
#include "plan/plan.h"
#include "util/fileio.h"

#define PF_A "0000:3b:00.0"
#define PF_B "0000:3b:00.1"
#define PF_C "0000:5e:00.0"

static struct vf_group make_group(const char *res, int start, int end, enum device_type type,
                                  int mtu)
{
        struct vf_group g = { .vf_start = start, .vf_end = end, .device_type = type, .mtu = mtu };
        snprintf(g.resource_name, sizeof(g.resource_name), "%s", res);
        snprintf(g.policy_name, sizeof(g.policy_name), "policy-%s", res);
        return g;
}

/* Appends an interface with the given groups to the desired state. */
static struct desired_interface *want(struct desired_state *d, const char *pci, const char *name,
                                      int num_vfs, int mtu, size_t n_groups,
                                      const struct vf_group *groups)
{
        struct desired_interface *arr =
            realloc(d->interfaces, (d->n_interfaces + 1) * sizeof(*arr));
        struct desired_interface *di;

        assert_non_null(arr);
        d->interfaces = arr;
        di = &arr[d->n_interfaces++];
        *di = (struct desired_interface){ .num_vfs = num_vfs, .mtu = mtu, .n_groups = n_groups };
        snprintf(di->pci_address, sizeof(di->pci_address), "%s", pci);
        snprintf(di->name, sizeof(di->name), "%s", name);
        di->groups = calloc(n_groups + 1, sizeof(*di->groups));
        assert_non_null(di->groups);
        memcpy(di->groups, groups, n_groups * sizeof(*groups));
        return di;
}

static size_t count_kind(const struct plan *p, enum action_kind k)
{
        size_t n = 0;
        for (size_t i = 0; i < p->n_actions; i++)
                n += p->actions[i].kind == k;
        return n;
}

static void dump(const struct plan *p)
{
        for (size_t i = 0; i < p->n_actions; i++) {
                char line[512];
                action_format(&p->actions[i], line, sizeof(line));
                print_message("  %s\n", line);
        }
}

/* Plans, simulates, and checks that re-planning with the new applied state gives nothing. */
static void assert_idempotent(const struct desired_state *d, struct inventory *inv,
                              const struct applied_state *prev)
{
        struct plan p1, p2;

        assert_int_equal(plan_build(d, inv, prev, &p1), 0);
        assert_int_equal(plan_simulate(&p1, inv), 0);
        assert_int_equal(plan_build(d, inv, &p1.applied, &p2), 0);
        if (p2.n_actions != 0) {
                dump(&p2);
                fail_msg("re-plan after simulate gave %zu actions", p2.n_actions);
        }
        plan_done(&p1);
        plan_done(&p2);
}

static void test_seed_fresh_pf(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group g = make_group("sriov_highnet", 0, 7, DEVICE_TYPE_NETDEVICE, 1500);
        struct plan p;

        g.is_rdma = true;
        fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 0, 1500, NULL);
        want(&d, PF_A, "ens1f0", 8, 1500, 1, &g);
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(p.n_actions, 1 + 8);
        assert_int_equal(p.actions[0].kind, ACTION_SET_NUM_VFS);
        assert_int_equal(p.actions[0].value, 8);
        assert_string_equal(p.actions[0].pf, PF_A);
        assert_string_equal(p.actions[0].pf_name, "ens1f0");
        assert_int_equal(p.actions[0].vf_index, -1);
        for (int i = 1; i <= 8; i++) {
                assert_int_equal(p.actions[i].kind, ACTION_SET_VF_MTU);
                assert_int_equal(p.actions[i].vf_index, i - 1);
                assert_string_equal(p.actions[i].vf_address, ""); /* VF not created yet */
                assert_int_equal(p.actions[i].value, 1500);
        }
        assert_int_equal(count_kind(&p, ACTION_SET_PF_MTU), 0); /* 1500 is not below 1500 */
        assert_int_equal(p.applied.n_pfs, 1);
        assert_string_equal(p.applied.pfs[0].pci_address, PF_A);
        assert_int_equal(p.applied.pfs[0].original_mtu, 1500);
        assert_string_equal(p.applied.pfs[0].original_eswitch_mode, "legacy");
        assert_int_equal(p.applied.pfs[0].applied.num_vfs, 8);
        plan_done(&p);
        assert_idempotent(&d, &inv, NULL);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void test_nothing_to_do(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group g = make_group("r", 0, 7, DEVICE_TYPE_NETDEVICE, 1500);
        struct plan p;

        fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 8, 1500, "mlx5_core");
        want(&d, PF_A, "ens1f0", 8, 1500, 1, &g);
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(p.n_actions, 0);
        assert_int_equal(p.applied.n_pfs, 1); /* re-saved, as upstream does */
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void test_pf_mtu_only_raised(void **state)
{
        static const struct {
                int pf_mtu, want_mtu;
                bool action;
        } cases[] = { { 9000, 1500, false },
                      { 1500, 9000, true },
                      { 1500, 0, false },
                      { 9000, 9000, false } };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct inventory inv = { 0 };
                struct desired_state d = { 0 };
                struct vf_group g = make_group("r", 0, 1, DEVICE_TYPE_NETDEVICE, 0);
                struct plan p;

                fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 2, cases[i].pf_mtu,
                            "mlx5_core");
                want(&d, PF_A, "ens1f0", 2, cases[i].want_mtu, 1, &g);
                assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
                assert_int_equal(p.n_actions, cases[i].action ? 1 : 0);
                if (cases[i].action) {
                        assert_int_equal(p.actions[0].kind, ACTION_SET_PF_MTU);
                        assert_int_equal(p.actions[0].value, cases[i].want_mtu);
                }
                plan_done(&p);
                assert_idempotent(&d, &inv, NULL);
                desired_state_done(&d);
                inventory_done(&inv);
        }
}

/* vfio-pci group on VFs 0-3 only: 0-3 are rebound, 4-7 (outside every group) untouched even
 * though one is unbound and another has a wrong MTU. */
static void test_bind_only_group_vfs(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group g = make_group("dpdk", 0, 3, DEVICE_TYPE_VFIO_PCI, 9000);
        struct pf_info *pf;
        struct plan p;

        pf = fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 8, 1500, "mlx5_core");
        snprintf(pf->vfs[1].driver, sizeof(pf->vfs[1].driver), "vfio-pci"); /* already right */
        pf->vfs[5].driver[0] = '\0';
        pf->vfs[6].netdevs[0].mtu = 4000;
        want(&d, PF_A, "ens1f0", 8, 0, 1, &g);
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(p.n_actions, 3);
        for (size_t i = 0; i < 3; i++) {
                assert_int_equal(p.actions[i].kind, ACTION_BIND_DRIVER);
                assert_string_equal(p.actions[i].text, "vfio-pci");
                assert_string_equal(p.actions[i].vf_address,
                                    pf->vfs[p.actions[i].vf_index].pci_address);
        }
        assert_int_equal(p.actions[0].vf_index, 0);
        assert_int_equal(p.actions[1].vf_index, 2);
        assert_int_equal(p.actions[2].vf_index, 3);
        assert_int_equal(count_kind(&p, ACTION_SET_VF_MTU), 0); /* no MTU on vfio-pci VFs */
        plan_done(&p);
        assert_idempotent(&d, &inv, NULL);
        assert_string_equal(inv.pfs[0].vfs[5].driver, ""); /* outside the group: still unbound */
        assert_int_equal(inv.pfs[0].vfs[6].netdevs[0].mtu, 4000);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void test_netdevice_rebind(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group g = make_group("net", 0, 3, DEVICE_TYPE_NETDEVICE, 9000);
        struct pf_info *pf;
        struct plan p;

        pf = fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 4, 9000, "mlx5_core");
        snprintf(pf->vfs[0].driver, sizeof(pf->vfs[0].driver), "vfio-pci");
        pf->vfs[1].driver[0] = '\0';
        snprintf(pf->vfs[2].driver, sizeof(pf->vfs[2].driver), "igb_uio");
        pf->vfs[3].netdevs[0].mtu = 9000; /* right driver, right MTU: nothing */
        want(&d, PF_A, "ens1f0", 4, 0, 1, &g);
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(count_kind(&p, ACTION_BIND_DRIVER), 3);
        assert_int_equal(count_kind(&p, ACTION_SET_VF_MTU), 3);
        for (size_t i = 0; i < 3; i++) {
                assert_int_equal(p.actions[i].kind, ACTION_BIND_DRIVER);
                assert_string_equal(p.actions[i].text, ""); /* the default kernel driver */
                assert_int_equal(p.actions[i + 3].kind, ACTION_SET_VF_MTU);
                assert_int_equal(p.actions[i + 3].vf_index, (int)i);
        }
        plan_done(&p);
        assert_idempotent(&d, &inv, NULL);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* InfiniBand PF: VFs of a group whose GUIDs are zero (as a fresh ConnectX VF's) or not the
 * wanted ones get set-vf-guid (from the pool when it names the PF, else the derived one) before
 * their binds and MTUs, a VF whose GUID is right gets nothing, and a VF that is already re-bound
 * for its GUID gets its MTU again; an Ethernet PF's VFs get none. */
static void test_ib_vf_guids(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group g = make_group("ib", 0, 2, DEVICE_TYPE_NETDEVICE, 4092);
        struct plan p;
        char error[256];
        uint64_t want0;

        struct pf_info *pf =
            fake_add_pf(&inv, PF_A, "ibp59s0f0", 0x15b3, 0x101b, 16, 4, 4092, "mlx5_core");
        pf->netdevs[0].link_type = LINK_TYPE_IB;
        for (size_t i = 0; i < pf->n_vfs; i++) {
                pf->vfs[i].has_ib_guids = true; /* zero GUIDs, as the kernel reports them */
                pf->vfs[i].netdevs[0].mtu = 4092;
        }
        assert_int_equal(ib_guid_for_vf(NULL, pf, 1, &want0, error, sizeof(error)), 0);
        pf->vfs[1].ib_node_guid = pf->vfs[1].ib_port_guid = want0; /* right already */
        want(&d, PF_A, "ibp59s0f0", 4, 0, 1, &g);
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        dump(&p);
        assert_int_equal(count_kind(&p, ACTION_SET_VF_GUID), 2); /* VFs 0 and 2; 3 has no group */
        assert_int_equal(p.actions[0].kind, ACTION_SET_VF_GUID);
        assert_int_equal(p.actions[0].vf_index, 0);
        assert_true(ib_guid_is_valid(p.actions[0].guid));
        assert_int_equal(p.actions[1].vf_index, 2);
        assert_true(p.actions[0].guid != p.actions[1].guid);
        assert_int_equal(count_kind(&p, ACTION_SET_VF_MTU), 2); /* the re-bound ones */
        json_t *j = NULL;
        assert_int_equal(action_to_json(&p.actions[0], &j), 0);
        char text[IB_GUID_TEXT_MAX];
        ib_guid_format(p.actions[0].guid, text);
        assert_string_equal(json_string_value(json_object_get(j, "guid")), text);
        json_decref(j);
        plan_done(&p);
        assert_idempotent(&d, &inv, NULL);

        /* a pool naming the PF: its GUIDs; one it lacks for a VF fails the PF */
        const char *pool_text = "[{\"pciAddress\":\"" PF_A "\",\"guids\":[\"02:00:00:00:00:"
                                "00:00:10\",\"02:00:00:00:00:00:00:11\"]}]";
        struct ib_guid_pool pool;
        assert_int_equal(
            ib_guid_pool_parse(pool_text, strlen(pool_text), &pool, error, sizeof(error)), 0);
        d.ib_guids = &pool;
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        dump(&p);
        assert_true(p.actions[0].kind == ACTION_SET_VF_GUID &&
                    p.actions[0].guid == 0x0200000000000010ULL);
        assert_true(p.actions[1].kind == ACTION_SET_VF_GUID &&
                    p.actions[1].guid == 0x0200000000000011ULL);
        assert_int_equal(p.n_problems, 1);
        assert_true(p.problems[0].pf_failed);
        assert_non_null(strstr(p.problems[0].message, "no GUID for VF 2"));
        plan_done(&p);
        ib_guid_pool_done(&pool);
        d.ib_guids = NULL;

        /* the same VFs on an Ethernet port: no GUIDs */
        pf->netdevs[0].link_type = LINK_TYPE_ETH;
        for (size_t i = 0; i < pf->n_vfs; i++)
                pf->vfs[i].ib_node_guid = pf->vfs[i].ib_port_guid = 0;
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(count_kind(&p, ACTION_SET_VF_GUID), 0);
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* The GUIDs as discovery reads them on mlx5 after a driver load: the PF's VF info reports 0 for
 * every VF (only GUIDs set through netlink since the load show there), while the VFs' IPoIB
 * netdevs carry what they have. VF 1's address carries its pool GUID: it is left alone (no
 * set-vf-guid, no re-bind of a VF that is right); VF 0's carries another GUID and VF 2 has
 * no IPoIB netdev here (vfio-pci, or in a pod): both are set. */
static void test_ib_vf_guid_from_ipoib_address(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group g = make_group("ib", 0, 2, DEVICE_TYPE_NETDEVICE, 4092);
        struct plan p;
        char error[256];
        uint64_t want1;

        struct pf_info *pf =
            fake_add_pf(&inv, PF_A, "ibp59s0f0", 0x15b3, 0x101b, 16, 3, 4092, "mlx5_core");
        pf->netdevs[0].link_type = LINK_TYPE_IB;
        assert_int_equal(ib_guid_for_vf(NULL, pf, 1, &want1, error, sizeof(error)), 0);
        for (size_t i = 0; i < pf->n_vfs; i++) {
                struct netdev_info *nd = &pf->vfs[i].netdevs[0];
                nd->mtu = 4092;
                nd->link_type = LINK_TYPE_IB;
                /* QPN, the GID's subnet prefix, then the port GUID */
                uint64_t u = i == 1 ? want1 : 0x0c42a10300112233ULL;
                snprintf(nd->mac, sizeof(nd->mac),
                         "00:00:10:87:fe:80:00:00:00:00:00:00:%02x:%02x:%02x:%02x:%02x:%02x:%02x:"
                         "%02x",
                         (unsigned)(u >> 56) & 0xff, (unsigned)(u >> 48) & 0xff,
                         (unsigned)(u >> 40) & 0xff, (unsigned)(u >> 32) & 0xff,
                         (unsigned)(u >> 24) & 0xff, (unsigned)(u >> 16) & 0xff,
                         (unsigned)(u >> 8) & 0xff, (unsigned)u & 0xff);
        }
        pf->vfs[2].n_netdevs = 0;
        for (size_t i = 0; i < pf->n_vfs; i++) {
                const struct netlink_vf_info vf_info = { .vf = (int)i, .has_guids = true };
                host_discover_vf_guids(&pf->vfs[i], &vf_info);
        }
        assert_true(pf->vfs[1].ib_port_guid == want1 && pf->vfs[1].ib_node_guid == want1);
        assert_true(pf->vfs[2].has_ib_guids && pf->vfs[2].ib_port_guid == 0);
        want(&d, PF_A, "ibp59s0f0", 3, 0, 1, &g);
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        dump(&p);
        assert_int_equal(count_kind(&p, ACTION_SET_VF_GUID), 2);
        for (size_t i = 0; i < p.n_actions; i++)
                assert_true(p.actions[i].kind != ACTION_SET_VF_GUID || p.actions[i].vf_index != 1);
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* A GUID has one owner. ib-kubernetes gave the pod on VF 0 the GUID 02:aa:...:01 (the ib-sriov
 * plugin's record names it, runtimeConfig.infinibandGUID): while that attachment lives the
 * planner leaves VF 0 alone, whatever the pool says. The pod on VF 1 was given VF 2's pool GUID:
 * VF 2 does not get it while that pod carries it (a warning naming the attachment, not a
 * failure). Once the attachment records are gone the pool's GUIDs come back: VF 0 still showing
 * the pod's GUID gets set-vf-guid to its pool GUID, and when the plugin's DEL restored it there
 * is nothing to do. */
static void test_ib_pod_guid_has_one_owner(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group g = make_group("ib", 0, 2, DEVICE_TYPE_NETDEVICE, 0);
        struct ib_guid_attachments pods = { 0 };
        struct plan p;
        char error[256];
        uint64_t pool[3];
        const uint64_t pod0 = 0x02aa000000000001ULL;

        struct pf_info *pf =
            fake_add_pf(&inv, PF_A, "ibp59s0f0", 0x15b3, 0x101b, 16, 3, 4092, "mlx5_core");
        pf->netdevs[0].link_type = LINK_TYPE_IB;
        for (int i = 0; i < 3; i++) {
                assert_int_equal(ib_guid_for_vf(NULL, pf, i, &pool[i], error, sizeof(error)), 0);
                pf->vfs[i].has_ib_guids = true;
        }
        pf->vfs[0].ib_node_guid = pf->vfs[0].ib_port_guid = pod0;
        pf->vfs[1].ib_node_guid = pf->vfs[1].ib_port_guid = pool[2]; /* VF 2's */
        pf->vfs[2].ib_node_guid = pf->vfs[2].ib_port_guid = 0;       /* fresh */
        want(&d, PF_A, "ibp59s0f0", 3, 0, 1, &g);
        assert_int_equal(ib_guid_attachments_add(&pods, pf->vfs[0].pci_address, pod0, "3f2a-net1"),
                         0);
        assert_int_equal(
            ib_guid_attachments_add(&pods, pf->vfs[1].pci_address, pool[2], "77b0-net1"), 0);
        d.ib_attachments = &pods;

        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        dump(&p);
        assert_int_equal(p.n_actions, 0);
        assert_int_equal(p.n_problems, 1);
        assert_false(p.problems[0].pf_failed);
        print_message("  %s\n", p.problems[0].message);
        assert_non_null(strstr(p.problems[0].message, "VF 2"));
        assert_non_null(strstr(p.problems[0].message, "77b0-net1"));
        assert_non_null(strstr(p.problems[0].message, pf->vfs[1].pci_address));
        plan_done(&p);

        /* both attachments ended, VF 0 still shows its pod's GUID: the pool's comes back */
        ib_guid_attachments_done(&pods);
        pf->vfs[1].ib_node_guid = pf->vfs[1].ib_port_guid = pool[1]; /* DEL restored it */
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        dump(&p);
        assert_int_equal(count_kind(&p, ACTION_SET_VF_GUID), 2);
        assert_int_equal(p.actions[0].vf_index, 0);
        assert_true(p.actions[0].guid == pool[0]);
        assert_int_equal(p.actions[1].vf_index, 2);
        assert_true(p.actions[1].guid == pool[2]);
        assert_int_equal(p.n_problems, 0);
        plan_done(&p);

        /* the plugin's DEL put the pool GUID back: nothing to do */
        pf->vfs[0].ib_node_guid = pf->vfs[0].ib_port_guid = pool[0];
        pf->vfs[2].ib_node_guid = pf->vfs[2].ib_port_guid = pool[2];
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(p.n_actions, 0);
        plan_done(&p);

        /* bad input: no VF, an invalid GUID (no attachment sets one); a VF's later record wins */
        assert_int_equal(ib_guid_attachments_add(&pods, "", pod0, "x"), -EINVAL);
        assert_int_equal(ib_guid_attachments_add(&pods, pf->vfs[0].pci_address, 0, "x"), -EINVAL);
        assert_int_equal(ib_guid_attachments_add(&pods, pf->vfs[0].pci_address, UINT64_MAX, "x"),
                         -EINVAL);
        assert_int_equal(ib_guid_attachments_add(&pods, "0000:3B:02.0", pod0, "old"), 0);
        assert_int_equal(ib_guid_attachments_add(&pods, "0000:3b:02.0", pod0 + 1, "new"), 0);
        assert_int_equal(pods.n_items, 1);
        assert_string_equal(ib_guid_attachment_of_vf(&pods, "0000:3b:02.0")->name, "new");
        assert_null(ib_guid_attachment_holding(&pods, pod0 + 1, "0000:3B:02.0"));
        assert_non_null(ib_guid_attachment_holding(&pods, pod0 + 1, "0000:3b:02.1"));
        assert_null(ib_guid_attachment_of_vf(NULL, "0000:3b:02.0"));
        ib_guid_attachments_done(&pods);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* Per PF: numvfs, eswitch, PF MTU, link up, binds, VF MTUs; PFs in PCI order. */
static void test_order(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group ga[2] = { make_group("a_net", 0, 1, DEVICE_TYPE_NETDEVICE, 9000),
                                  make_group("a_dpdk", 2, 3, DEVICE_TYPE_VFIO_PCI, 0) };
        struct vf_group gb = make_group("b", 0, 1, DEVICE_TYPE_NETDEVICE, 0);
        struct desired_interface *di;
        struct pf_info *pf;
        struct plan p;
        static const enum action_kind expected[] = {
                ACTION_SET_NUM_VFS, ACTION_SET_ESWITCH_MODE, ACTION_SET_PF_MTU,
                ACTION_PF_LINK_UP,  ACTION_BIND_DRIVER,      ACTION_BIND_DRIVER,
                ACTION_SET_VF_MTU,  ACTION_SET_VF_MTU,       ACTION_SET_NUM_VFS,
        };

        fake_add_pf(&inv, PF_B, "ens1f1", 0x15b3, 0x101b, 16, 0, 1500, NULL);
        pf = fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 2, 1500, "mlx5_core");
        pf->netdevs[0].admin_up = false;
        /* desired in reverse PCI order on purpose */
        want(&d, PF_B, "ens1f1", 2, 0, 1, &gb);
        di = want(&d, PF_A, "ens1f0", 4, 9000, 2, ga);
        di->eswitch_mode = ESWITCH_MODE_SWITCHDEV;
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        if (p.n_actions != sizeof(expected) / sizeof(expected[0]))
                dump(&p);
        assert_int_equal(p.n_actions, sizeof(expected) / sizeof(expected[0]));
        for (size_t i = 0; i < p.n_actions; i++) {
                if (p.actions[i].kind != expected[i]) {
                        dump(&p);
                        fail_msg("action %zu is %s, want %s", i,
                                 action_kind_to_string(p.actions[i].kind),
                                 action_kind_to_string(expected[i]));
                }
                assert_string_equal(p.actions[i].pf, i < 8 ? PF_A : PF_B);
        }
        assert_string_equal(p.actions[1].text, "switchdev");
        assert_int_equal(p.actions[4].vf_index, 2);
        assert_int_equal(p.actions[6].vf_index, 0);
        plan_done(&p);
        assert_idempotent(&d, &inv, NULL);
        desired_state_done(&d);
        inventory_done(&inv);
}

static struct applied_pf record(const char *pci, int original_mtu, bool externally_managed,
                                int num_vfs)
{
        struct applied_pf a = { .original_mtu = original_mtu };
        snprintf(a.pci_address, sizeof(a.pci_address), "%s", pci);
        snprintf(a.applied.pci_address, sizeof(a.applied.pci_address), "%s", pci);
        snprintf(a.original_eswitch_mode, sizeof(a.original_eswitch_mode), "legacy");
        a.applied.num_vfs = num_vfs;
        a.applied.externally_managed = externally_managed;
        return a;
}

static void test_reset_previously_owned(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct applied_state prev = { 0 };
        struct applied_pf rec = record(PF_B, 1500, false, 4);
        struct vf_group g = make_group("r", 0, 1, DEVICE_TYPE_NETDEVICE, 0);
        struct plan p;

        fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 2, 1500, "mlx5_core");
        fake_add_pf(&inv, PF_B, "ens1f1", 0x15b3, 0x101b, 16, 4, 9000, "mlx5_core");
        fake_add_pf(&inv, PF_C, "eno1", 0x8086, 0x159b, 64, 4, 9000, "iavf"); /* never ours */
        snprintf(inv.pfs[1].eswitch_mode, sizeof(inv.pfs[1].eswitch_mode), "switchdev");
        assert_int_equal(applied_state_take(&prev, &rec), 0);
        want(&d, PF_A, "ens1f0", 2, 0, 1, &g);

        assert_int_equal(plan_build(&d, &inv, &prev, &p), 0);
        assert_int_equal(p.n_actions, 3);
        assert_int_equal(p.actions[0].kind, ACTION_RESET_PF);
        assert_string_equal(p.actions[0].pf, PF_B);
        assert_int_equal(p.actions[0].value, 0);
        assert_int_equal(p.actions[1].kind, ACTION_SET_ESWITCH_MODE);
        assert_string_equal(p.actions[1].text, "legacy");
        assert_int_equal(p.actions[2].kind, ACTION_RESTORE_PF_MTU);
        assert_int_equal(p.actions[2].value, 1500);
        assert_int_equal(p.applied.n_pfs, 1); /* B is no longer ours after the reset */
        assert_string_equal(p.applied.pfs[0].pci_address, PF_A);
        plan_done(&p);
        assert_idempotent(&d, &inv, &prev);
        assert_int_equal(inv.pfs[2].num_vfs, 4); /* PF C untouched */
        assert_int_equal(inv.pfs[2].netdevs[0].mtu, 9000);
        desired_state_done(&d);
        applied_state_done(&prev);
        inventory_done(&inv);
}

static void test_reset_nothing_desired(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct applied_state prev = { 0 };
        struct applied_pf rec = record(PF_A, 0, false, 8), em = record(PF_C, 1500, true, 4);
        struct plan p;

        fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 8, 1500, "mlx5_core");
        fake_add_pf(&inv, PF_C, "eno1", 0x8086, 0x159b, 64, 4, 9000, "iavf");
        assert_int_equal(applied_state_take(&prev, &rec), 0);
        assert_int_equal(applied_state_take(&prev, &em), 0);
        assert_int_equal(plan_build(&d, &inv, &prev, &p), 0);
        assert_int_equal(p.n_actions, 1); /* original MTU unknown: only the VFs go */
        assert_int_equal(p.actions[0].kind, ACTION_RESET_PF);
        assert_string_equal(p.actions[0].pf, PF_A);
        assert_int_equal(p.applied.n_pfs, 0);
        plan_done(&p);
        desired_state_done(&d);
        applied_state_done(&prev);
        inventory_done(&inv);
}

static void test_missing_previous_pf_kept(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct applied_state prev = { 0 };
        struct applied_pf rec = record(PF_B, 1500, false, 4);
        struct plan p;

        assert_int_equal(applied_state_take(&prev, &rec), 0);
        assert_int_equal(plan_build(&d, &inv, &prev, &p), 0);
        assert_int_equal(p.n_actions, 0);
        assert_int_equal(p.n_problems, 1);
        assert_non_null(strstr(p.problems[0].message, "previously configured PF not found"));
        assert_int_equal(p.applied.n_pfs, 1);
        plan_done(&p);
        applied_state_done(&prev);
}

static void test_externally_managed(void **state)
{
        static const struct {
                int existing;
                size_t problems;
        } cases[] = { { 8, 0 }, { 16, 0 }, { 4, 1 } };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct inventory inv = { 0 };
                struct desired_state d = { 0 };
                struct vf_group g = make_group("ext", 0, 3, DEVICE_TYPE_NETDEVICE, 0);
                struct plan p;

                fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, cases[i].existing, 9000,
                            "mlx5_core");
                want(&d, PF_A, "ens1f0", 8, 9100, 1, &g)->externally_managed = true;
                assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
                assert_int_equal(count_kind(&p, ACTION_SET_NUM_VFS), 0);
                assert_int_equal(count_kind(&p, ACTION_SET_PF_MTU), 0);
                assert_int_equal(p.n_problems, cases[i].problems);
                if (cases[i].problems)
                        assert_non_null(strstr(p.problems[0].message,
                                               "externally managed PF has 4 VFs, 8 are needed"));
                assert_true(p.applied.pfs[0].applied.externally_managed);
                plan_done(&p);
                desired_state_done(&d);
                inventory_done(&inv);
        }
}

static void test_idempotence_table(void **state)
{
        static const struct {
                int existing, num_vfs, pf_mtu, want_mtu, group_mtu;
                enum device_type type;
                const char *vf_driver;
        } cases[] = {
                { 0, 8, 1500, 9000, 9000, DEVICE_TYPE_NETDEVICE, NULL },
                { 4, 8, 1500, 0, 0, DEVICE_TYPE_VFIO_PCI, "mlx5_core" },
                { 8, 4, 9000, 1500, 1500, DEVICE_TYPE_NETDEVICE, "vfio-pci" },
                { 8, 8, 1500, 1500, 9000, DEVICE_TYPE_NETDEVICE, "" },
                { 16, 16, 1500, 0, 0, DEVICE_TYPE_VFIO_PCI, "vfio-pci" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct inventory inv = { 0 };
                struct desired_state d = { 0 };
                struct vf_group g =
                    make_group("r", 0, cases[i].num_vfs - 1, cases[i].type, cases[i].group_mtu);

                fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, cases[i].existing,
                            cases[i].pf_mtu, cases[i].vf_driver);
                want(&d, PF_A, "ens1f0", cases[i].num_vfs, cases[i].want_mtu, 1, &g);
                assert_idempotent(&d, &inv, NULL);
                desired_state_done(&d);
                inventory_done(&inv);
        }
}

static void test_too_many_vfs_problem(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group g = make_group("r", 0, 31, DEVICE_TYPE_NETDEVICE, 0);
        struct plan p;

        fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 0, 1500, NULL);
        want(&d, PF_A, "ens1f0", 32, 0, 1, &g);
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(p.n_actions, 0);
        assert_int_equal(p.n_problems, 1);
        assert_non_null(strstr(p.problems[0].message, "32 VFs wanted but sriov_totalvfs is 16"));
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void test_original_mtu_kept(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct applied_state prev = { 0 };
        struct applied_pf rec = record(PF_A, 1400, false, 2);
        struct vf_group g = make_group("r", 0, 1, DEVICE_TYPE_NETDEVICE, 0);
        struct plan p;

        fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 2, 9000, "mlx5_core");
        assert_int_equal(applied_state_take(&prev, &rec), 0);
        want(&d, PF_A, "ens1f0", 2, 9000, 1, &g);
        assert_int_equal(plan_build(&d, &inv, &prev, &p), 0);
        assert_int_equal(p.applied.pfs[0].original_mtu, 1400); /* not today's 9000 */
        plan_done(&p);
        desired_state_done(&d);
        applied_state_done(&prev);
        inventory_done(&inv);
}

static void test_action_json(void **state)
{
        struct action a = { .kind = ACTION_BIND_DRIVER, .vf_index = 3 };
        json_t *o;

        snprintf(a.pf, sizeof(a.pf), PF_A);
        snprintf(a.pf_name, sizeof(a.pf_name), "ens1f0");
        snprintf(a.vf_address, sizeof(a.vf_address), "0000:3b:00.5");
        snprintf(a.text, sizeof(a.text), "vfio-pci");
        snprintf(a.reason, sizeof(a.reason), "why");
        assert_int_equal(action_to_json(&a, &o), 0);
        assert_string_equal(json_string_value(json_object_get(o, "action")), "bind-driver");
        assert_string_equal(json_string_value(json_object_get(o, "pf")), PF_A);
        assert_int_equal(json_integer_value(json_object_get(o, "vf")), 3);
        assert_string_equal(json_string_value(json_object_get(o, "vfAddress")), "0000:3b:00.5");
        assert_string_equal(json_string_value(json_object_get(o, "driver")), "vfio-pci");
        json_decref(o);
        for (int k = 0; k < _ACTION_KIND_MAX; k++)
                assert_true(strlen(action_kind_to_string((enum action_kind)k)) > 0);
}

static void test_applied_json_roundtrip(void **state)
{
        struct applied_pf rec = record(PF_A, 1500, false, 8), back;
        struct vf_group g = make_group("sriov_highnet", 0, 7, DEVICE_TYPE_NETDEVICE, 1500);
        char *error = NULL;
        json_t *o;

        rec.applied.groups = &g;
        rec.applied.n_groups = 1;
        assert_int_equal(applied_pf_to_json(&rec, &o), 0);
        assert_int_equal(applied_pf_from_json(o, &back, &error), 0);
        assert_string_equal(back.pci_address, PF_A);
        assert_int_equal(back.original_mtu, 1500);
        assert_string_equal(back.original_eswitch_mode, "legacy");
        assert_int_equal(back.applied.num_vfs, 8);
        assert_int_equal(back.applied.n_groups, 1);
        assert_string_equal(back.applied.groups[0].resource_name, "sriov_highnet");
        applied_pf_done(&back);

        /* A rollback: the record of a newer agent, with fields this one does not know at the
         * top, in the applied state and in a group, reads as the same record. */
        json_object_set_new(o, "fieldOfANewerRelease", json_string("x"));
        json_t *applied = json_object_get(o, "interface");
        assert_non_null(applied);
        json_object_set_new(applied, "alsoNewer", json_integer(1));
        json_t *groups = json_object_get(applied, "vfGroups");
        assert_int_equal(json_array_size(groups), 1);
        json_object_set_new(json_array_get(groups, 0), "newerGroupField", json_true());
        assert_int_equal(applied_pf_from_json(o, &back, &error), 0);
        assert_string_equal(back.pci_address, PF_A);
        assert_int_equal(back.applied.num_vfs, 8);
        assert_string_equal(back.applied.groups[0].resource_name, "sriov_highnet");
        applied_pf_done(&back);
        json_decref(o);
}

static void write_file(const char *dir, const char *name, const char *text)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0644), 0);
}

static void test_state_dir(void **state)
{
        char dir[] = "/tmp/sriov-test-plan-XXXXXX", path[512];
        struct applied_state s;
        char *error = NULL;
        static const char good[] =
            "{\"pciAddress\":\"0000:3b:00.0\",\"originalMtu\":1500,\"originalESwitchMode\":"
            "\"legacy\",\"interface\":{\"pciAddress\":\"0000:3b:00.0\",\"numVfs\":8,"
            "\"vfGroups\":[{\"resourceName\":\"r\",\"vfRange\":\"0-7\"}]}}";
        static const struct {
                const char *name, *text, *expect;
        } bad[] = {
                { "0000:3b:00.1.json", "{nope", "0000:3b:00.1.json: not JSON" },
                { "0000:3b:00.1.json", good, "record is for PF 0000:3b:00.0" },
                { "0000:3b:00.1.json",
                  "{\"pciAddress\":\"0000:3b:00.1\",\"interface\":{\"pciAddress\":\"../x\"}}",
                  "interface.pciAddress: \"../x\" is not a PCI address" },
                { "0000:3b:00.1.json",
                  "{\"pciAddress\":\"0000:3b:00.1\",\"interface\":{\"pciAddress\":"
                  "\"0000:3b:00.1\",\"vfGroups\":[{\"resourceName\":\"r\",\"vfRange\":\"7-1\"}]}}",
                  "interface.vfGroups[0].vfRange: \"7-1\" is not \"first-last\"" },
        };

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/absent", dir);
        assert_int_equal(applied_state_load_dir(path, &s, &error), 0); /* no dir: nothing owned */
        assert_int_equal(s.n_pfs, 0);

        write_file(dir, "0000:3b:00.0.json", good);
        write_file(dir, ".0000:3b:00.0.json.tmp", "garbage"); /* interrupted write: ignored */
        assert_int_equal(applied_state_load_dir(dir, &s, &error), 0);
        assert_int_equal(s.n_pfs, 1);
        assert_int_equal(s.pfs[0].applied.num_vfs, 8);
        applied_state_done(&s);

        /* Not records: ignored, whatever they hold. */
        write_file(dir, "notes.json", "{truncated");
        write_file(dir, "0000:zz:00.0.json", "{truncated");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                write_file(dir, bad[i].name, bad[i].text);
                /* One bad record freezes its PF only: the good one is still loaded. */
                assert_int_equal(applied_state_load_dir(dir, &s, &error), 0);
                assert_null(error);
                assert_int_equal(s.n_pfs, 1);
                assert_string_equal(s.pfs[0].pci_address, "0000:3b:00.0");
                assert_int_equal(s.n_bad, 1);
                assert_string_equal(s.bad[0].pci_address, "0000:3b:00.1");
                if (!strstr(s.bad[0].message, bad[i].expect))
                        fail_msg("case %zu: \"%s\" lacks \"%s\"", i, s.bad[0].message,
                                 bad[i].expect);
                assert_non_null(applied_state_find_bad(&s, "0000:3b:00.1"));
                assert_null(applied_state_find_bad(&s, "0000:3b:00.0"));
                applied_state_done(&s);
                snprintf(path, sizeof(path), "%s/%s", dir, bad[i].name);
                unlink(path);
        }
        snprintf(path, sizeof(path), "%s/notes.json", dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/0000:zz:00.0.json", dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/0000:3b:00.0.json", dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/.0000:3b:00.0.json.tmp", dir);
        unlink(path);
        rmdir(dir);
}

/* Adopt then release: a PF that already had 4 VFs when a policy selected it goes back to 4
 * VFs (not 0) and its original MTU when the policy goes. */
static void test_adopt_then_release(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 }, none = { 0 };
        struct vf_group g = make_group("r", 0, 7, DEVICE_TYPE_NETDEVICE, 0);
        struct plan p1, p2, p3;
        struct applied_pf back;
        char *error = NULL;
        json_t *o;

        fake_add_pf(&inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 4, 1500, "mlx5_core");
        want(&d, PF_A, "ens1f0", 8, 9000, 1, &g);
        assert_int_equal(plan_build(&d, &inv, NULL, &p1), 0);
        assert_int_equal(p1.applied.n_pfs, 1);
        assert_int_equal(p1.applied.pfs[0].original_num_vfs, 4);
        assert_int_equal(p1.applied.pfs[0].original_mtu, 1500);
        /* The original count survives the record file. */
        assert_int_equal(applied_pf_to_json(&p1.applied.pfs[0], &o), 0);
        assert_int_equal(applied_pf_from_json(o, &back, &error), 0);
        assert_int_equal(back.original_num_vfs, 4);
        applied_pf_done(&back);
        json_decref(o);
        assert_int_equal(plan_simulate(&p1, &inv), 0);
        assert_int_equal(inv.pfs[0].num_vfs, 8);

        assert_int_equal(plan_build(&none, &inv, &p1.applied, &p2), 0);
        dump(&p2);
        assert_int_equal(count_kind(&p2, ACTION_RESET_PF), 1);
        assert_int_equal(p2.actions[0].kind, ACTION_RESET_PF);
        assert_int_equal(p2.actions[0].value, 4);
        assert_int_equal(count_kind(&p2, ACTION_RESTORE_PF_MTU), 1);
        assert_int_equal(p2.applied.n_pfs, 0);
        assert_int_equal(plan_simulate(&p2, &inv), 0);
        assert_int_equal(inv.pfs[0].num_vfs, 4);
        assert_int_equal(inv.pfs[0].netdevs[0].mtu, 1500);
        /* Released and back as found: nothing more to do, and never touched again. */
        assert_int_equal(plan_build(&none, &inv, &p2.applied, &p3), 0);
        assert_int_equal(p3.n_actions, 0);
        plan_done(&p1);
        plan_done(&p2);
        plan_done(&p3);
        desired_state_done(&d);
        inventory_done(&inv);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_seed_fresh_pf),
                cmocka_unit_test(test_nothing_to_do),
                cmocka_unit_test(test_pf_mtu_only_raised),
                cmocka_unit_test(test_bind_only_group_vfs),
                cmocka_unit_test(test_netdevice_rebind),
                cmocka_unit_test(test_ib_vf_guids),
                cmocka_unit_test(test_ib_vf_guid_from_ipoib_address),
                cmocka_unit_test(test_ib_pod_guid_has_one_owner),
                cmocka_unit_test(test_order),
                cmocka_unit_test(test_reset_previously_owned),
                cmocka_unit_test(test_reset_nothing_desired),
                cmocka_unit_test(test_missing_previous_pf_kept),
                cmocka_unit_test(test_externally_managed),
                cmocka_unit_test(test_idempotence_table),
                cmocka_unit_test(test_too_many_vfs_problem),
                cmocka_unit_test(test_original_mtu_kept),
                cmocka_unit_test(test_action_json),
                cmocka_unit_test(test_applied_json_roundtrip),
                cmocka_unit_test(test_state_dir),
                cmocka_unit_test(test_adopt_then_release),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
