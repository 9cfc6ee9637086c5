/* SPDX-License-Identifier: Apache-2.0 */
/* Which NIC models the daemon may configure: the built-in supported-NIC table, plus files given
 * with --supported-nics, plus (cluster mode) the `supported-nic-ids` ConfigMap of the agent's
 * namespace, or every model with --all-nics.
 *
 * The ConfigMap is read with a plain GET when the daemon starts and again every
 * NIC_LIST_REFRESH_USEC (a changed list schedules a reconcile). Until the first answer the
 * daemon does not reconcile: a PF of a model that only the ConfigMap lists would otherwise look
 * unwanted and be reset. A missing ConfigMap (404) means "no additions"; a refused read (403,
 * RBAC not updated) or repeated transport errors are logged and the daemon goes on with the
 * built-in table and files, since the informers of the same server are what gate everything
 * else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "kube/cluster.h"
#include "kube/http.h"
#include "policy-files.h"
#include "util/log.h"
#include "util/macro.h"

#define NIC_LIST_REFRESH_USEC (300 * 1000000ULL)
#define NIC_LIST_RETRY_USEC   (2 * 1000000ULL)
#define NIC_LIST_MAX_ATTEMPTS 3

struct nic_list {
        struct agent *agent;
        struct supported_nics base; /* built-in + files (+ --all-nics) */
        struct supported_nics current;
        bool ready;
        unsigned failures;
        char *path;      /* /api/v1/namespaces/NS/configmaps/supported-nic-ids */
        char *last_data; /* the ConfigMap's data as last applied, to notice changes */
        struct kube_config *config;
        struct kube_http *http;
        struct kube_request *request;
        sd_event_source *timer;
};

static int copy_base(const struct supported_nics *from, struct supported_nics *to)
{
        *to = (struct supported_nics){ .any = from->any };
        if (from->n_extra == 0)
                return 0;
        to->extra = calloc(from->n_extra, sizeof(*to->extra));
        if (!to->extra)
                return -ENOMEM;
        memcpy(to->extra, from->extra, from->n_extra * sizeof(*to->extra));
        to->n_extra = from->n_extra;
        return 0;
}

static void become_ready(struct nic_list *l)
{
        if (l->ready)
                return;
        l->ready = true;
        agent_schedule_reconcile(l->agent, "supported-NIC list read");
}

