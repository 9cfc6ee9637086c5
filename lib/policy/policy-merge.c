/* SPDX-License-Identifier: Apache-2.0 */
#include "policy/policy-merge.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/policy-select.h"
#include "policy/policy-validate.h"
#include "util/array.h"
#include "util/macro.h"
#include "util/parse.h"

static const char *const policy_status_names[_POLICY_STATUS_MAX] = {
        [POLICY_STATUS_APPLIED] = "applied",
        [POLICY_STATUS_NOT_SELECTED] = "not-selected",
        [POLICY_STATUS_INVALID] = "invalid",
        [POLICY_STATUS_CONFLICT] = "conflict",
};

const char *policy_status_to_string(enum policy_status s)
{
        return (unsigned)s < _POLICY_STATUS_MAX ? policy_status_names[s] : "";
}

/* Working state of one policy through the pipeline. */
struct candidate {
        const struct policy *policy;
        size_t index;             /* in the input */
        bool pending;             /* still on its way to applied */
        bool node_matched;        /* its nodeSelector matched: it counts for equal priority */
        char *unsupported;        /* PFs it would select but whose model is not supported */
        struct pf_selection *pfs; /* the PFs it selects */
        size_t n_pfs;
};

struct engine {
        const struct policy *policies;
        size_t n_policies;
        const struct inventory *inv;
        const struct supported_nics *supported;
        struct candidate *cands;
        struct policy_report *report;
        struct desired_state *desired;
};

