/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the disruption guard. Plans come from the real planner (a policy change on a
 * fake inventory), then the guard decides with a set of VFs "allocated to pods": which PFs are
 * held, what the operator is told (PF, VF, pod), which actions still run, and which applied
 * records are kept. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake-inventory.h"
#include "plan/disruption.h"
#include "plan/ib-guids.h"
#include "plan/node-status.h"
#include "plan/plan.h"

#define PF_A         "0000:3b:00.0"
#define PF_B         "0000:5e:00.0"
#define NO_PF_CHANGE (-1)
#define NOT_DESIRED  (-2) /* the PF left every policy: the planner resets it */
#define PF_ITSELF    (-3) /* in the in-use list: the PF's own address */

/* VF i of PF 0000:3b:00.0 is 0000:3b:<2 + i / 8>.<i % 8>, as on an Intel E810. */
static void vf_address(const char *pf, int index, char *buf, size_t size)
{
        snprintf(buf, size, "%.8s%02x.%d", pf, 2 + index / 8, index % 8);
}

/* A PF of the fake inventory, its VFs given real-looking PCI addresses. */
static void add_pf(struct inventory *inv, const char *pci, const char *ifname, int total_vfs,
                   int num_vfs, const char *vf_driver)
{
        struct pf_info *pf =
            fake_add_pf(inv, pci, ifname, 0x8086, 0x1592, total_vfs, num_vfs, 1500, vf_driver);
        for (size_t i = 0; i < pf->n_vfs; i++)
                vf_address(pci, pf->vfs[i].vf_index, pf->vfs[i].pci_address,
                           sizeof(pf->vfs[i].pci_address));
}

struct disruption_case {
        const char *name;
        int current_vfs; /* observed on PF_A, bound to iavf, MTU 1500 */
        int want_vfs;    /* or NOT_DESIRED */
        int want_pf_mtu; /* 0 = leave */
        enum eswitch_mode want_eswitch;
        enum device_type group_type;
        int group_start, group_end; /* VFs of the one group */
        int group_mtu;
        int in_use[4]; /* VF indexes (or PF_ITSELF), -1 terminated */
        bool expect_held;
        const char *reason_has[3];
        enum action_kind expect_kind; /* an action the input plan must contain */
};

