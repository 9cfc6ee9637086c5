/* SPDX-License-Identifier: Apache-2.0 */
/* Saying what happened: journal lines with PF=/POLICY= context, and in cluster mode the
 * SriovNetworkNodeState (spec, status, syncStatus, lastSyncError) and Events. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "apply.h"
#include "host/rdma-netlink.h"
#include "kube/cluster.h"
#include "model/desired-json.h"
#include "model/inventory-json.h"
#include "plan/node-status.h"
#include "rdma-boot.h"
#include "util/log.h"
#include "util/macro.h"

static void log_policy_report(struct agent *a, const struct policy_report *rep)
{
        /* The periodic check re-evaluates every policy; say what changed, not the same
         * warning every 30 s. */
        size_t size = 1;
        for (size_t i = 0; i < rep->n_results; i++)
                size += strlen(rep->results[i].name ? rep->results[i].name : "") +
                        strlen(rep->results[i].reason ? rep->results[i].reason : "") + 32;
        _cleanup_free_ char *text = calloc(1, size);
        if (!text)
                return;
        char *p = text;
        for (size_t i = 0; i < rep->n_results; i++)
                p += sprintf(p, "%s|%s|%s\n", rep->results[i].name ? rep->results[i].name : "",
                             policy_status_to_string(rep->results[i].status),
                             rep->results[i].reason ? rep->results[i].reason : "");
        if (a->last_report && strcmp(a->last_report, text) == 0)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return;

        for (size_t i = 0; i < rep->n_results; i++) {
                const struct policy_result *r = &rep->results[i];
                int level =
                    r->status == POLICY_STATUS_INVALID || r->status == POLICY_STATUS_CONFLICT
                        ? LOG_WARNING
                        : LOG_INFO;
                /* The reason already names the origin and the policy. */
                log_policy(level, 0, r->name ? r->name : "(unnamed)", "%s: %s",
                           policy_status_to_string(r->status), r->reason ? r->reason : "");
        }
        free(a->last_report);
        a->last_report = TAKE_PTR(text);
}

static void post_policy_events(struct agent *a, const struct policy_report *rep)
{
        json_t *policies = kube_cluster_policies(a->cluster);

        for (size_t i = 0; i < rep->n_results; i++) {
                const struct policy_result *r = &rep->results[i];
                const char *reason = r->status == POLICY_STATUS_INVALID    ? "InvalidPolicy"
                                     : r->status == POLICY_STATUS_CONFLICT ? "ConflictingPolicy"
                                                                           : NULL;
                struct kube_object_ref ref;
                char key[512];

                if (!reason || !r->name)
                        continue;
                snprintf(key, sizeof(key), "%s/%s",
                         a->config.namespace_ ? a->config.namespace_ : KUBE_DEFAULT_NAMESPACE,
                         r->name);
                json_t *obj = json_object_get(policies, key);
                if (obj && kube_object_ref_from_json(obj, &ref) >= 0)
                        kube_events_post(kube_cluster_events(a->cluster), &ref, "Warning", reason,
                                         r->reason ? r->reason : reason);
        }
}

void report_policies(struct agent *a, const struct policy_report *rep)
{
        log_policy_report(a, rep);
        if (a->cluster)
                post_policy_events(a, rep);
}

void report_held(const struct guarded_plan *g)
{
        for (size_t i = 0; i < g->n_held; i++) {
                const struct log_ctx ctx = { .pf = g->held[i].pf };
                if (g->passed_through)
                        log_ctx_msg(LOG_WARNING, 0, &ctx,
                                    "applying although VFs are in use (--allow-disruption): %s",
                                    g->held[i].reason);
                else
                        log_ctx_msg(LOG_WARNING, 0, &ctx,
                                    "change held back until the VFs are free: %s",
                                    g->held[i].reason);
        }
}

static enum kube_sync_status to_kube_sync(enum node_sync_status s)
{
        switch (s) {
        case NODE_SYNC_FAILED:
                return KUBE_SYNC_FAILED;
        case NODE_SYNC_IN_PROGRESS:
                return KUBE_SYNC_IN_PROGRESS;
        case NODE_SYNC_SUCCEEDED:
                break;
        }
        return KUBE_SYNC_SUCCEEDED;
}

