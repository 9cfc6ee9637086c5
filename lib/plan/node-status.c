/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/node-status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"

/* Appends "; " (unless first) and the formatted text, cutting what does not fit. */
__attribute__((format(printf, 3, 4))) static void append(struct node_status *s, size_t *n,
                                                         const char *fmt, ...)
{
        const size_t size = sizeof(s->message);
        va_list ap;

        if (*n)
                *n += snprintf(s->message + *n, size - *n, "; ");
        if (*n >= size) {
                *n = size - 1;
                return;
        }
        va_start(ap, fmt);
        *n += vsnprintf(s->message + *n, size - *n, fmt, ap);
        va_end(ap);
        if (*n >= size)
                *n = size - 1;
}

void node_status_decide(const struct apply_report *applied, const struct plan *plan,
                        const struct guarded_plan *guarded, const char *rdma_shared_error,
                        struct node_status *ret)
{
        size_t n = 0;

        *ret = (struct node_status){ .sync = NODE_SYNC_SUCCEEDED };
        for (size_t i = 0; i < applied->n_pfs; i++)
                if (applied->pfs[i].error != 0) {
                        ret->sync = NODE_SYNC_FAILED;
                        append(ret, &n, "%s", applied->pfs[i].message);
                }
        /* PFs the plan leaves alone until the user acts (firmware settings) failed too. */
        for (size_t i = 0; plan && i < plan->n_problems; i++)
                if (plan->problems[i].pf_failed) {
                        ret->sync = NODE_SYNC_FAILED;
                        append(ret, &n, "PF %s: %s", plan->problems[i].pf,
                               plan->problems[i].message);
                }
        if (rdma_shared_error) {
                /* The SR-IOV side is applied; the whole-card RDMA pools are not what the file
                 * says until it is fixed. */
                ret->sync = NODE_SYNC_FAILED;
                append(ret, &n, "RDMA shared config not used: %s", rdma_shared_error);
        }
        if (ret->sync != NODE_SYNC_FAILED && !guarded->passed_through && guarded->n_held > 0) {
                ret->sync = NODE_SYNC_IN_PROGRESS;
                for (size_t i = 0; i < guarded->n_held; i++)
                        append(ret, &n, "held back until the VFs are free: %s",
                               guarded->held[i].reason);
        }
}

void node_events_done(struct node_events *e)
{
        free(e->events);
        *e = (struct node_events){ 0 };
}

static int add_event(struct node_events *e, const char *reason, const char *message)
{
        if (GROW_ARRAY(e->events, e->cap_events, e->n_events + 1) < 0)
                return -ENOMEM;
        e->events[e->n_events++] = (struct node_event){ .reason = reason, .message = message };
        return 0;
}

int node_events_decide(const struct guarded_plan *guarded, const char *rdma_shared_error,
                       const char *rdma_error_posted, struct node_events *ret)
{
        struct node_events e = { 0 };
        int r = 0;

        *ret = (struct node_events){ 0 };
        if (rdma_shared_error &&
            (!rdma_error_posted || strcmp(rdma_error_posted, rdma_shared_error) != 0))
                r = add_event(&e, "InvalidRdmaSharedConfig", rdma_shared_error);
        /* Every reconcile: the API server counts repeats of the same Event, which says how long
         * the change has been waiting. */
        for (size_t i = 0; r >= 0 && !guarded->passed_through && i < guarded->n_held; i++)
                r = add_event(&e, "DisruptionHeld", guarded->held[i].reason);
        if (r < 0) {
                node_events_done(&e);
                return r;
        }
        *ret = e;
        return 0;
}

const char *node_sync_status_to_string(enum node_sync_status s)
{
        switch (s) {
        case NODE_SYNC_SUCCEEDED:
                return "Succeeded";
        case NODE_SYNC_IN_PROGRESS:
                return "InProgress";
        case NODE_SYNC_FAILED:
                return "Failed";
        }
        return "Unknown";
}