static const struct disruption_case cases[] = {
        { .name = "grow 4 -> 6 with a VF in use re-creates every VF",
          .current_vfs = 4,
          .want_vfs = 6,
          .group_end = 5,
          .in_use = { 1, -1 },
          .expect_held = true,
          .reason_has = { "set-num-vfs 4 -> 6 writes 0 first",
                          "VF 0000:3b:02.1 by pod ml/train-1" },
          .expect_kind = ACTION_SET_NUM_VFS },
        { .name = "grow 4 -> 6 with nothing in use",
          .current_vfs = 4,
          .want_vfs = 6,
          .group_end = 5,
          .in_use = { -1 },
          .expect_held = false,
          .expect_kind = ACTION_SET_NUM_VFS },
        { .name = "grow 0 -> 6 never is (stale IDs of gone VFs do not count)",
          .current_vfs = 0,
          .want_vfs = 6,
          .group_end = 5,
          .in_use = { 1, 2, -1 },
          .expect_held = false,
          .expect_kind = ACTION_SET_NUM_VFS },
        { .name = "shrink 4 -> 2 removing an in-use VF",
          .current_vfs = 4,
          .want_vfs = 2,
          .group_end = 1,
          .in_use = { 3, -1 },
          .expect_held = true,
          .reason_has = { "set-num-vfs 4 -> 2 removes VFs in use", "0000:3b:02.3" },
          .expect_kind = ACTION_SET_NUM_VFS },
        { .name = "shrink 4 -> 2 removing only free VFs still re-creates the kept ones",
          .current_vfs = 4,
          .want_vfs = 2,
          .group_end = 1,
          .in_use = { 0, -1 },
          .expect_held = true,
          .reason_has = { "writes 0 first and re-creates every VF", "VF 0000:3b:02.0" },
          .expect_kind = ACTION_SET_NUM_VFS },
        { .name = "reset of a PF no policy wants, VF in use",
          .current_vfs = 4,
          .want_vfs = NOT_DESIRED,
          .in_use = { 2, -1 },
          .expect_held = true,
          .reason_has = { "reset-pf removes all 4 VFs", "0000:3b:02.2 by pod ml/train-2" },
          .expect_kind = ACTION_RESET_PF },
        { .name = "reset of a PF no policy wants, nothing in use",
          .current_vfs = 4,
          .want_vfs = NOT_DESIRED,
          .in_use = { -1 },
          .expect_held = false,
          .expect_kind = ACTION_RESET_PF },
        { .name = "rebind of an in-use VF to vfio-pci",
          .current_vfs = 4,
          .want_vfs = 4,
          .group_type = DEVICE_TYPE_VFIO_PCI,
          .group_start = 2,
          .group_end = 3,
          .in_use = { 2, -1 },
          .expect_held = true,
          .reason_has = { "bind-driver of VF 2 (0000:3b:02.2) from iavf to vfio-pci",
                          "by pod ml/train-2" },
          .expect_kind = ACTION_BIND_DRIVER },
        { .name = "rebind of free VFs while another VF is in use",
          .current_vfs = 4,
          .want_vfs = 4,
          .group_type = DEVICE_TYPE_VFIO_PCI,
          .group_start = 2,
          .group_end = 3,
          .in_use = { 0, 1, -1 },
          .expect_held = false,
          .expect_kind = ACTION_BIND_DRIVER },
        { .name = "VF MTU of an in-use VF",
          .current_vfs = 4,
          .want_vfs = 4,
          .group_end = 3,
          .group_mtu = 9000,
          .want_pf_mtu = 9000,
          .in_use = { 1, -1 },
          .expect_held = true,
          .reason_has = { "set-vf-mtu 9000 on VF 1 (0000:3b:02.1)" },
          .expect_kind = ACTION_SET_VF_MTU },
        { .name = "VF MTU of free VFs only",
          .current_vfs = 4,
          .want_vfs = 4,
          .group_start = 2,
          .group_end = 3,
          .group_mtu = 9000,
          .want_pf_mtu = 9000,
          .in_use = { 0, 1, -1 },
          .expect_held = false,
          .expect_kind = ACTION_SET_VF_MTU },
        { .name = "PF MTU raise with every VF in use",
          .current_vfs = 4,
          .want_vfs = 4,
          .group_end = 3,
          .want_pf_mtu = 9000,
          .in_use = { 0, 1, 2, 3 },
          .expect_held = false,
          .expect_kind = ACTION_SET_PF_MTU },
        { .name = "eswitch mode change with a VF in use",
          .current_vfs = 4,
          .want_vfs = 4,
          .group_end = 3,
          .want_eswitch = ESWITCH_MODE_SWITCHDEV,
          .in_use = { 3, -1 },
          .expect_held = true,
          .reason_has = { "set-eswitch-mode legacy -> switchdev with VFs in use" },
          .expect_kind = ACTION_SET_ESWITCH_MODE },
        { .name = "a PF allocated to a pod as a whole card is not touched",
          .current_vfs = 0,
          .want_vfs = 2,
          .group_end = 1,
          .in_use = { PF_ITSELF, -1 },
          .expect_held = true,
          .reason_has = { "set-num-vfs on a PF that is itself allocated",
                          "the PF 0000:3b:00.0 by pod ml/whole-card" },
          .expect_kind = ACTION_SET_NUM_VFS },
};

static struct vf_group make_group(enum device_type type, int start, int end, int mtu)
{
        struct vf_group g = { .vf_start = start, .vf_end = end, .device_type = type, .mtu = mtu };
        snprintf(g.resource_name, sizeof(g.resource_name), "highnet");
        snprintf(g.policy_name, sizeof(g.policy_name), "policy-highnet");
        return g;
}

