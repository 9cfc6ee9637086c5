/* SPDX-License-Identifier: Apache-2.0 */
/* Says when a configured PF goes down or comes back (deviceplugin/health.h decides what down
 * is): one journal line per change, and in cluster mode an Event on the NodeState (Warning
 * PFDown naming the PF and the cause, Normal PFUp). The devices' health itself is in the pools,
 * current after every reconcile: a link event starts one at once (agent/daemon.c), at most one
 * per debounce interval, which is what bounds the ListAndWatch updates of a flapping link.
 *
 * A PF already down when first seen is said only if it is still down LINK_FIRST_SIGHT_USEC later.
 * Flapping: more than LINK_REPORTS_MAX changes of one PF within LINK_WINDOW_USEC are not
 * reported one by one; when the window ends, the PF's state then is reported once if it differs
 * from the last one reported, with the number of changes. A lasting change is never hidden,
 * only delayed to the end of the window in the journal and Events. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent.h"
#include "deviceplugin/health.h"
#include "kube/cluster.h"
#include "kube/events.h"
#include "kube/nodestate.h"
#include "util/array.h"
#include "util/log.h"

#define LINK_WINDOW_USEC (10 * 1000000ULL)
#define LINK_REPORTS_MAX 3
/* A PF first seen down is said only if it is still down this long after: at boot the agent
 * itself brings PFs up, and their carrier follows within a second or two. */
#define LINK_FIRST_SIGHT_USEC (5 * 1000000ULL)

struct pf_link {
        char pci[PCI_ADDR_MAX];
        char ifname[IFNAME_MAX];
        const char *reason;   /* now (NULL: up); deviceplugin/health.h's fixed strings */
        const char *reported; /* last said in the journal */
        uint64_t window_start;
        unsigned changes; /* within the window */
        bool first_sight; /* first seen down: said at the window's end if it lasts */
};

struct link_health {
        struct pf_link *pfs;
        size_t n_pfs, cap_pfs;
        sd_event_source *window_end;
};

static bool same_reason(const char *a, const char *b)
{
        return a == b || (a && b && strcmp(a, b) == 0);
}

static void post_event(struct agent *a, const struct pf_link *l, const char *message)
{
        if (!a->cluster)
                return;
        json_t *obj = kube_nodestate_object(kube_cluster_nodestate(a->cluster));
        struct kube_object_ref ref;
        if (!obj || kube_object_ref_from_json(obj, &ref) < 0)
                return; /* no NodeState yet (boot, API unreachable): the journal has it */
        kube_events_post(kube_cluster_events(a->cluster), &ref, l->reason ? "Warning" : "Normal",
                         l->reason ? "PFDown" : "PFUp", message);
}

static void report(struct agent *a, struct pf_link *l, unsigned flapped)
{
        char message[256], extra[64] = "";

        if (flapped > 0)
                snprintf(extra, sizeof(extra), " (after %u changes within %llu s)", flapped,
                         (unsigned long long)(LINK_WINDOW_USEC / 1000000ULL));
        if (l->reason)
                snprintf(message, sizeof(message), "PF %s (%s): %s; its devices are Unhealthy%s",
                         l->pci, l->ifname[0] ? l->ifname : "no netdev", l->reason, extra);
        else
                snprintf(message, sizeof(message),
                         "PF %s (%s) is up again; its devices are "
                         "Healthy%s",
                         l->pci, l->ifname[0] ? l->ifname : "no netdev", extra);
        log_pf(l->reason ? LOG_WARNING : LOG_NOTICE, 0, l->pci, "%s", message);
        post_event(a, l, message);
        l->reported = l->reason;
}

static int on_window_end(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct agent *a = userdata;
        struct link_health *h = a->link_health;

        for (size_t i = 0; i < h->n_pfs; i++) {
                struct pf_link *l = &h->pfs[i];
                if (l->changes > LINK_REPORTS_MAX && !same_reason(l->reason, l->reported))
                        report(a, l, l->first_sight ? 0 : l->changes);
                l->changes = 0;
                l->window_start = 0;
                l->first_sight = false;
        }
        return 0;
}

