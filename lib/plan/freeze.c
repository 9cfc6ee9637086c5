/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/freeze.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>

#include "util/array.h"

int plan_freeze_bad_records(struct plan *p, struct applied_state *previous)
{
        for (size_t i = 0; i < previous->n_bad; i++) {
                struct applied_bad_record *bad = &previous->bad[i];
                size_t kept = 0, held = 0;

                for (size_t j = 0; j < p->n_actions; j++) {
                        if (strcasecmp(p->actions[j].pf, bad->pci_address) == 0)
                                held++;
                        else
                                p->actions[kept++] = p->actions[j];
                }
                p->n_actions = kept;
                bad->would_change = held > 0;
                kept = 0;
                for (size_t j = 0; j < p->applied.n_pfs; j++) {
                        if (strcasecmp(p->applied.pfs[j].pci_address, bad->pci_address) == 0)
                                applied_pf_done(&p->applied.pfs[j]);
                        else
                                p->applied.pfs[kept++] = p->applied.pfs[j];
                }
                p->applied.n_pfs = kept;

                if (GROW_ARRAY(p->problems, p->cap_problems, p->n_problems + 1) < 0)
                        return -ENOMEM;
                struct plan_problem *problem = &p->problems[p->n_problems++];
                *problem = (struct plan_problem){ 0 };
                snprintf(problem->pf, sizeof(problem->pf), "%s", bad->pci_address);
                snprintf(problem->message, sizeof(problem->message),
                         "state record unusable (%.150s); PF left as it is%s until the file "
                         "is fixed or removed",
                         bad->message, held ? ", its changes held back," : "");
        }
        return 0;
}
