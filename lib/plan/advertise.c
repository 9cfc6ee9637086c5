/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/advertise.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* *ret = *d with its own copy of the groups; no_vfs empties every group's VF range. */
static int copy_interface(const struct desired_interface *d, bool no_vfs,
                          struct desired_interface *ret)
{
        *ret = *d;
        ret->groups = NULL;
        if (d->n_groups == 0)
                return 0;
        ret->groups = malloc(d->n_groups * sizeof(*ret->groups));
        if (!ret->groups)
                return -ENOMEM;
        memcpy(ret->groups, d->groups, d->n_groups * sizeof(*ret->groups));
        for (size_t i = 0; no_vfs && i < d->n_groups; i++)
                ret->groups[i].vf_end = ret->groups[i].vf_start - 1; /* an empty range */
        return 0;
}

bool pf_level_incomplete(const char *pci, const struct plan *left, const struct apply_report *rep)
{
        const struct apply_pf_result *res = apply_report_find(rep, pci);

        if (res && res->error != 0 && action_is_pf_level(res->failed_kind))
                return true;
        for (size_t j = 0; j < left->n_actions; j++)
                if (strcmp(left->actions[j].pf, pci) == 0 &&
                    action_is_pf_level(left->actions[j].kind))
                        return true;
        return false;
}

/* The record a held PF is offered as, or NULL when its changes are not held. */
static const struct applied_pf *held_as(const struct guarded_plan *g,
                                        const struct applied_state *previous, const char *pci)
{
        if (!g || g->passed_through)
                return NULL;
        for (size_t j = 0; j < g->n_held; j++)
                if (strcmp(g->held[j].pf, pci) == 0)
                        return applied_state_find(previous, pci);
        return NULL;
}

int advertised_subset(const struct desired_state *desired, const struct plan *left,
                      const struct apply_report *rep, const struct guarded_plan *guarded,
                      const struct applied_state *previous, struct desired_state *ret)
{
        struct desired_state out = { 0 };
        int r = 0;

        out.interfaces =
            calloc(desired->n_interfaces ? desired->n_interfaces : 1, sizeof(*out.interfaces));
        if (!out.interfaces)
                return -ENOMEM;
        for (size_t i = 0; i < desired->n_interfaces && r >= 0; i++) {
                const struct desired_interface *d = &desired->interfaces[i];
                const struct applied_pf *prev = held_as(guarded, previous, d->pci_address);
                const struct applied_bad_record *bad =
                    applied_state_find_bad(previous, d->pci_address);
                if (prev)
                        r = copy_interface(&prev->applied, false,
                                           &out.interfaces[out.n_interfaces++]);
                else
                        /* A frozen PF is served only while it already is what is desired. */
                        r = copy_interface(d,
                                           (bad && bad->would_change) ||
                                               pf_level_incomplete(d->pci_address, left, rep),
                                           &out.interfaces[out.n_interfaces++]);
        }
        if (r < 0) {
                desired_state_done(&out);
                return r;
        }
        *ret = out;
        return 0;
}
