/* SPDX-License-Identifier: Apache-2.0 */
/* Desired states, applied records and apply reports built in code, for the unit tests of the
 * reconcile's decisions (test-advertise, test-records, test-vf-usage, test-apply-report,
 * test-freeze).
 * Header-only; asserts (cmocka) on allocation failure. Include after <cmocka.h>. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake-inventory.h"
#include "plan/applied.h"
#include "plan/apply-report.h"
#include "plan/plan.h"
#include "util/array.h"

/* A node as the decision tests start from: its inventory, what the policies want, the agent's
 * records and the plan between them. fx_node_done() frees all four. */
struct fx_node {
        struct inventory inv;
        struct desired_state d;
        struct applied_state prev;
        struct plan p;
};

static inline void fx_node_done(struct fx_node *n)
{
        plan_done(&n->p);
        applied_state_done(&n->prev);
        desired_state_done(&n->d);
        inventory_done(&n->inv);
}

/* A netdevice group "<resource>" over VFs start..end. */
static inline struct vf_group fx_group(const char *resource, int start, int end)
{
        struct vf_group g = { .vf_start = start, .vf_end = end };
        snprintf(g.resource_name, sizeof(g.resource_name), "%s", resource);
        snprintf(g.policy_name, sizeof(g.policy_name), "policy-%s", resource);
        return g;
}

/* Appends an interface wanting num_vfs VFs, with one group. */
static inline struct desired_interface *fx_want(struct desired_state *d, const char *pci,
                                                const char *name, int num_vfs, int mtu,
                                                struct vf_group g)
{
        struct desired_interface *arr =
            realloc(d->interfaces, (d->n_interfaces + 1) * sizeof(*arr));
        assert_non_null(arr);
        d->interfaces = arr;
        struct desired_interface *di = &arr[d->n_interfaces++];
        *di = (struct desired_interface){ .num_vfs = num_vfs, .mtu = mtu, .n_groups = 1 };
        snprintf(di->pci_address, sizeof(di->pci_address), "%s", pci);
        snprintf(di->name, sizeof(di->name), "%s", name);
        di->groups = calloc(1, sizeof(*di->groups));
        assert_non_null(di->groups);
        di->groups[0] = g;
        return di;
}

/* Adds the record of a PF this agent configured: num_vfs VFs in one group "<resource>" over
 * all of them, found with original_num_vfs VFs and MTU 1500. */
static inline void fx_owned(struct applied_state *s, const char *pci, int num_vfs,
                            int original_num_vfs, const char *resource)
{
        struct applied_pf a = { .original_mtu = 1500, .original_num_vfs = original_num_vfs };
        snprintf(a.pci_address, sizeof(a.pci_address), "%s", pci);
        snprintf(a.original_eswitch_mode, sizeof(a.original_eswitch_mode), "legacy");
        a.applied.num_vfs = num_vfs;
        snprintf(a.applied.pci_address, sizeof(a.applied.pci_address), "%s", pci);
        if (num_vfs > 0) {
                a.applied.groups = calloc(1, sizeof(*a.applied.groups));
                assert_non_null(a.applied.groups);
                a.applied.groups[0] = fx_group(resource, 0, num_vfs - 1);
                a.applied.n_groups = 1;
        }
        assert_int_equal(applied_state_take(s, &a), 0);
}

/* Adds a PF's line to an apply report: n_done actions done, then error (0: none) in an action
 * of kind failed. */
static inline void fx_result(struct apply_report *r, const char *pci, size_t n_done, int error,
                             enum action_kind failed)
{
        if (GROW_ARRAY(r->pfs, r->cap_pfs, r->n_pfs + 1) < 0) {
                fail(); /* not marked noreturn: the return keeps the analyzer on track */
                return;
        }
        struct apply_pf_result *arr = r->pfs;
        arr[r->n_pfs] =
            (struct apply_pf_result){ .error = error, .failed_kind = failed, .n_done = n_done };
        snprintf(arr[r->n_pfs].pf, sizeof(arr->pf), "%s", pci);
        r->n_pfs++;
        r->n_done += n_done;
}

static inline bool fx_plan_has(const struct plan *p, const char *pci, enum action_kind k)
{
        for (size_t i = 0; i < p->n_actions; i++)
                if (strcmp(p->actions[i].pf, pci) == 0 && p->actions[i].kind == k)
                        return true;
        return false;
}

static inline bool fx_plan_touches(const struct plan *p, const char *pci)
{
        for (size_t i = 0; i < p->n_actions; i++)
                if (strcmp(p->actions[i].pf, pci) == 0)
                        return true;
        return false;
}