static int set_result(struct engine *e, size_t i, enum policy_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int set_result(struct engine *e, size_t i, enum policy_status status, const char *fmt, ...)
{
        struct policy_result *res = &e->report->results[i];
        char *text;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        free(res->reason);
        res->reason = text;
        res->status = status;
        e->cands[i].pending = false;
        return 0;
}

static int prefix_of(const struct policy *p, char *buf, size_t size)
{
        return snprintf(buf, size, "%s: policy %s", p->origin ? p->origin : "API",
                        policy_display_name(p));
}

/* Appends "; " + piece to *text. */
static int append(char **text, const char *piece)
{
        char *joined;

        if (asprintf(&joined, "%s%s%s", *text ? *text : "", *text ? "; " : "", piece) < 0)
                return -ENOMEM;
        free(*text);
        *text = joined;
        return 0;
}

/* Selects PFs by nicSelector; PFs whose model is outside the supported-NIC list are left out
 * (upstream never even discovers them) and listed in c->unsupported for the reason. */
static int select_pfs(struct engine *e, struct candidate *c)
{
        c->pfs = calloc(e->inv->n_pfs ? e->inv->n_pfs : 1, sizeof(*c->pfs));
        if (!c->pfs)
                return -ENOMEM;
        for (size_t j = 0; j < e->inv->n_pfs; j++) {
                const struct pf_info *pf = &e->inv->pfs[j];
                char piece[96];
                if (!policy_selects_pf(c->policy, pf, &c->pfs[c->n_pfs]))
                        continue;
                if (supported_nics_allows(e->supported, pf->vendor, pf->device)) {
                        c->n_pfs++;
                        continue;
                }
                snprintf(piece, sizeof(piece), "%s (%s, %04x:%04x)", pf->pci_address,
                         pf_netdev_name(pf) ? pf_netdev_name(pf) : "no netdev", pf->vendor,
                         pf->device);
                if (append(&c->unsupported, piece) < 0)
                        return -ENOMEM;
        }
        return 0;
}

#define UNSUPPORTED_HINT                                                                           \
        "not in the supported-NIC list (add the model as \"<vendor> <pf-device> <vf-device>\" "    \
        "with --supported-nics or the supported-nic-ids ConfigMap, or allow every model with "     \
        "--all-nics)"

/* Upstream's webhook admits a nicSelector vendor/deviceID only when the supported-NIC list
 * has it (IsSupportedVendor, IsSupportedModel, IsSupportedDevice). */
static const char *unsupported_selector(const struct engine *e, const struct policy *p,
                                        const char **ret_field)
{
        uint32_t vendor = 0, device = 0;
        bool has_vendor = p->nic.vendor && parse_hex_u32(p->nic.vendor, &vendor) == 0;
        bool has_device = p->nic.device_id && parse_hex_u32(p->nic.device_id, &device) == 0;

        if (e->supported && e->supported->any)
                return NULL;
        if (has_vendor && !supported_nics_has_vendor(e->supported, (uint16_t)vendor)) {
                *ret_field = "spec.nicSelector.vendor";
                return "no supported NIC model has this vendor";
        }
        if (has_vendor && has_device &&
            !supported_nics_allows(e->supported, (uint16_t)vendor, (uint16_t)device)) {
                *ret_field = "spec.nicSelector.deviceID";
                return "this vendor/device pair is not a supported NIC model";
        }
        if (!has_vendor && has_device &&
            !supported_nics_has_device(e->supported, (uint16_t)device)) {
                *ret_field = "spec.nicSelector.deviceID";
                return "no supported NIC model has this PF device id";
        }
        return NULL;
}

/* Validation, nodeSelector, unsupported features, nicSelector and per-PF checks. */
static int screen_policy(struct engine *e, size_t i, const struct string_pair *labels,
                         size_t n_labels)
{
        struct candidate *c = &e->cands[i];
        const struct policy *p = c->policy;
        const struct string_pair *missing = NULL;
        _cleanup_free_ char *why = NULL;
        const char *unsupported, *field = NULL;
        char prefix[384];
        int r;

        prefix_of(p, prefix, sizeof(prefix));
        /* Upstream skips the deprecated "default" policy (operators before v1.3.0 created it
         * with an empty resourceName and nicSelector) before looking at it at all. */
        if (p->name && strcmp(p->name, "default") == 0)
                return set_result(e, i, POLICY_STATUS_NOT_SELECTED,
                                  "%s: the policy named \"default\" is deprecated and skipped",
                                  prefix);
        r = policy_validate(p, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return set_result(e, i, POLICY_STATUS_INVALID, "%s", why);
        for (size_t j = 0; j < i; j++) {
                const struct policy *q = &e->policies[j];
                if (!q->error && q->name && strcmp(q->name, p->name) == 0 &&
                    strcmp(q->namespace ? q->namespace : "", p->namespace ? p->namespace : "") == 0)
                        return set_result(e, i, POLICY_STATUS_INVALID,
                                          "%s: field metadata.name: duplicate of the policy in %s "
                                          "(names are unique per namespace)",
                                          prefix, q->origin ? q->origin : "API");
        }
        unsupported = unsupported_selector(e, p, &field);
        if (unsupported)
                return set_result(e, i, POLICY_STATUS_INVALID, "%s: field %s: %s; %s", prefix,
                                  field, unsupported, UNSUPPORTED_HINT);
        if (!policy_matches_node(p, labels, n_labels, &missing))
                return set_result(e, i, POLICY_STATUS_NOT_SELECTED,
                                  "%s: nodeSelector %s=%s does not match this node's labels",
                                  prefix, missing->key, missing->value);
        c->node_matched = true;
        unsupported = policy_unsupported_feature(p);
        if (unsupported)
                return set_result(e, i, POLICY_STATUS_NOT_SELECTED,
                                  "%s: unsupported on this node: %s", prefix, unsupported);
        r = select_pfs(e, c);
        if (r < 0)
                return r;
        if (c->n_pfs == 0 && c->unsupported)
                return set_result(
                    e, i, POLICY_STATUS_NOT_SELECTED,
                    "%s: nicSelector matches only PFs whose model is " UNSUPPORTED_HINT ": %s",
                    prefix, c->unsupported);
        if (c->n_pfs == 0)
                return set_result(e, i, POLICY_STATUS_NOT_SELECTED,
                                  "%s: nicSelector matches no PF on this node", prefix);
        for (size_t k = 0; k < c->n_pfs; k++) {
                _cleanup_free_ char *pf_why = NULL;
                r = policy_check_on_pf(p, c->pfs[k].pf, &pf_why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return set_result(e, i, POLICY_STATUS_INVALID, "%s", pf_why);
                unsupported = policy_unsupported_on_pf(p, c->pfs[k].pf);
                if (unsupported)
                        return set_result(e, i, POLICY_STATUS_NOT_SELECTED,
                                          "%s: PF %s: unsupported on this node: %s", prefix,
                                          c->pfs[k].pf->pci_address, unsupported);
        }
        return 0;
}

/* Webhook-style range overlap: a pfNames entry without a range counts as -1..-1, so two
 * range-less entries naming the same PF overlap, while a range-less and a ranged one do not
 * (upstream then lets the merge drop the lower-priority group). */
static bool webhook_ranges_overlap(const struct pf_name_selector *a,
                                   const struct pf_name_selector *b)
{
        int as = a->has_range ? a->vf_start : -1, ae = a->has_range ? a->vf_end : -1;
        int bs = b->has_range ? b->vf_start : -1, be = b->has_range ? b->vf_end : -1;
        return as <= be && bs <= ae;
}

/* Why a (the later, lower-priority candidate) conflicts with accepted b, or NULL. */
static const char *conflict_between(const struct candidate *a, const struct candidate *b,
                                    const char **ret_pf)
{
        const struct policy *pa = a->policy, *pb = b->policy;

        if (strcmp(pa->resource_name, pb->resource_name) == 0 &&
            pa->exclude_topology != pb->exclude_topology) {
                *ret_pf = NULL;
                return "excludeTopology differs for the same resourceName";
        }
        for (size_t i = 0; i < a->n_pfs; i++)
                for (size_t j = 0; j < b->n_pfs; j++) {
                        const struct pf_selection *sa = &a->pfs[i], *sb = &b->pfs[j];
                        if (sa->pf != sb->pf)
                                continue;
                        *ret_pf = sa->pf->pci_address;
                        if (sa->by_pf_name && sb->by_pf_name &&
                            webhook_ranges_overlap(sa->by_pf_name, sb->by_pf_name))
                                return "pfNames VF ranges overlap on the same PF";
                        if (sa->by_root_device && sb->by_root_device)
                                return "the same rootDevice is selected twice";
                        /* Upstream's webhook compares externallyManaged only between pfNames
                         * entries naming the same PF (validatePfNames). */
                        if (sa->by_pf_name && sb->by_pf_name &&
                            pa->externally_managed != pb->externally_managed)
                                return "externallyManaged differs on the same PF";
                }
        return NULL;
}

/* Higher priority (smaller number) first, then name: the order in which conflicts are won. */
static int cmp_winner_first(const void *x, const void *y)
{
        const struct candidate *a = *(const struct candidate *const *)x;
        const struct candidate *b = *(const struct candidate *const *)y;

        int r;

        if (a->policy->priority != b->policy->priority)
                return a->policy->priority < b->policy->priority ? -1 : 1;
        r = strcmp(a->policy->name, b->policy->name);
        return r ? r : (a->index > b->index) - (a->index < b->index);
}

/* Upstream's application order: larger priority number first, ties by name ascending. */
static int cmp_apply_order(const void *x, const void *y)
{
        const struct candidate *a = *(const struct candidate *const *)x;
        const struct candidate *b = *(const struct candidate *const *)y;

        int r;

        if (a->policy->priority != b->policy->priority)
                return a->policy->priority > b->policy->priority ? -1 : 1;
        r = strcmp(a->policy->name, b->policy->name);
        return r ? r : (a->index > b->index) - (a->index < b->index);
}

static int collect_pending(struct engine *e, struct candidate ***ret, size_t *n)
{
        struct candidate **list = calloc(e->n_policies ? e->n_policies : 1, sizeof(*list));

        if (!list)
                return -ENOMEM;
        *n = 0;
        for (size_t i = 0; i < e->n_policies; i++)
                if (e->cands[i].pending)
                        list[(*n)++] = &e->cands[i];
        *ret = list;
        return 0;
}

static int resolve_conflicts(struct engine *e)
{
        _cleanup_free_ struct candidate **order = NULL;
        size_t n = 0, n_accepted = 0;
        int r = collect_pending(e, &order, &n);

        if (r < 0)
                return r;
        if (n > 1)
                qsort(order, n, sizeof(*order), cmp_winner_first);
        for (size_t i = 0; i < n; i++) {
                const char *why = NULL, *pf = NULL;
                size_t k;
                for (k = 0; k < n_accepted && !why; k++)
                        why = conflict_between(order[i], order[k], &pf);
                if (!why) {
                        order[n_accepted++] = order[i];
                        continue;
                }
                char prefix[384];
                prefix_of(order[i]->policy, prefix, sizeof(prefix));
                r = set_result(e, order[i]->index, POLICY_STATUS_CONFLICT,
                               "%s: conflicts with policy %s (priority %d)%s%s: %s; it wins, "
                               "this policy applies nothing",
                               prefix, order[k - 1]->policy->name, order[k - 1]->policy->priority,
                               pf ? " on PF " : "", pf ? pf : "", why);
                if (r < 0)
                        return r;
        }
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
        return 0;
}

static struct desired_interface *find_or_add_interface(struct desired_state *d, const char *pci,
                                                       bool *ret_found)
{
        for (size_t i = 0; i < d->n_interfaces; i++)
                if (strcmp(d->interfaces[i].pci_address, pci) == 0) {
                        *ret_found = true;
                        return &d->interfaces[i];
                }
        if (GROW_ARRAY(d->interfaces, d->cap_interfaces, d->n_interfaces + 1) < 0)
                return NULL;
        *ret_found = false;
        d->interfaces[d->n_interfaces] = (struct desired_interface){ 0 };
        return &d->interfaces[d->n_interfaces++];
}

static struct vf_group make_group(const struct policy *p, const struct pf_selection *sel)
{
        struct vf_group g = {
                .device_type = strcmp(p->device_type, "vfio-pci") == 0 ? DEVICE_TYPE_VFIO_PCI
                                                                       : DEVICE_TYPE_NETDEVICE,
                .vf_start = sel->vf_start,
                .vf_end = sel->vf_end,
                .mtu = p->mtu,
                .is_rdma = p->is_rdma,
                .need_vhost_net = p->need_vhost_net,
                .exclude_topology = p->exclude_topology,
                .priority = p->priority,
        };
        snprintf(g.resource_name, sizeof(g.resource_name), "%s", p->resource_name);
        snprintf(g.policy_name, sizeof(g.policy_name), "%s", p->name);
        snprintf(g.vdpa_type, sizeof(g.vdpa_type), "%s", p->vdpa_type ? p->vdpa_type : "");
        return g;
}

static enum link_type link_type_of(const struct policy *p)
{
        if (!p->link_type)
                return LINK_TYPE_UNKNOWN;
        return strcasecmp(p->link_type, "ib") == 0 ? LINK_TYPE_IB : LINK_TYPE_ETH;
}

static enum eswitch_mode eswitch_of(const struct policy *p)
{
        if (!p->eswitch_mode)
                return ESWITCH_MODE_UNSET;
        return strcmp(p->eswitch_mode, "switchdev") == 0 ? ESWITCH_MODE_SWITCHDEV
                                                         : ESWITCH_MODE_LEGACY;
}

static bool groups_overlap(const struct vf_group *a, const struct vf_group *b)
{
        return a->vf_start <= b->vf_end && b->vf_start <= a->vf_end;
}

/* Upstream's per-PF step: build the new entry, carry non-clashing old groups, replace. */
static int apply_to_pf(struct desired_state *d, const struct policy *p,
                       const struct pf_selection *sel, bool equal_priority)
{
        struct desired_interface next = {
                .num_vfs = p->num_vfs,
                .mtu = p->mtu,
                .link_type = link_type_of(p),
                .eswitch_mode = eswitch_of(p),
                .externally_managed = p->externally_managed,
        };
        struct desired_interface *cur;
        bool found, carried = false;

        cur = find_or_add_interface(d, sel->pf->pci_address, &found);
        if (!cur)
                return -ENOMEM;
        snprintf(next.pci_address, sizeof(next.pci_address), "%s", sel->pf->pci_address);
        snprintf(next.name, sizeof(next.name), "%s",
                 pf_netdev_name(sel->pf) ? pf_netdev_name(sel->pf) : "");
        next.groups = calloc(1 + (found ? cur->n_groups : 0), sizeof(*next.groups));
        if (!next.groups)
                return -ENOMEM;
        next.groups[next.n_groups++] = make_group(p, sel);
        for (size_t i = 0; found && i < cur->n_groups; i++) {
                const struct vf_group *old = &cur->groups[i];
                if (strcmp(old->resource_name, next.groups[0].resource_name) == 0 ||
                    groups_overlap(old, &next.groups[0]))
                        continue;
                next.groups[next.n_groups++] = *old;
                carried = true;
        }
        if (found && (equal_priority || carried)) {
                if (next.mtu < cur->mtu)
                        next.mtu = cur->mtu;
                if (next.num_vfs < cur->num_vfs)
                        next.num_vfs = cur->num_vfs;
        }
        desired_interface_done(cur);
        *cur = next;
        return 0;
}

/* The policies upstream's controller walks for this node: every one whose nodeSelector
 * matches, including those that then select no NIC here. Invalid and conflicting ones are
 * left out: upstream's webhook would not have admitted them. */
static int collect_node_matched(struct engine *e, struct candidate ***ret, size_t *n)
{
        struct candidate **list = calloc(e->n_policies ? e->n_policies : 1, sizeof(*list));

        if (!list)
                return -ENOMEM;
        *n = 0;
        for (size_t i = 0; i < e->n_policies; i++) {
                enum policy_status st = e->report->results[i].status;
                if (e->cands[i].pending ||
                    (e->cands[i].node_matched && st == POLICY_STATUS_NOT_SELECTED))
                        list[(*n)++] = &e->cands[i];
        }
        *ret = list;
        return 0;
}

static int merge_accepted(struct engine *e)
{
        _cleanup_free_ struct candidate **order = NULL;
        size_t n = 0;
        int r = collect_node_matched(e, &order, &n);
        int previous_priority = -1;

        if (r < 0)
                return r;
        if (n > 1)
                qsort(order, n, sizeof(*order), cmp_apply_order);
        for (size_t i = 0; i < n; i++) {
                const struct policy *p = order[i]->policy;
                /* Upstream compares with the previous policy that matched the node's labels,
                 * whether or not it selected a NIC here. */
                bool equal = previous_priority == p->priority;
                previous_priority = p->priority;
                if (!order[i]->pending)
                        continue;
                for (size_t k = 0; k < order[i]->n_pfs; k++) {
                        r = apply_to_pf(e->desired, p, &order[i]->pfs[k], equal);
                        if (r < 0)
                                return r;
                }
        }
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
        return 0;
}

static int cmp_interface(const void *x, const void *y)
{
        return strcmp(((const struct desired_interface *)x)->pci_address,
                      ((const struct desired_interface *)y)->pci_address);
}

/* Accepted policies are applied where a group of theirs survived the merge; where a
 * higher-priority policy took their place (upstream's silent override) the reason says so. */
static int report_applied(struct engine *e)
{
        for (size_t i = 0; i < e->n_policies; i++) {
                struct candidate *c = &e->cands[i];
                _cleanup_free_ char *text = NULL;
                bool any = false;
                char piece[512], prefix[384];

                if (!c->pending)
                        continue;
                for (size_t k = 0; k < c->n_pfs; k++) {
                        const struct pf_info *pf = c->pfs[k].pf;
                        const struct desired_interface *di =
                            desired_find_interface(e->desired, pf->pci_address);
                        const struct vf_group *g = NULL;
                        for (size_t j = 0; di && j < di->n_groups && !g; j++)
                                if (strcmp(di->groups[j].policy_name, c->policy->name) == 0)
                                        g = &di->groups[j];
                        if (g)
                                snprintf(piece, sizeof(piece), "PF %s (%s) VFs %d-%d as %s",
                                         pf->pci_address, di->name, g->vf_start, g->vf_end,
                                         g->resource_name);
                        else
                                snprintf(piece, sizeof(piece),
                                         "PF %s: its VF group was replaced by a higher-priority "
                                         "policy's overlapping or same-resource group",
                                         pf->pci_address);
                        any = any || g;
                        if (append(&text, piece) < 0)
                                return -ENOMEM;
                }
                if (c->unsupported) {
                        _cleanup_free_ char *skip = NULL;
                        if (asprintf(&skip, "not selected, model not supported: %s",
                                     c->unsupported) < 0) {
                                skip = NULL;
                                return -ENOMEM;
                        }
                        if (append(&text, skip) < 0)
                                return -ENOMEM;
                }
                prefix_of(c->policy, prefix, sizeof(prefix));
                if (set_result(e, i, any ? POLICY_STATUS_APPLIED : POLICY_STATUS_NOT_SELECTED,
                               "%s: %s", prefix, text ? text : "") < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int init_report(struct engine *e)
{
        struct policy_report *rep = e->report;

        rep->results = calloc(e->n_policies ? e->n_policies : 1, sizeof(*rep->results));
        if (!rep->results)
                return -ENOMEM;
        rep->n_results = e->n_policies;
        for (size_t i = 0; i < e->n_policies; i++) {
                const struct policy *p = &e->policies[i];
                rep->results[i].name = p->name ? strdup(p->name) : NULL;
                rep->results[i].origin = strdup(p->origin ? p->origin : "API");
                if ((p->name && !rep->results[i].name) || !rep->results[i].origin)
                        return -ENOMEM;
                e->cands[i] = (struct candidate){ .policy = p, .index = i, .pending = true };
        }
        return 0;
}

int policy_build_desired_state(const struct policy *policies, size_t n_policies,
                               const struct string_pair *labels, size_t n_labels,
                               const struct inventory *inv, struct desired_state *ret_desired,
                               struct policy_report *ret_report)
{
        return policy_build_desired_state_with(&(const struct policy_build_options){}, policies,
                                               n_policies, labels, n_labels, inv, ret_desired,
                                               ret_report);
}

int policy_build_desired_state_with(const struct policy_build_options *opts,
                                    const struct policy *policies, size_t n_policies,
                                    const struct string_pair *labels, size_t n_labels,
                                    const struct inventory *inv, struct desired_state *ret_desired,
                                    struct policy_report *ret_report)
{
        struct engine e = {
                .supported = opts ? opts->supported : NULL,
                .policies = policies,
                .n_policies = n_policies,
                .inv = inv,
                .report = ret_report,
                .desired = ret_desired,
        };
        int r;

        *ret_desired = (struct desired_state){ 0 };
        *ret_report = (struct policy_report){ 0 };
        e.cands = calloc(n_policies ? n_policies : 1, sizeof(*e.cands));
        if (!e.cands)
                return -ENOMEM;
        r = init_report(&e);
        for (size_t i = 0; r >= 0 && i < n_policies; i++)
                r = screen_policy(&e, i, labels, n_labels);
        if (r >= 0)
                r = resolve_conflicts(&e);
        if (r >= 0)
                r = merge_accepted(&e);
        if (r >= 0)
                r = report_applied(&e);
        for (size_t i = 0; i < n_policies; i++) {
                free(e.cands[i].pfs);
                free(e.cands[i].unsupported);
        }
        free(e.cands);
        if (r < 0) {
                desired_state_done(ret_desired);
                policy_report_done(ret_report);
                return r;
        }
        if (ret_desired->n_interfaces > 1)
                qsort(ret_desired->interfaces, ret_desired->n_interfaces,
                      sizeof(*ret_desired->interfaces), cmp_interface);
        return 0;
}

void policy_report_done(struct policy_report *report)
{
        for (size_t i = 0; i < report->n_results; i++) {
                free(report->results[i].name);
                free(report->results[i].origin);
                free(report->results[i].reason);
        }
        free(report->results);
        *report = (struct policy_report){ 0 };
}

bool policy_report_has_errors(const struct policy_report *report)
{
        for (size_t i = 0; i < report->n_results; i++)
                if (report->results[i].status == POLICY_STATUS_INVALID ||
                    report->results[i].status == POLICY_STATUS_CONFLICT)
                        return true;
        return false;
}
