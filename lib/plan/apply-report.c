/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/apply-report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"

void apply_report_done(struct apply_report *r)
{
        free(r->pfs);
        *r = (struct apply_report){ 0 };
}

const struct apply_pf_result *apply_report_find(const struct apply_report *r, const char *pf)
{
        for (size_t i = 0; i < r->n_pfs; i++)
                if (strcmp(r->pfs[i].pf, pf) == 0)
                        return &r->pfs[i];
        return NULL;
}

bool action_is_pf_level(enum action_kind kind)
{
        return kind != ACTION_BIND_DRIVER && kind != ACTION_SET_VF_MTU &&
               kind != ACTION_SET_VF_GUID;
}

size_t apply_report_n_failed(const struct apply_report *r)
{
        size_t n = 0;
        for (size_t i = 0; i < r->n_pfs; i++)
                n += r->pfs[i].error != 0;
        return n;
}

int apply_report_add_frozen(struct apply_report *r, const struct applied_state *previous)
{
        for (size_t i = 0; i < previous->n_bad; i++) {
                const struct applied_bad_record *bad = &previous->bad[i];
                if (apply_report_find(r, bad->pci_address))
                        continue;
                if (GROW_ARRAY(r->pfs, r->cap_pfs, r->n_pfs + 1) < 0)
                        return -ENOMEM;
                struct apply_pf_result *arr = r->pfs;
                arr[r->n_pfs] = (struct apply_pf_result){ .error = -EBADMSG };
                snprintf(arr[r->n_pfs].pf, sizeof(arr->pf), "%s", bad->pci_address);
                snprintf(arr[r->n_pfs].message, sizeof(arr->message),
                         "PF %s: state record unusable, PF left as it is: %.400s", bad->pci_address,
                         bad->message);
                r->n_pfs++;
        }
        return 0;
}

bool apply_rounds_over(int rounds, const struct apply_report *last)
{
        return rounds >= APPLY_ROUNDS_MAX || (apply_report_n_failed(last) > 0 && last->n_done == 0);
}
