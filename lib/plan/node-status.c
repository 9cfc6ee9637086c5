/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/node-status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"

/* Appends sep (unless first) and the formatted text, cutting what does not fit. */
__attribute__((format(printf, 4, 0))) static void
vappend(struct node_status *s, size_t *n, const char *sep, const char *fmt, va_list ap)
{
        const size_t size = sizeof(s->message);

        if (*n)
                *n += snprintf(s->message + *n, size - *n, "%s", sep);
        if (*n >= size) {
                *n = size - 1;
                return;
        }
        *n += vsnprintf(s->message + *n, size - *n, fmt, ap);
        if (*n >= size)
                *n = size - 1;
}

/* Appends "; " (unless first) and the formatted text. */
__attribute__((format(printf, 3, 4))) static void append(struct node_status *s, size_t *n,
                                                         const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vappend(s, n, "; ", fmt, ap);
        va_end(ap);
}

__attribute__((format(printf, 4, 5))) static void append_sep(struct node_status *s, size_t *n,
                                                             const char *sep, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vappend(s, n, sep, fmt, ap);
        va_end(ap);
}

static bool is_held(const struct guarded_plan *g, const char *pf)
{
        for (size_t i = 0; g && !g->passed_through && i < g->n_held; i++)
                if (strcmp(g->held[i].pf, pf) == 0)
                        return true;
        return false;
}

/* "<PF> (<netdev>): <action>[ vf N][ -> value]": what a user compares with the spec. */
static void append_action(struct node_status *s, size_t *n, const char *sep, const struct action *a)
{
        char target[32] = "", value[80];

        if (a->vf_index >= 0)
                snprintf(target, sizeof(target), " vf %d", a->vf_index);
        action_value_format(a, value, sizeof(value));
        append_sep(s, n, sep, "%s%s%s%s: %s%s%s", a->pf, a->pf_name[0] ? " (" : "", a->pf_name,
                   a->pf_name[0] ? ")" : "", action_kind_to_string(a->kind), target, value);
}

/* The plan's actions of PFs the guard did not hold: changes that are due but not applied. */
static void append_left(const struct node_status_facts *f, struct node_status *ret, size_t *n)
{
        size_t n_left = 0, listed = 0;

        for (size_t i = 0; f->plan && i < f->plan->n_actions; i++)
                n_left += !is_held(f->guarded, f->plan->actions[i].pf);
        ret->n_left = f->dry_run ? 0 : n_left;
        if (ret->sync == NODE_SYNC_FAILED || n_left == 0)
                return;
        ret->sync = NODE_SYNC_IN_PROGRESS;
        if (f->dry_run)
                append(ret, n, "dry run: %zu change%s planned, not applied", n_left,
                       n_left == 1 ? "" : "s");
        else
                append(ret, n, "%zu change%s left after the apply rounds, applying again", n_left,
                       n_left == 1 ? "" : "s");
        for (size_t i = 0; i < f->plan->n_actions && listed < NODE_STATUS_ACTIONS_LISTED; i++)
                if (!is_held(f->guarded, f->plan->actions[i].pf))
                        append_action(ret, n, listed++ == 0 ? ": " : ", ", &f->plan->actions[i]);
        if (n_left > listed)
                append_sep(ret, n, ", ", "and %zu more", n_left - listed);
}

void node_status_decide(const struct node_status_facts *f, struct node_status *ret)
{
        const struct guarded_plan *guarded = f->guarded;
        size_t n = 0;

        *ret = (struct node_status){ .sync = NODE_SYNC_SUCCEEDED };
        if (f->stopped) {
                /* The facts below are then only what the reconcile got to. */
                ret->sync = NODE_SYNC_FAILED;
                append(ret, &n, "%s", f->stopped);
        }
        for (size_t i = 0; f->applied && i < f->applied->n_pfs; i++)
                if (f->applied->pfs[i].error != 0) {
                        ret->sync = NODE_SYNC_FAILED;
                        append(ret, &n, "%s", f->applied->pfs[i].message);
                }
        /* PFs the plan leaves alone until the user acts (firmware settings) failed too. */
        for (size_t i = 0; f->plan && i < f->plan->n_problems; i++)
                if (f->plan->problems[i].pf_failed) {
                        ret->sync = NODE_SYNC_FAILED;
                        append(ret, &n, "PF %s: %s", f->plan->problems[i].pf,
                               f->plan->problems[i].message);
                }
        if (f->rdma_shared_error) {
                /* The SR-IOV side is applied; the whole-card RDMA pools are not what the file
                 * says until it is fixed. */
                ret->sync = NODE_SYNC_FAILED;
                append(ret, &n, "RDMA shared config not used: %s", f->rdma_shared_error);
        }
        if (ret->sync != NODE_SYNC_FAILED && guarded && !guarded->passed_through &&
            guarded->n_held > 0) {
                ret->sync = NODE_SYNC_IN_PROGRESS;
                for (size_t i = 0; i < guarded->n_held; i++)
                        append(ret, &n, "held back until the VFs are free: %s",
                               guarded->held[i].reason);
        }
        if (ret->sync != NODE_SYNC_FAILED && f->rdma_reboot_needed) {
                /* the node does not match its setting until someone reboots it; we never do */
                ret->sync = NODE_SYNC_IN_PROGRESS;
                append(ret, &n, "%s", f->rdma_reboot_needed);
        }
        append_left(f, ret, &n);
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

int node_events_decide(const struct guarded_plan *guarded, const struct node_event_facts *f,
                       struct node_events *ret)
{
        struct node_events e = { 0 };
        int r = 0;

        *ret = (struct node_events){ 0 };
        if (f->rdma_reboot_needed && !f->rdma_reboot_posted)
                r = add_event(&e, "RebootNeeded", f->rdma_reboot_needed);
        if (r >= 0 && f->rdma_shared_error &&
            (!f->rdma_error_posted || strcmp(f->rdma_error_posted, f->rdma_shared_error) != 0))
                r = add_event(&e, "InvalidRdmaSharedConfig", f->rdma_shared_error);
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