/* Applies the ConfigMap's data (NULL: none). A bad value keeps the previous list. */
static void apply_configmap(struct nic_list *l, json_t *data)
{
        _cleanup_free_ char *text = data ? json_dumps(data, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
        _cleanup_free_ char *error = NULL;
        struct supported_nics next;

        if (data && !text) {
                become_ready(l); /* out of memory: go on with the list as it is */
                return;
        }
        if (l->ready &&
            ((!text && !l->last_data) || (text && l->last_data && strcmp(text, l->last_data) == 0)))
                return;
        if (copy_base(&l->base, &next) < 0) {
                become_ready(l);
                return;
        }
        if (data) {
                char origin[512];
                snprintf(origin, sizeof(origin), "ConfigMap %s", l->path);
                int r = supported_nics_add_json(&next, data, origin, &error);
                if (r < 0) {
                        log_error("%s; keeping the previous supported-NIC list",
                                  error ? error : strerror(-r));
                        supported_nics_done(&next);
                        become_ready(l);
                        return;
                }
        }
        log_info("supported-NIC list: built-in table%s%s, %zu model(s) added", data ? " + " : "",
                 data ? SUPPORTED_NICS_CONFIGMAP " ConfigMap" : "", next.n_extra);
        supported_nics_done(&l->current);
        l->current = next;
        free(l->last_data);
        l->last_data = TAKE_PTR(text);
        if (l->ready)
                agent_schedule_reconcile(l->agent, "supported-NIC list changed");
        become_ready(l);
}

static void rearm(struct nic_list *l, uint64_t usec)
{
        if (sd_event_source_set_time_relative(l->timer, usec) >= 0)
                sd_event_source_set_enabled(l->timer, SD_EVENT_ONESHOT);
}

static void on_done(struct kube_request *req, int error, long status, const char *body,
                    size_t body_len, void *userdata)
{
        struct nic_list *l = userdata;

        (void)req;
        l->request = NULL;
        if (error < 0) {
                l->failures++;
                log_warning_errno(error, "cannot read ConfigMap %s: %s%s", l->path,
                                  strerror(-error),
                                  l->failures >= NIC_LIST_MAX_ATTEMPTS
                                      ? "; going on with the built-in list and files"
                                      : "; retrying");
                if (l->failures >= NIC_LIST_MAX_ATTEMPTS)
                        become_ready(l);
                rearm(l, l->ready ? NIC_LIST_REFRESH_USEC : NIC_LIST_RETRY_USEC);
                return;
        }
        l->failures = 0;
        if (status == 200) {
                json_auto_t *obj = json_loadb(body, body_len, 0, NULL);
                json_t *data = json_object_get(obj, "data");
                apply_configmap(l, json_is_object(data) ? data : NULL);
        } else if (status == 404) {
                apply_configmap(l, NULL);
        } else {
                /* 403 when the Role lacks configmaps get: say so once per change. */
                if (!l->ready)
                        log_warning("cannot read ConfigMap %s: HTTP %ld; going on with the "
                                    "built-in supported-NIC list and files (see "
                                    "manifests/20-rbac.yaml)",
                                    l->path, status);
                become_ready(l);
        }
        rearm(l, NIC_LIST_REFRESH_USEC);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct nic_list *l = userdata;

        (void)s;
        (void)usec;
        if (l->request)
                return 0;
        if (kube_http_start(l->http,
                            &(const struct kube_request_opts){
                                .path = l->path, .on_done = on_done, .userdata = l },
                            &l->request) < 0) {
                l->request = NULL;
                rearm(l, NIC_LIST_RETRY_USEC);
        }
        return 0;
}

static int start_cluster(struct nic_list *l)
{
        const struct agent_config *c = &l->agent->config;
        _cleanup_free_ char *ns =
            kube_http_escape(c->namespace_ ? c->namespace_ : KUBE_DEFAULT_NAMESPACE);
        int r;

        if (!ns || asprintf(&l->path, "/api/v1/namespaces/%s/configmaps/%s", ns,
                            SUPPORTED_NICS_CONFIGMAP) < 0) {
                l->path = NULL;
                return -ENOMEM;
        }
        r = kube_config_load(c->kubeconfig, &l->config);
        if (r < 0)
                return r;
        r = kube_http_new(l->agent->event, l->config, &l->http);
        if (r < 0)
                return r;
        /* 100 ms: the first read is on the way to the first reconcile (not the default 250 ms
         * late); retries (2 s) and refreshes (5 min) do not care. */
        return sd_event_add_time_relative(l->agent->event, &l->timer, CLOCK_MONOTONIC, 0,
                                          100 * 1000, on_timer, l);
}

int nic_list_new(struct agent *a, struct nic_list **ret)
{
        struct nic_list *l = calloc(1, sizeof(*l));
        int r;

        if (!l)
                return -ENOMEM;
        l->agent = a;
        l->base.any = a->config.all_nics;
        for (size_t i = 0; i < a->config.n_supported_nics_files; i++) {
                r = supported_nics_load_file(&l->base, a->config.supported_nics_files[i]);
                if (r < 0)
                        goto fail; /* logged with the file and key */
        }
        r = copy_base(&l->base, &l->current);
        if (r < 0)
                goto fail;
        if (a->config.all_nics || a->config.policy_dir) {
                l->ready = true; /* nothing to wait for */
        } else {
                r = start_cluster(l);
                if (r < 0) {
                        log_error_errno(r, "cannot set up reading ConfigMap %s",
                                        SUPPORTED_NICS_CONFIGMAP);
                        goto fail;
                }
        }
        *ret = l;
        return 0;
fail:
        nic_list_free(l);
        return r;
}

struct nic_list *nic_list_free(struct nic_list *l)
{
        if (!l)
                return NULL;
        if (l->request)
                kube_request_cancel(l->request);
        sd_event_source_unref(l->timer);
        kube_http_free(l->http);
        kube_config_free(l->config);
        supported_nics_done(&l->base);
        supported_nics_done(&l->current);
        free(l->path);
        free(l->last_data);
        free(l);
        return NULL;
}

bool nic_list_ready(const struct nic_list *l)
{
        return !l || l->ready;
}

const struct supported_nics *nic_list_get(const struct nic_list *l)
{
        return l ? &l->current : NULL;
}