static void want(struct desired_state *d, const char *pci, const char *name, int num_vfs, int mtu,
                 enum eswitch_mode mode, const struct vf_group *g)
{
        struct desired_interface *arr =
            realloc(d->interfaces, (d->n_interfaces + 1) * sizeof(*arr));
        assert_non_null(arr);
        d->interfaces = arr;
        struct desired_interface *di = &arr[d->n_interfaces++];
        *di = (struct desired_interface){
                .num_vfs = num_vfs, .mtu = mtu, .eswitch_mode = mode, .n_groups = 1
        };
        snprintf(di->pci_address, sizeof(di->pci_address), "%s", pci);
        snprintf(di->name, sizeof(di->name), "%s", name);
        di->groups = calloc(1, sizeof(*di->groups));
        assert_non_null(di->groups);
        di->groups[0] = *g;
}

static struct applied_pf owned_record(const char *pci, int num_vfs)
{
        struct applied_pf a = { .original_mtu = 1500 };
        snprintf(a.pci_address, sizeof(a.pci_address), "%s", pci);
        snprintf(a.applied.pci_address, sizeof(a.applied.pci_address), "%s", pci);
        snprintf(a.original_eswitch_mode, sizeof(a.original_eswitch_mode), "legacy");
        a.applied.num_vfs = num_vfs;
        return a;
}

static bool plan_has_kind(const struct plan *p, enum action_kind k)
{
        for (size_t i = 0; i < p->n_actions; i++)
                if (p->actions[i].kind == k)
                        return true;
        return false;
}

static void dump_plan(const struct plan *p)
{
        for (size_t i = 0; i < p->n_actions; i++) {
                char line[512];
                action_format(&p->actions[i], line, sizeof(line));
                print_message("    %s\n", line);
        }
}

static void run_case(const struct disruption_case *c)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct applied_state prev = { 0 };
        struct plan p;
        struct guarded_plan g;
        char addresses[4][PCI_ADDR_MAX], pods[4][32];
        const char *ids[4], *owners[4];
        size_t n = 0;

        print_message("  case: %s\n", c->name);
        add_pf(&inv, PF_A, "ens1f0", 8, c->current_vfs, "iavf");
        if (c->want_vfs == NOT_DESIRED) {
                struct applied_pf rec = owned_record(PF_A, c->current_vfs);
                assert_int_equal(applied_state_take(&prev, &rec), 0);
        } else {
                struct vf_group grp =
                    make_group(c->group_type, c->group_start, c->group_end, c->group_mtu);
                want(&d, PF_A, "ens1f0", c->want_vfs, c->want_pf_mtu, c->want_eswitch, &grp);
        }
        for (; n < 4 && c->in_use[n] != -1; n++) {
                if (c->in_use[n] == PF_ITSELF) {
                        snprintf(addresses[n], sizeof(addresses[n]), "%s", PF_A);
                        snprintf(pods[n], sizeof(pods[n]), "ml/whole-card");
                } else {
                        vf_address(PF_A, c->in_use[n], addresses[n], sizeof(addresses[n]));
                        snprintf(pods[n], sizeof(pods[n]), "ml/train-%d", c->in_use[n]);
                }
                ids[n] = addresses[n];
                owners[n] = pods[n];
        }

        assert_int_equal(plan_build(&d, &inv, &prev, &p), 0);
        dump_plan(&p);
        assert_true(plan_has_kind(&p, c->expect_kind));
        assert_int_equal(disruption_guard(&p, &inv, &prev, ids, owners, n, false, &g), 0);
        assert_false(g.passed_through);
        if (c->expect_held) {
                assert_int_equal(g.n_held, 1);
                print_message("    held: %s\n", g.held[0].reason);
                assert_string_equal(g.held[0].pf, PF_A);
                assert_string_equal(g.held[0].pf_name, "ens1f0");
                assert_int_equal(g.held[0].n_actions, p.n_actions);
                for (size_t i = 0; i < 3 && c->reason_has[i]; i++)
                        assert_non_null(strstr(g.held[0].reason, c->reason_has[i]));
                /* the whole PF waits, not just the disruptive action */
                assert_int_equal(g.plan.n_actions, 0);
                /* nothing applied: the record stays what it was (none, or the owned one) */
                assert_int_equal(g.plan.applied.n_pfs, prev.n_pfs);
        } else {
                assert_int_equal(g.n_held, 0);
                assert_int_equal(g.plan.n_actions, p.n_actions);
                for (size_t i = 0; i < p.n_actions; i++)
                        assert_memory_equal(&g.plan.actions[i], &p.actions[i],
                                            sizeof(p.actions[i]));
                assert_int_equal(g.plan.applied.n_pfs, p.applied.n_pfs);
        }
        guarded_plan_done(&g);

        /* --allow-disruption: everything runs, the same PF is still reported */
        assert_int_equal(disruption_guard(&p, &inv, &prev, ids, owners, n, true, &g), 0);
        assert_true(g.passed_through);
        assert_int_equal(g.n_held, c->expect_held ? 1 : 0);
        assert_int_equal(g.plan.n_actions, p.n_actions);
        assert_int_equal(g.plan.applied.n_pfs, p.applied.n_pfs);
        guarded_plan_done(&g);

        plan_done(&p);
        applied_state_done(&prev);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void test_table(void **state)
{
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                run_case(&cases[i]);
}

