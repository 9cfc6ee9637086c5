/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA shared config from a ConfigMap (cluster mode): by default `rdma-devices` in
 * `kube-system`, key `config.json`, the object k8s-rdma-shared-dev-plugin's deployment mounts.
 *
 * One informer lists and watches that single object (fieldSelector metadata.name=NAME, which
 * RBAC's resourceNames allows for list and watch), so an edit applies live and a deletion
 * removes the whole-card pools. Its content goes through agent_rdma_shared_update(), as a file
 * does: an invalid one keeps the last good config and is reported (NodeState, Event).
 * With --rdma-shared-config the file wins: the ConfigMap is still followed, only to say in the
 * journal that it is not used.
 *
 * The first reconcile waits for the first list (or RDMA_CONFIGMAP_WAIT_USEC when it cannot be
 * read, RBAC not updated): without the wait the whole-card pools would register empty and
 * then change a moment later. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "kube/cluster.h"
#include "kube/http.h"
#include "kube/watch.h"
#include "util/log.h"
#include "util/macro.h"

#define RDMA_CONFIGMAP_KEY       "config.json"
#define RDMA_CONFIGMAP_WAIT_USEC (10 * 1000000ULL)

struct rdma_configmap {
        struct agent *agent;
        char *name;
        char *origin; /* "ConfigMap NS/NAME key config.json": messages name it */
        struct kube_informer *informer;
        sd_event_source *wait;
        bool ready;
        char *ignored_data; /* file mode: the content last said to be ignored */
};

static void become_ready(struct rdma_configmap *m, const char *why)
{
        if (m->ready)
                return;
        m->ready = true;
        sd_event_source_set_enabled(m->wait, SD_EVENT_OFF);
        agent_schedule_reconcile(m->agent, why);
}

static void take(struct rdma_configmap *m, json_t *o)
{
        struct agent *a = m->agent;
        json_t *value = o ? json_object_get(json_object_get(o, "data"), RDMA_CONFIGMAP_KEY) : NULL;
        const char *text = json_string_value(value);
        _cleanup_free_ char *error = NULL;

        if (a->config.rdma_shared_config) {
                if (!o || (m->ignored_data && text && strcmp(m->ignored_data, text) == 0))
                        return;
                log_notice("%s is not used: --rdma-shared-config %s is given and wins", m->origin,
                           a->config.rdma_shared_config);
                free(m->ignored_data);
                m->ignored_data = text ? strdup(text) : NULL;
                return;
        }
        if (o && !text &&
            asprintf(&error, "%s: the ConfigMap has no key \"%s\"%s", m->origin, RDMA_CONFIGMAP_KEY,
                     value ? " with a string value" : "") < 0)
                return (void)log_error_errno(-ENOMEM, "%s", m->origin);
        int r = agent_rdma_shared_update(a, m->origin, text, error);
        if (r < 0)
                log_error_errno(r, "%s: cannot take its content", m->origin);
        else if (r > 0 && m->ready)
                agent_schedule_reconcile(a, "RDMA shared config ConfigMap changed");
}

static bool is_ours(const struct rdma_configmap *m, json_t *o)
{
        const char *name =
            json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
        return name && strcmp(name, m->name) == 0;
}

static void on_added(json_t *o, void *userdata)
{
        struct rdma_configmap *m = userdata;
        if (is_ours(m, o))
                take(m, o);
}

static void on_updated(json_t *old, json_t *o, void *userdata)
{
        on_added(o, userdata);
}

static void on_deleted(json_t *o, void *userdata)
{
        struct rdma_configmap *m = userdata;
        if (is_ours(m, o))
                take(m, NULL);
}

static void on_synced(struct kube_informer *informer, void *userdata)
{
        struct rdma_configmap *m = userdata;
        if (!m->ready && kube_cache_size(kube_informer_cache(informer)) == 0 &&
            !m->agent->config.rdma_shared_config)
                log_info("%s does not exist: no whole-card RDMA pools until it is created",
                         m->origin);
        become_ready(m, "RDMA shared config ConfigMap read");
}

static int on_wait_over(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct rdma_configmap *m = userdata;

        (void)s;
        (void)usec;
        log_warning("%s could not be read yet (RBAC: get/list/watch on it, see "
                    "manifests/20-rbac.yaml); going on without whole-card RDMA pools until it is",
                    m->origin);
        become_ready(m, "RDMA shared config ConfigMap not readable");
        return 0;
}

int rdma_configmap_new(struct agent *a, struct kube_http *http, const char *ref,
                       struct rdma_configmap **ret)
{
        const char *slash = strchr(ref, '/');
        char ns[64]; /* a namespace's name is a DNS label: at most 63 characters */

        if (!slash || slash == ref || !slash[1] || strchr(slash + 1, '/') ||
            (size_t)(slash - ref) >= sizeof(ns))
                return log_error_errno(
                    -EINVAL, "--rdma-shared-configmap: \"%s\" is not NAMESPACE/NAME", ref);
        memcpy(ns, ref, (size_t)(slash - ref));
        ns[slash - ref] = 0;

        _cleanup_(rdma_configmap_freep) struct rdma_configmap *m = calloc(1, sizeof(*m));
        _cleanup_free_ char *path = NULL, *selector = NULL, *escaped = NULL;
        if (!m)
                return -ENOMEM;
        m->agent = a;
        m->name = strdup(slash + 1);
        escaped = kube_http_escape(ns);
        if (!m->name || !escaped)
                /* cppcheck-suppress memleak ; _cleanup_ frees it */
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees them */
                return -ENOMEM;
        /* asprintf() leaves its pointer undefined on failure: the cleanups must see NULL */
        if (asprintf(&m->origin, "ConfigMap %s key %s", ref, RDMA_CONFIGMAP_KEY) < 0)
                m->origin = NULL;
        if (asprintf(&path, "/api/v1/namespaces/%s/configmaps", escaped) < 0)
                path = NULL;
        if (asprintf(&selector, "metadata.name=%s", m->name) < 0)
                selector = NULL;
        if (!m->origin || !path || !selector)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees them */
                return -ENOMEM;
        const struct kube_informer_opts opts = {
                .kind = "ConfigMap",
                .path = path,
                .field_selector = selector,
                .callbacks = { on_added, on_updated, on_deleted, m },
                .on_synced = on_synced,
                .synced_userdata = m,
        };
        int r = kube_informer_new(http, &opts, &m->informer);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(a->event, &m->wait, CLOCK_MONOTONIC,
                                       RDMA_CONFIGMAP_WAIT_USEC, 100 * 1000, on_wait_over, m);
        if (r < 0)
                return r;
        r = kube_informer_start(m->informer);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

struct rdma_configmap *rdma_configmap_free(struct rdma_configmap *m)
{
        if (!m)
                return NULL;
        kube_informer_free(m->informer);
        sd_event_source_disable_unref(m->wait);
        free(m->name);
        free(m->origin);
        free(m->ignored_data);
        free(m);
        return NULL;
}

bool rdma_configmap_ready(const struct rdma_configmap *m)
{
        return !m || m->ready;
}

const char *rdma_configmap_origin(const struct rdma_configmap *m)
{
        return m ? m->origin : NULL;
}
