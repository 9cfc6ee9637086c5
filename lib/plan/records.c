/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/records.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/macro.h"

void record_changes_done(struct record_changes *c)
{
        free(c->save);
        free(c->remove);
        *c = (struct record_changes){ 0 };
}

static bool has_actions(const struct plan *plan, const char *pci)
{
        for (size_t j = 0; j < plan->n_actions; j++)
                if (strcasecmp(plan->actions[j].pf, pci) == 0)
                        return true;
        return false;
}

int records_before_apply(const struct plan *plan, const struct applied_state *previous,
                         struct record_changes *ret)
{
        _cleanup_free_ const struct applied_pf **save =
            calloc(plan->applied.n_pfs ? plan->applied.n_pfs : 1, sizeof(*save));
        size_t n = 0;

        if (!save)
                return -ENOMEM;
        for (size_t i = 0; i < plan->applied.n_pfs; i++) {
                const struct applied_pf *pf = &plan->applied.pfs[i];
                if (has_actions(plan, pf->pci_address) &&
                    !applied_state_find(previous, pf->pci_address))
                        save[n++] = pf;
        }
        *ret = (struct record_changes){ .save = TAKE_PTR(save), .n_save = n };
        return 0;
}

int records_after_apply(const struct plan *plan, const struct applied_state *previous,
                        const struct apply_report *rep, struct record_changes *ret)
{
        _cleanup_free_ const struct applied_pf **save =
            calloc(plan->applied.n_pfs ? plan->applied.n_pfs : 1, sizeof(*save));
        _cleanup_free_ const char **gone =
            calloc(previous->n_pfs ? previous->n_pfs : 1, sizeof(*gone));
        size_t n_save = 0, n_remove = 0;

        if (!save || !gone)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;
        for (size_t i = 0; i < plan->applied.n_pfs; i++) {
                const struct applied_pf *pf = &plan->applied.pfs[i];
                const struct apply_pf_result *res = apply_report_find(rep, pf->pci_address);
                if (res && res->error != 0 && res->n_done == 0)
                        continue; /* nothing changed: the old record (or none) still holds */
                save[n_save++] = pf;
        }
        for (size_t i = 0; i < previous->n_pfs; i++) {
                const char *pci = previous->pfs[i].pci_address;
                const struct apply_pf_result *res = apply_report_find(rep, pci);
                if (applied_state_find(&plan->applied, pci) || (res && res->error != 0))
                        continue;
                gone[n_remove++] = pci;
        }
        *ret = (struct record_changes){
                .save = TAKE_PTR(save),
                .n_save = n_save,
                .remove = TAKE_PTR(gone),
                .n_remove = n_remove,
        };
        return 0;
}

static int compare_interfaces(const void *a, const void *b)
{
        const struct desired_interface *x = a, *y = b;
        return strcasecmp(x->pci_address, y->pci_address);
}

int records_boot_desired(const struct applied_state *records, struct desired_state *ret)
{
        struct desired_state d = { 0 };

        if (records->n_pfs > 0) {
                d.interfaces = calloc(records->n_pfs, sizeof(*d.interfaces));
                if (!d.interfaces)
                        return -ENOMEM;
                d.cap_interfaces = records->n_pfs;
        }
        for (size_t i = 0; i < records->n_pfs; i++) {
                struct applied_pf copy;
                if (applied_pf_copy(&records->pfs[i], &copy) < 0) {
                        desired_state_done(&d);
                        return -ENOMEM;
                }
                d.interfaces[d.n_interfaces++] = copy.applied;
        }
        /* The planner and the pools expect the desired state sorted by PCI address. */
        if (d.n_interfaces > 1)
                qsort(d.interfaces, d.n_interfaces, sizeof(*d.interfaces), compare_interfaces);
        *ret = d;
        return 0;
}
