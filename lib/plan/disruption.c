/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/disruption.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan/ib-guids.h"
#include "util/array.h"

/* How many in-use devices a reason names before "and N more". */
#define REASON_MAX_DEVICES 4

struct in_use_set {
        const char *const *ids;
        const char *const *pods;
        size_t n;
};

static ssize_t in_use_find(const struct in_use_set *s, const char *id)
{
        if (!id || !*id)
                return -1;
        for (size_t i = 0; i < s->n; i++)
                if (s->ids[i] && strcasecmp(s->ids[i], id) == 0)
                        return (ssize_t)i;
        return -1;
}

static const char *in_use_pod(const struct in_use_set *s, ssize_t i)
{
        return i >= 0 && s->pods && s->pods[i] && *s->pods[i] ? s->pods[i] : NULL;
}

/* One PF of the plan while its actions are judged. */
struct pf_verdict {
        const struct pf_info *pf; /* NULL when the PF is not in the inventory */
        ssize_t pf_in_use;        /* index into the in-use set, or -1 */
        ssize_t *vf_in_use;       /* per pf->vfs[i]: index into the in-use set, or -1 */
        bool *vf_affected;        /* per pf->vfs[i]: an in-use VF a disruptive action touches */
        size_t n_vfs_in_use;
        size_t n_disruptive;
        char first[192]; /* what the first disruptive action does */
};

static void pf_verdict_done(struct pf_verdict *v)
{
        free(v->vf_in_use);
        free(v->vf_affected);
        *v = (struct pf_verdict){ 0 };
}

static int pf_verdict_init(struct pf_verdict *v, const struct pf_info *pf,
                           const struct in_use_set *s)
{
        size_t n = pf ? pf->n_vfs : 0;

        *v = (struct pf_verdict){ .pf = pf, .pf_in_use = -1 };
        v->vf_in_use = calloc(n + 1, sizeof(*v->vf_in_use));
        v->vf_affected = calloc(n + 1, sizeof(*v->vf_affected));
        if (!v->vf_in_use || !v->vf_affected) {
                pf_verdict_done(v);
                return -ENOMEM;
        }
        if (!pf)
                return 0;
        v->pf_in_use = in_use_find(s, pf->pci_address);
        for (size_t i = 0; i < n; i++) {
                v->vf_in_use[i] = in_use_find(s, pf->vfs[i].pci_address);
                if (v->vf_in_use[i] >= 0)
                        v->n_vfs_in_use++;
        }
        return 0;
}

static ssize_t vf_slot_by_address(const struct pf_verdict *v, const char *address)
{
        for (size_t i = 0; v->pf && v->pf->vfs && *address && i < v->pf->n_vfs; i++)
                if (strcasecmp(v->pf->vfs[i].pci_address, address) == 0)
                        return (ssize_t)i;
        return -1;
}

static void mark_all_in_use(struct pf_verdict *v)
{
        for (size_t i = 0; v->pf && i < v->pf->n_vfs; i++)
                if (v->vf_in_use[i] >= 0)
                        v->vf_affected[i] = true;
}

