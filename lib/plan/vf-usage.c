/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/vf-usage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strv.h"

void vf_usage_done(struct vf_usage *u)
{
        strv_free_n(u->ids, u->n_ids);
        free(u->unknown);
        *u = (struct vf_usage){ 0 };
}

int vf_usage_add(struct vf_usage *u, const char *id)
{
        return strv_push_dup(&u->ids, &u->n_ids, id);
}

int vf_usage_unknown(struct vf_usage *u, const struct inventory *observed, const char *why)
{
        int r = 0;

        free(u->unknown);
        u->unknown = strdup(why);
        if (!u->unknown)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < observed->n_pfs; i++)
                for (size_t j = 0; r >= 0 && j < observed->pfs[i].n_vfs; j++)
                        r = vf_usage_add(u, observed->pfs[i].vfs[j].pci_address);
        return r;
}

int vf_usage_guard(const struct plan *plan, const struct inventory *observed,
                   const struct applied_state *previous, const struct vf_usage *u,
                   bool allow_disruption, struct guarded_plan *ret)
{
        int r = disruption_guard(plan, observed, previous, (const char *const *)u->ids, NULL,
                                 u->n_ids, allow_disruption, ret);
        if (r < 0 || !u->unknown)
                return r;
        for (size_t i = 0; i < ret->n_held; i++) {
                struct held_pf *h = &ret->held[i];
                size_t n = strlen(h->reason);
                snprintf(h->reason + n, sizeof(h->reason) - n,
                         " (the kubelet could not be asked which VFs pods hold: %s)", u->unknown);
        }
        return 0;
}
