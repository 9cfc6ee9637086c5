/* SPDX-License-Identifier: Apache-2.0 */
/* Policy engine + planner benchmark: 200 policies over 64 PFs x 128 VFs, built in memory.
 *
 *   bench-plan
 *
 * 192 policies select one third of a PF's VFs each by "pfN#first-last" (three resources per
 * PF, mixed netdevice/vfio-pci, MTUs) and 8 lower-priority policies select every PF by vendor
 * and deviceID (their groups lose to the ranged ones in the merge). Measured, as the median of
 * RUNS runs: policy_build_desired_state() + plan_build() on a node with no VFs yet (every
 * action needed) and on the converged node (no actions). Parsing the 200 YAML documents is
 * reported separately. Target: <= 20 ms for select + merge + plan. Exit 1 when missed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-time.h"
#include "model/desired.h"
#include "plan/plan.h"
#include "policy/policy-merge.h"
#include "policy/policy.h"

#define RUNS      21
#define N_PFS     64
#define N_VFS     128
#define TARGET_MS 20.0

static void build_inventory(struct inventory *inv)
{
        *inv = (struct inventory){ .pfs = calloc(N_PFS, sizeof(struct pf_info)), .n_pfs = N_PFS };
        if (!inv->pfs)
                abort();
        for (int i = 0; i < N_PFS; i++) {
                struct pf_info *pf = &inv->pfs[i];
                *pf = (struct pf_info){ .vendor = 0x15b3,
                                        .device = 0x101b,
                                        .total_vfs = N_VFS,
                                        .numa_node = i % 2,
                                        .iommu_group = -1 };
                snprintf(pf->pci_address, sizeof(pf->pci_address), "0000:%02x:00.0", 0x10 + i);
                snprintf(pf->eswitch_mode, sizeof(pf->eswitch_mode), "legacy");
                snprintf(pf->driver, sizeof(pf->driver), "mlx5_core");
                pf->netdevs = calloc(1, sizeof(*pf->netdevs));
                if (!pf->netdevs)
                        abort();
                netdev_info_init(&pf->netdevs[0]);
                snprintf(pf->netdevs[0].name, sizeof(pf->netdevs[0].name), "pf%d", i);
                pf->netdevs[0].mtu = 1500;
                pf->netdevs[0].admin_up = true;
                pf->n_netdevs = 1;
        }
}

static char *build_policies_yaml(void)
{
        size_t size = 1 << 20, len = 0;
        char *y = malloc(size);
        static const int cuts[4] = { 0, 40, 80, N_VFS };

        if (!y)
                abort();
        y[0] = '\0';
        for (int i = 0; i < N_PFS; i++)
                for (int k = 0; k < 3; k++)
                        len += (size_t)snprintf(
                            y + len, size - len,
                            "---\napiVersion: sriovnetwork.openshift.io/v1\n"
                            "kind: SriovNetworkNodePolicy\nmetadata: {name: p%d-%d}\n"
                            "spec:\n  resourceName: res_%d\n  nodeSelector: {bench: \"yes\"}\n"
                            "  priority: %d\n  numVfs: %d\n  mtu: %d\n  deviceType: %s\n"
                            "  nicSelector: {pfNames: [\"pf%d#%d-%d\"]}\n",
                            i, k, k, 10 + k, N_VFS, k == 1 ? 9000 : 1500,
                            k == 2 ? "vfio-pci" : "netdevice", i, cuts[k], cuts[k + 1] - 1);
        for (int v = 0; v < 8; v++)
                len += (size_t)snprintf(y + len, size - len,
                                        "---\napiVersion: sriovnetwork.openshift.io/v1\n"
                                        "kind: SriovNetworkNodePolicy\nmetadata: {name: wide%d}\n"
                                        "spec:\n  resourceName: wide_%d\n  nodeSelector: {}\n"
                                        "  priority: 99\n  numVfs: %d\n"
                                        "  nicSelector: {vendor: \"15b3\", deviceID: \"101b\"}\n",
                                        v, v, N_VFS);
        return y;
}

/* One full pass; returns its wall time and the number of actions. */
static double run_once(const struct policy_list *list, const struct inventory *inv,
                       const struct applied_state *prev, size_t *n_actions, struct plan *keep)
{
        static const struct string_pair labels[] = { { .key = "bench", .value = "yes" } };
        struct desired_state desired;
        struct policy_report report;
        struct plan plan;
        double t0 = now_ms(), t;

        if (policy_build_desired_state(list->items, list->n_items, labels, 1, inv, &desired,
                                       &report) < 0 ||
            plan_build(&desired, inv, prev, &plan) < 0)
                abort();
        t = now_ms() - t0;
        *n_actions = plan.n_actions;
        desired_state_done(&desired);
        policy_report_done(&report);
        if (keep)
                *keep = plan;
        else
                plan_done(&plan);
        return t;
}

static double median_run(const struct policy_list *list, const struct inventory *inv,
                         const struct applied_state *prev, size_t *n_actions)
{
        double times[RUNS];
        for (int r = 0; r < RUNS; r++)
                times[r] = run_once(list, inv, prev, n_actions, NULL);
        qsort(times, RUNS, sizeof(times[0]), compare_double);
        return times[RUNS / 2];
}

int main(void)
{
        struct policy_list list = { 0 };
        struct inventory inv;
        struct plan first;
        size_t n_actions, n_steady;
        char *yaml = build_policies_yaml();
        double t0, parse_ms, cold_ms, steady_ms;
        bool ok;

        build_inventory(&inv);
        t0 = now_ms();
        if (policy_list_add_buffer(&list, "bench.yaml", yaml, strlen(yaml)) < 0)
                abort();
        parse_ms = now_ms() - t0;
        free(yaml);

        cold_ms = median_run(&list, &inv, NULL, &n_actions);
        run_once(&list, &inv, NULL, &n_actions, &first);
        if (plan_simulate(&first, &inv) < 0)
                abort();
        steady_ms = median_run(&list, &inv, &first.applied, &n_steady);

        printf("bench-plan: %zu policies, %d PFs x %d VFs, median of %d runs\n", list.n_items,
               N_PFS, N_VFS, RUNS);
        printf("  parse 200 YAML documents           %8.2f ms   (not in target)\n", parse_ms);
        printf("  select+merge+plan, no VFs yet      %8.2f ms   target <= %.0f ms   %zu actions\n",
               cold_ms, TARGET_MS, n_actions);
        printf("  select+merge+plan, converged node  %8.2f ms   target <= %.0f ms   %zu actions\n",
               steady_ms, TARGET_MS, n_steady);
        ok = cold_ms <= TARGET_MS && steady_ms <= TARGET_MS && n_steady == 0;
        printf("  %s\n", ok ? "OK" : "MISSED");
        plan_done(&first);
        inventory_done(&inv);
        policy_list_done(&list);
        return ok ? 0 : 1;
}