/* Which RDMA shared config the whole-card pools follow, for the NodeState: its source, what
 * of it is in use, and whether the source as it is now is used. */
static json_t *rdma_shared_json(const struct agent *a)
{
        json_t *resources = json_array();
        for (size_t i = 0; resources && a->have_rdma_shared && i < a->rdma_shared.n_resources;
             i++) {
                const struct rdma_shared_resource *res = &a->rdma_shared.resources[i];
                char name[sizeof(res->prefix) + sizeof(res->name) + 1];
                snprintf(name, sizeof(name), "%s/%s", res->prefix, res->name);
                json_array_append_new(resources, json_pack("{s:s, s:i}", "resourceName", name,
                                                           "rdmaHcaMax", res->hca_max));
        }
        const char *state = a->rdma_shared_error
                                ? (a->have_rdma_shared ? "invalid: the last good one is used"
                                                       : "invalid: none is used")
                                : (a->have_rdma_shared ? "in use" : "absent");
        return json_pack("{s:s, s:s, s:o*}", "source",
                         a->rdma_shared_source ? a->rdma_shared_source : "none", "state", state,
                         "resources", resources);
}

/* The NodeState: spec = the desired state, status = what discovery sees now (every interface)
 * and how the last reconcile went, and its Warning Events (plan/node-status.h decides both).
 * The writer only sends what changed. */
void report_node_state(struct agent *a, const struct desired_state *desired,
                       const struct inventory *inv, const struct guarded_plan *guarded,
                       const struct node_status *status)
{
        struct kube_nodestate *ns = kube_cluster_nodestate(a->cluster);
        json_auto_t *spec = NULL, *status_json = NULL;

        if (desired && desired_state_to_json(desired, &spec) >= 0)
                kube_nodestate_set_spec(ns, spec);
        rdma_mode_refresh(a);
        kube_nodestate_set_rdma_mode(ns, host_rdma_netns_mode_to_string(a->rdma_mode_now));
        status_json = inventory_to_json(inv);
        json_auto_t *node_extra =
            json_pack("{s:o*, s:o*, s:O*}", "rdmaSharedConfig", rdma_shared_json(a), "rdmaMode",
                      rdma_mode_status_json(a->rdma_mode_now, a->rdma_mode_next_boot,
                                            a->rdma_mode_next_boot_source, a->config.rdma_mode),
                      "draRejectedResources", a->dra_rejected);
        if (status_json)
                kube_nodestate_set_status_extra(ns, json_object_get(status_json, "interfaces"),
                                                node_extra, to_kube_sync(status->sync),
                                                status->message);

        _cleanup_(node_events_done) struct node_events events = { 0 };
        json_t *obj = kube_nodestate_object(ns);
        struct kube_object_ref ref;
        if (!obj || kube_object_ref_from_json(obj, &ref) < 0)
                return; /* not created yet: the next reconcile posts them */
        const struct node_event_facts facts = {
                .rdma_shared_error = a->rdma_shared_error,
                .rdma_error_posted = a->rdma_shared_error_posted,
                .rdma_reboot_needed = a->rdma_reboot_needed,
                .rdma_reboot_posted = a->rdma_reboot_posted,
        };
        if (node_events_decide(guarded, &facts, &events) < 0)
                return (void)log_error_errno(-ENOMEM, "cannot post the NodeState's Events");
        for (size_t i = 0; i < events.n_events; i++) {
                kube_events_post(kube_cluster_events(a->cluster), &ref, "Warning",
                                 events.events[i].reason, events.events[i].message);
                if (strcmp(events.events[i].reason, "RebootNeeded") == 0)
                        a->rdma_reboot_posted = true;
                if (strcmp(events.events[i].reason, "InvalidRdmaSharedConfig") == 0) {
                        free(a->rdma_shared_error_posted);
                        a->rdma_shared_error_posted = strdup(a->rdma_shared_error);
                }
        }
        const char *polling = agent_polling_notice(a);
        if (polling && !a->polling_notice_posted) {
                /* Once per agent run, as in the journal: it does not change while it runs. */
                kube_events_post(kube_cluster_events(a->cluster), &ref, "Warning",
                                 "InotifyUnavailable", polling);
                a->polling_notice_posted = true;
        }
}