static void arm_window_end(struct agent *a, uint64_t at)
{
        struct link_health *h = a->link_health;
        int enabled = SD_EVENT_OFF;
        if (h->window_end)
                sd_event_source_get_enabled(h->window_end, &enabled);
        if (enabled != SD_EVENT_OFF)
                return;
        if (!h->window_end) {
                if (sd_event_add_time(a->event, &h->window_end, CLOCK_MONOTONIC, at, 100 * 1000,
                                      on_window_end, a) < 0)
                        log_warning("cannot arm the link flapping timer; the next change of a "
                                    "flapping PF is reported when it happens");
                return;
        }
        sd_event_source_set_time(h->window_end, at);
        sd_event_source_set_enabled(h->window_end, SD_EVENT_ONESHOT);
}

static struct pf_link *find_or_add(struct link_health *h, const char *pci, bool *added)
{
        *added = false;
        for (size_t i = 0; i < h->n_pfs; i++)
                if (strcasecmp(h->pfs[i].pci, pci) == 0)
                        return &h->pfs[i];
        if (GROW_ARRAY(h->pfs, h->cap_pfs, h->n_pfs + 1) < 0)
                return NULL;
        struct pf_link *l = &h->pfs[h->n_pfs++];
        *l = (struct pf_link){ 0 };
        snprintf(l->pci, sizeof(l->pci), "%s", pci);
        *added = true;
        return l;
}

void link_health_update(struct agent *a, const struct desired_state *served,
                        const struct inventory *inv)
{
        const struct dp_health_options opts = { .ignore_link = a->config.no_link_health };
        uint64_t now = 0;

        if (!a->link_health && !(a->link_health = calloc(1, sizeof(*a->link_health)))) {
                log_error_errno(-ENOMEM, "cannot follow the PFs' links");
                return;
        }
        (void)sd_event_now(a->event, CLOCK_MONOTONIC, &now);
        for (size_t i = 0; i < served->n_interfaces; i++) {
                const struct desired_interface *iface = &served->interfaces[i];
                if (iface->n_groups == 0)
                        continue; /* no devices: nothing whose health would change */
                const struct pf_info *pf = inventory_find_pf(inv, iface->pci_address);
                const char *reason = pf ? dp_pf_down_reason(pf, &opts) : "PCI function gone";
                bool added;
                struct pf_link *l = find_or_add(a->link_health, iface->pci_address, &added);
                if (!l)
                        return (void)log_error_errno(-ENOMEM, "cannot follow the PFs' links");
                if (pf && pf->n_netdevs > 0)
                        snprintf(l->ifname, sizeof(l->ifname), "%s", pf->netdevs[0].name);
                if (added) {
                        l->reason = reason;
                        if (reason) { /* said once if it lasts (LINK_FIRST_SIGHT_USEC) */
                                l->window_start = now;
                                l->changes = LINK_REPORTS_MAX + 1;
                                l->first_sight = true;
                                arm_window_end(a, now + LINK_FIRST_SIGHT_USEC);
                        }
                        continue;
                }
                if (same_reason(reason, l->reason))
                        continue;
                l->reason = reason;
                if (!l->window_start || now - l->window_start >= LINK_WINDOW_USEC) {
                        l->window_start = now;
                        l->changes = 0;
                }
                if (++l->changes <= LINK_REPORTS_MAX) {
                        report(a, l, 0);
                        if (l->changes == LINK_REPORTS_MAX)
                                log_pf(LOG_NOTICE, 0, l->pci,
                                       "PF %s changed %u times within %llu s; further changes "
                                       "are reported when it settles",
                                       l->pci, l->changes,
                                       (unsigned long long)(LINK_WINDOW_USEC / 1000000ULL));
                } else {
                        arm_window_end(a, l->window_start + LINK_WINDOW_USEC);
                }
        }
}

void link_health_free(struct agent *a)
{
        if (!a->link_health)
                return;
        sd_event_source_disable_unref(a->link_health->window_end);
        free(a->link_health->pfs);
        free(a->link_health);
        a->link_health = NULL;
}