static void record(struct pf_verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void record(struct pf_verdict *v, const char *fmt, ...)
{
        va_list ap;

        if (v->n_disruptive++ > 0)
                return;
        va_start(ap, fmt);
        vsnprintf(v->first, sizeof(v->first), fmt, ap);
        va_end(ap);
}

/* Whether an in-use VF has an index the new count removes. */
static bool shrink_removes_in_use(const struct pf_verdict *v, int new_count)
{
        for (size_t i = 0; i < v->pf->n_vfs; i++)
                if (v->vf_in_use[i] >= 0 && v->pf->vfs[i].vf_index >= new_count)
                        return true;
        return false;
}

static void judge_num_vfs(struct pf_verdict *v, const struct action *a)
{
        int current = v->pf->num_vfs;

        if (current == 0 || a->value == current || v->n_vfs_in_use == 0)
                return;
        mark_all_in_use(v);
        if (a->value == 0 || shrink_removes_in_use(v, a->value))
                record(v, "set-num-vfs %d -> %d removes VFs in use", current, a->value);
        else
                record(v, "set-num-vfs %d -> %d writes 0 first and re-creates every VF", current,
                       a->value);
}

static void judge_vf_action(struct pf_verdict *v, const struct action *a)
{
        ssize_t slot = vf_slot_by_address(v, a->vf_address);

        /* A VF without an address does not exist yet: creating it is judged on set-num-vfs. */
        if (slot < 0 || v->vf_in_use[slot] < 0)
                return;
        v->vf_affected[slot] = true;
        if (a->kind == ACTION_BIND_DRIVER)
                record(v, "bind-driver of VF %d (%s) from %s to %s", a->vf_index, a->vf_address,
                       *v->pf->vfs[slot].driver ? v->pf->vfs[slot].driver : "none",
                       *a->text ? a->text : "its kernel driver");
        else if (a->kind == ACTION_SET_VF_GUID) {
                char guid[IB_GUID_TEXT_MAX];
                ib_guid_format(a->guid, guid);
                record(v, "set-vf-guid %s on VF %d (%s)", guid, a->vf_index, a->vf_address);
        } else
                record(v, "set-vf-mtu %d on VF %d (%s)", a->value, a->vf_index, a->vf_address);
}

static int pf_mtu(const struct pf_info *pf)
{
        return pf->n_netdevs > 0 ? pf->netdevs[0].mtu : -1;
}

static void judge_action(struct pf_verdict *v, const struct action *a)
{
        if (!v->pf)
                return;
        if (v->pf_in_use >= 0) {
                record(v, "%s on a PF that is itself allocated to a pod",
                       action_kind_to_string(a->kind));
                return;
        }
        switch (a->kind) {
        case ACTION_SET_NUM_VFS:
                judge_num_vfs(v, a);
                break;
        case ACTION_RESET_PF:
                if (v->n_vfs_in_use > 0) {
                        mark_all_in_use(v);
                        record(v, "reset-pf removes all %d VFs", v->pf->num_vfs);
                }
                break;
        case ACTION_SET_ESWITCH_MODE:
                if (v->n_vfs_in_use > 0) {
                        mark_all_in_use(v);
                        record(v, "set-eswitch-mode %s -> %s with VFs in use",
                               *v->pf->eswitch_mode ? v->pf->eswitch_mode : "unknown", a->text);
                }
                break;
        case ACTION_BIND_DRIVER:
        case ACTION_SET_VF_MTU:
        case ACTION_SET_VF_GUID: /* and a re-bind: the pod's RDMA device goes away */
                judge_vf_action(v, a);
                break;
        case ACTION_RESTORE_PF_MTU:
                if (v->n_vfs_in_use > 0 && pf_mtu(v->pf) > a->value) {
                        mark_all_in_use(v);
                        record(v, "restore-pf-mtu lowers the PF MTU %d -> %d under VFs in use",
                               pf_mtu(v->pf), a->value);
                }
                break;
        case ACTION_SET_PF_MTU: /* only ever raised: VFs keep working */
        case ACTION_PF_LINK_UP: /* the PF was down: nothing on it can be working better */
        case _ACTION_KIND_MAX:
                break;
        }
}

struct text_buf {
        char *s;
        size_t size, len;
};

static void append(struct text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void append(struct text_buf *b, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (b->len >= b->size)
                return;
        va_start(ap, fmt);
        n = vsnprintf(b->s + b->len, b->size - b->len, fmt, ap);
        va_end(ap);
        if (n > 0)
                b->len += (size_t)n;
}

static void append_device(struct text_buf *b, const struct in_use_set *s, const char *what,
                          const char *address, ssize_t idx, size_t *n_named)
{
        const char *pod = in_use_pod(s, idx);

        append(b, "%s%s %s", *n_named ? ", " : "", what, address);
        if (pod)
                append(b, " by pod %s", pod);
        (*n_named)++;
}

static void format_reason(const struct pf_verdict *v, const struct action *first,
                          const struct in_use_set *s, struct held_pf *h)
{
        struct text_buf b = { .s = h->reason, .size = sizeof(h->reason) };
        size_t n_named = 0, n_affected = 0;

        append(&b, "%s%s%s%s: %s", first->pf, *first->pf_name ? " (" : "", first->pf_name,
               *first->pf_name ? ")" : "", v->first);
        if (v->n_disruptive > 1)
                append(&b, " (+%zu more disruptive actions)", v->n_disruptive - 1);
        append(&b, "; in use: ");
        if (v->pf_in_use >= 0) {
                append_device(&b, s, "the PF", v->pf->pci_address, v->pf_in_use, &n_named);
                n_affected++;
        }
        for (size_t i = 0; i < v->pf->n_vfs; i++) {
                if (!v->vf_affected[i])
                        continue;
                if (++n_affected <= REASON_MAX_DEVICES)
                        append_device(&b, s, "VF", v->pf->vfs[i].pci_address, v->vf_in_use[i],
                                      &n_named);
        }
        if (n_affected > n_named)
                append(&b, " and %zu more", n_affected - n_named);
        h->n_in_use = v->n_vfs_in_use + (v->pf_in_use >= 0 ? 1 : 0);
}

static int add_held(struct guarded_plan *g, struct held_pf *h)
{
        if (GROW_ARRAY(g->held, g->cap_held, g->n_held + 1) < 0)
                return -ENOMEM;
        g->held[g->n_held++] = *h;
        return 0;
}

static bool pf_seen_before(const struct plan *p, size_t upto, const char *pf)
{
        /* The planner keeps a PF's actions together: usually the previous one answers. */
        if (upto > 0 && strcmp(p->actions[upto - 1].pf, pf) == 0)
                return true;
        for (size_t i = 0; i < upto; i++)
                if (strcmp(p->actions[i].pf, pf) == 0)
                        return true;
        return false;
}

/* Judges the PF of p->actions[first] (its first action) over all its actions. */
static int judge_pf(const struct plan *p, size_t first, const struct inventory *observed,
                    const struct in_use_set *s, struct guarded_plan *g)
{
        const struct action *a0 = &p->actions[first];
        struct pf_verdict v;
        struct held_pf h = { 0 };
        int r;

        r = pf_verdict_init(&v, inventory_find_pf(observed, a0->pf), s);
        if (r < 0)
                return r;
        for (size_t i = first; i < p->n_actions; i++)
                if (strcmp(p->actions[i].pf, a0->pf) == 0) {
                        judge_action(&v, &p->actions[i]);
                        h.n_actions++;
                }
        if (v.n_disruptive > 0) {
                snprintf(h.pf, sizeof(h.pf), "%s", a0->pf);
                snprintf(h.pf_name, sizeof(h.pf_name), "%s", a0->pf_name);
                format_reason(&v, a0, s, &h);
                r = add_held(g, &h);
        }
        pf_verdict_done(&v);
        return r;
}

static bool is_held(const struct guarded_plan *g, const char *pf)
{
        for (size_t i = 0; i < g->n_held; i++)
                if (strcasecmp(g->held[i].pf, pf) == 0)
                        return true;
        return false;
}

static int take_copy(struct applied_state *state, const struct applied_pf *src)
{
        struct applied_pf copy;
        int r = applied_pf_copy(src, &copy);

        if (r >= 0) {
                r = applied_state_take(state, &copy);
                if (r < 0)
                        applied_pf_done(&copy);
        }
        return r;
}

static int cmp_applied(const void *a, const void *b)
{
        return strcmp(((const struct applied_pf *)a)->pci_address,
                      ((const struct applied_pf *)b)->pci_address);
}

/* The records to persist: unchanged for held PFs, the plan's for everything else. */
static int build_applied(const struct plan *p, const struct applied_state *previous, bool hold,
                         struct guarded_plan *g)
{
        struct applied_state *out = &g->plan.applied;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < p->applied.n_pfs; i++)
                if (!hold || !is_held(g, p->applied.pfs[i].pci_address))
                        r = take_copy(out, &p->applied.pfs[i]);
        for (size_t i = 0; hold && r >= 0 && i < g->n_held; i++) {
                const struct applied_pf *prev = applied_state_find(previous, g->held[i].pf);
                if (prev)
                        r = take_copy(out, prev);
        }
        if (r >= 0 && out->n_pfs > 1)
                qsort(out->pfs, out->n_pfs, sizeof(*out->pfs), cmp_applied);
        return r;
}

static int copy_actions_and_problems(const struct plan *p, bool hold, struct guarded_plan *g)
{
        struct plan *out = &g->plan;

        out->actions = calloc(p->n_actions + 1, sizeof(*out->actions));
        out->problems = calloc(p->n_problems + 1, sizeof(*out->problems));
        if (!out->actions || !out->problems)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_actions; i++)
                if (!hold || !is_held(g, p->actions[i].pf))
                        out->actions[out->n_actions++] = p->actions[i];
        if (p->n_problems > 0)
                memcpy(out->problems, p->problems, p->n_problems * sizeof(*p->problems));
        out->n_problems = p->n_problems;
        return 0;
}

int disruption_guard(const struct plan *plan, const struct inventory *observed,
                     const struct applied_state *previous, const char *const *in_use,
                     const char *const *in_use_pods, size_t n_in_use, bool allow_disruption,
                     struct guarded_plan *ret)
{
        const struct in_use_set s = { .ids = in_use, .pods = in_use_pods, .n = n_in_use };
        int r = 0;

        if (!ret)
                return -EINVAL;
        *ret = (struct guarded_plan){ .passed_through = allow_disruption };
        if (!plan || !observed || (n_in_use > 0 && !in_use))
                return -EINVAL;
        for (size_t i = 0; r >= 0 && i < plan->n_actions; i++)
                if (!pf_seen_before(plan, i, plan->actions[i].pf))
                        r = judge_pf(plan, i, observed, &s, ret);
        if (r >= 0)
                r = copy_actions_and_problems(plan, !allow_disruption, ret);
        if (r >= 0)
                r = build_applied(plan, previous, !allow_disruption, ret);
        if (r < 0)
                guarded_plan_done(ret);
        return r;
}

void guarded_plan_done(struct guarded_plan *g)
{
        plan_done(&g->plan);
        free(g->held);
        *g = (struct guarded_plan){ 0 };
}