/* PF A grows 4 -> 6 with a VF in use and is held; PF B is created from scratch and goes ahead;
 * PF A's applied record stays the previous one, PF B gets its new one. */
static void test_pfs_independent(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct applied_state prev = { 0 };
        struct applied_pf rec = owned_record(PF_A, 4);
        struct vf_group ga = make_group(DEVICE_TYPE_NETDEVICE, 0, 5, 0);
        struct vf_group gb = make_group(DEVICE_TYPE_VFIO_PCI, 0, 3, 0);
        struct plan p;
        struct guarded_plan g;
        const char *ids[] = { "0000:3B:02.1", NULL, "garbage/../x" };

        add_pf(&inv, PF_A, "ens1f0", 8, 4, "iavf");
        add_pf(&inv, PF_B, "ens2f0", 8, 0, NULL);
        assert_int_equal(applied_state_take(&prev, &rec), 0);
        want(&d, PF_A, "ens1f0", 6, 0, ESWITCH_MODE_UNSET, &ga);
        want(&d, PF_B, "ens2f0", 4, 0, ESWITCH_MODE_UNSET, &gb);
        assert_int_equal(plan_build(&d, &inv, &prev, &p), 0);
        dump_plan(&p);

        /* upper-case ID, a NULL entry and junk: matched case-insensitively, the rest ignored;
         * no pod names known */
        assert_int_equal(disruption_guard(&p, &inv, &prev, ids, NULL, 3, false, &g), 0);
        assert_int_equal(g.n_held, 1);
        assert_string_equal(g.held[0].pf, PF_A);
        assert_int_equal(g.held[0].n_in_use, 1);
        assert_non_null(strstr(g.held[0].reason, "VF 0000:3b:02.1"));
        assert_null(strstr(g.held[0].reason, "pod"));
        assert_true(g.plan.n_actions > 0);
        for (size_t i = 0; i < g.plan.n_actions; i++)
                assert_string_equal(g.plan.actions[i].pf, PF_B);
        assert_int_equal(g.plan.applied.n_pfs, 2);
        assert_string_equal(g.plan.applied.pfs[0].pci_address, PF_A);
        assert_int_equal(g.plan.applied.pfs[0].applied.num_vfs, 4); /* the old record */
        assert_string_equal(g.plan.applied.pfs[1].pci_address, PF_B);
        assert_int_equal(g.plan.applied.pfs[1].applied.num_vfs, 4);
        guarded_plan_done(&g);

        plan_done(&p);
        applied_state_done(&prev);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* Many VFs in use: the reason stays readable and says how many it left out. */
static void test_reason_names_a_few(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group grp = make_group(DEVICE_TYPE_NETDEVICE, 0, 15, 0);
        struct plan p;
        struct guarded_plan g;
        char addresses[10][PCI_ADDR_MAX];
        const char *ids[10];

        add_pf(&inv, PF_A, "ens1f0", 64, 10, "iavf");
        want(&d, PF_A, "ens1f0", 16, 0, ESWITCH_MODE_UNSET, &grp);
        for (int i = 0; i < 10; i++) {
                vf_address(PF_A, i, addresses[i], sizeof(addresses[i]));
                ids[i] = addresses[i];
        }
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(disruption_guard(&p, &inv, NULL, ids, NULL, 10, false, &g), 0);
        assert_int_equal(g.n_held, 1);
        assert_int_equal(g.held[0].n_in_use, 10);
        print_message("  held: %s\n", g.held[0].reason);
        assert_non_null(strstr(g.held[0].reason, "0000:3b:02.3"));
        assert_null(strstr(g.held[0].reason, "0000:3b:02.4"));
        assert_non_null(strstr(g.held[0].reason, "and 6 more"));
        assert_int_equal(g.plan.n_actions, 0);
        assert_int_equal(g.plan.applied.n_pfs, 0); /* never owned, still not owned */
        guarded_plan_done(&g);
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void test_empty_plan_and_bad_arguments(void **state)
{
        struct inventory inv = { 0 };
        struct plan p = { 0 };
        struct guarded_plan g;

        assert_int_equal(disruption_guard(&p, &inv, NULL, NULL, NULL, 0, false, &g), 0);
        assert_int_equal(g.n_held, 0);
        assert_int_equal(g.plan.n_actions, 0);
        guarded_plan_done(&g);
        assert_int_equal(disruption_guard(NULL, &inv, NULL, NULL, NULL, 0, false, &g), -EINVAL);
        assert_int_equal(disruption_guard(&p, NULL, NULL, NULL, NULL, 0, false, &g), -EINVAL);
        assert_int_equal(disruption_guard(&p, &inv, NULL, NULL, NULL, 2, false, &g), -EINVAL);
        assert_int_equal(disruption_guard(&p, &inv, NULL, NULL, NULL, 0, false, NULL), -EINVAL);
        /* a failed call leaves nothing to free but is safe to clean up */
        guarded_plan_done(&g);
}

/* Problems the planner found are passed on untouched. */
static void test_problems_kept(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group grp = make_group(DEVICE_TYPE_NETDEVICE, 0, 3, 0);
        struct plan p;
        struct guarded_plan g;

        want(&d, PF_B, "ens2f0", 4, 0, ESWITCH_MODE_UNSET, &grp); /* not on this node */
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(p.n_problems, 1);
        assert_int_equal(disruption_guard(&p, &inv, NULL, NULL, NULL, 0, false, &g), 0);
        assert_int_equal(g.plan.n_problems, 1);
        assert_string_equal(g.plan.problems[0].message, p.problems[0].message);
        guarded_plan_done(&g);
        plan_done(&p);
        desired_state_done(&d);
}

/* The NodeState and Events after a reconcile that planned p on inv with ids in use. */
static void decide(const struct plan *p, const struct inventory *inv, const char *const *ids,
                   size_t n_ids, bool allow_disruption, struct guarded_plan *g,
                   struct node_status *status, size_t *n_events)
{
        struct node_events e = { 0 };
        assert_int_equal(disruption_guard(p, inv, NULL, ids, NULL, n_ids, allow_disruption, g), 0);
        node_status_decide(&(const struct node_status_facts){ .plan = p, .guarded = g }, status);
        assert_int_equal(node_events_decide(g, &(const struct node_event_facts){ 0 }, &e), 0);
        *n_events = e.n_events;
        node_events_done(&e);
}

/* An InfiniBand PF whose VF 0 a pod holds with the GUID ib-kubernetes gave it (the ib-sriov
 * plugin's record): no change is held back, no DisruptionHeld Event, the NodeState is Succeeded
 * on every reconcile, and --allow-disruption does not overwrite the pod's GUID either. When
 * the VF shows a stray GUID and no attachment owns it (the record is gone, the pod still holds
 * the VF), the change is held and named as the GUID change it is. */
static void test_pod_guid_not_held(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct vf_group grp = make_group(DEVICE_TYPE_NETDEVICE, 0, 1, 0);
        struct ib_guid_attachments pods = { 0 };
        struct plan p;
        struct guarded_plan g;
        struct node_status status;
        size_t n_events;
        char error[256], text[IB_GUID_TEXT_MAX];
        uint64_t pool0, pool1;
        const uint64_t pod_guid = 0x02aa000000000001ULL;

        struct pf_info *pf =
            fake_add_pf(&inv, PF_A, "ibp59s0f0", 0x15b3, 0x101b, 8, 2, 4092, "mlx5_core");
        pf->netdevs[0].link_type = LINK_TYPE_IB;
        assert_int_equal(ib_guid_for_vf(NULL, pf, 0, &pool0, error, sizeof(error)), 0);
        assert_int_equal(ib_guid_for_vf(NULL, pf, 1, &pool1, error, sizeof(error)), 0);
        for (size_t i = 0; i < pf->n_vfs; i++)
                pf->vfs[i].has_ib_guids = true;
        pf->vfs[0].ib_node_guid = pf->vfs[0].ib_port_guid = pod_guid;
        pf->vfs[1].ib_node_guid = pf->vfs[1].ib_port_guid = pool1;
        const char *ids[] = { pf->vfs[0].pci_address };
        want(&d, PF_A, "ibp59s0f0", 2, 0, ESWITCH_MODE_UNSET, &grp);
        assert_int_equal(
            ib_guid_attachments_add(&pods, pf->vfs[0].pci_address, pod_guid, "3f2a-net1"), 0);
        d.ib_attachments = &pods;

        for (int allow = 0; allow <= 1; allow++) {
                assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
                decide(&p, &inv, ids, 1, allow, &g, &status, &n_events);
                assert_int_equal(g.n_held, 0);
                assert_int_equal(g.plan.n_actions, 0); /* the pod's GUID is not overwritten */
                assert_int_equal(status.sync, NODE_SYNC_SUCCEEDED);
                assert_string_equal(status.message, "");
                assert_int_equal(n_events, 0);
                guarded_plan_done(&g);
                plan_done(&p);
        }

        /* no attachment owns the GUID (its record is gone) while the pod still holds the VF */
        d.ib_attachments = NULL;
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        dump_plan(&p);
        decide(&p, &inv, ids, 1, false, &g, &status, &n_events);
        assert_int_equal(g.n_held, 1);
        print_message("  held: %s\n", g.held[0].reason);
        ib_guid_format(pool0, text);
        char expect[128];
        snprintf(expect, sizeof(expect), "set-vf-guid %s on VF 0 (%s)", text,
                 pf->vfs[0].pci_address);
        assert_non_null(strstr(g.held[0].reason, expect));
        assert_null(strstr(g.held[0].reason, "set-vf-mtu"));
        assert_int_equal(status.sync, NODE_SYNC_IN_PROGRESS);
        assert_non_null(strstr(status.message, expect));
        assert_int_equal(n_events, 1);
        guarded_plan_done(&g);
        plan_done(&p);

        ib_guid_attachments_done(&pods);
        desired_state_done(&d);
        inventory_done(&inv);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_pfs_independent),
                cmocka_unit_test(test_reason_names_a_few),
                cmocka_unit_test(test_empty_plan_and_bad_arguments),
                cmocka_unit_test(test_problems_kept),
                cmocka_unit_test(test_pod_guid_not_held),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
