/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's DRA driver: which resources it serves (--dra-resources) and the plugin that
 * registers with the kubelet. A resource named there is cut out of the device-plugin pools
 * on every reconcile (agent_dra_take_pools), so a device is offered through one path only. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "deviceplugin/allocate.h"
#include "deviceplugin/podresources.h"
#include "deviceplugin/pool.h"
#include "dra/claim.h"
#include "dra/plugin.h"
#include "dra/slices.h"
#include "kube/cluster.h"
#include "kube/events.h"
#include "kube/nodestate.h"
#include "kube/resource-slices.h"
#include "util/clock.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/names.h"
#include "util/strv.h"

int agent_dra_parse_resources(const char *list, char ***ret, size_t *n)
{
        for (const char *p = list; p && *p;) {
                size_t len = strcspn(p, ",");
                char name[RESOURCE_NAME_MAX];
                if (len == 0 || len >= sizeof(name)) {
                        log_error("--dra-resources: empty or too long resource name in \"%s\"",
                                  list);
                        return -EINVAL;
                }
                memcpy(name, p, len);
                name[len] = 0;
                if (!resource_name_is_valid(name)) {
                        log_error("--dra-resources: \"%s\" is not a valid resourceName", name);
                        return -EINVAL;
                }
                if (!strv_contains(*ret, *n, name) && strv_push_dup(ret, n, name) < 0)
                        return -ENOMEM;
                p += len + (p[len] == ',');
        }
        return 0;
}

/* ---- Prepare: the claim's allocation, read from the API server, becomes a CDI spec ---- */

struct claim_read {
        struct prepare_job *job;
        size_t index;
        struct kube_request *request; /* the claim's read, then its status write */
        uint64_t started_usec;        /* CLOCK_MONOTONIC, for the debug log's timings */
        /* After a successful Prepare: the claim as read (its status.devices to be written)
         * and our devices' entries ([{pool, device, message}]), until written. */
        json_t *claim, *status_devices;
        char *ns, *name;
        unsigned attempts;
};

/* A NodePrepareResources call: answered (req NULL afterwards) when every claim is read; kept
 * until the claims' status writes are done too, which the answer does not wait for. */
struct prepare_job {
        struct agent *agent;
        struct dra_prepare *req;
        struct claim_read *reads;
        size_t n_reads;
        size_t pending; /* reads */
        size_t writing; /* status writes */
        struct prepare_job *next;
};

static int set_error(struct dra_claim_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int set_error(struct dra_claim_result *r, const char *fmt, ...)
{
        va_list ap;
        dra_claim_result_done(r);
        va_start(ap, fmt);
        if (vasprintf(&r->error, fmt, ap) < 0)
                r->error = NULL;
        va_end(ap);
        return -EINVAL;
}

static int path_in(const char *dir, const char *uid, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s/" DRA_DRIVER_NAME_DEFAULT "-%s.json", dir, uid);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static const char *cdi_root(const struct agent *a)
{
        return a->config.cdi_root ?: "/var/run/cdi";
}

static int record_dir(const struct agent *a, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s/dra", a->config.state_dir ?: "/var/lib/sriov-agent");
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The answer and the CDI spec of a prepared claim, kept in the state dir so that Prepare is
 * answered the same after an agent restart (and the CDI spec written again after a reboot
 * emptied /var/run). */
static int write_json_file(const char *dir, const char *uid, json_t *obj)
{
        char path[4096];
        int r = mkdir_p(dir);
        if (r >= 0)
                r = path_in(dir, uid, path, sizeof(path));
        _cleanup_free_ char *text = r >= 0 ? json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if (r >= 0 && !text)
                r = -ENOMEM;
        return r < 0 ? r : write_file_atomic(path, text, strlen(text), 0644);
}

static int result_from_record(json_t *record, struct dra_claim_result *res)
{
        json_t *devs = json_object_get(record, "devices");
        res->devices = calloc(json_array_size(devs) ?: 1, sizeof(*res->devices));
        if (!res->devices)
                return -ENOMEM;
        size_t i;
        json_t *d;
        json_array_foreach(devs, i, d)
        {
                struct dra_prepared_device *p = &res->devices[res->n_devices++];
                p->pool = strdup(json_string_value(json_object_get(d, "pool")) ?: "");
                p->device = strdup(json_string_value(json_object_get(d, "device")) ?: "");
                if (!p->pool || !p->device ||
                    strv_push_dup(&p->request_names, &p->n_request_names,
                                  json_string_value(json_object_get(d, "request")) ?: "") < 0 ||
                    strv_push_dup(&p->cdi_ids, &p->n_cdi_ids,
                                  json_string_value(json_object_get(d, "cdi")) ?: "") < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* A claim prepared before (by this or an earlier run): answered from its record. 1 when it
 * was, 0 when there is none. */
static int prepare_from_record(struct agent *a, const struct dra_claim *c,
                               struct dra_claim_result *res)
{
        char dir[4096], path[4096];
        if (record_dir(a, dir, sizeof(dir)) < 0 || path_in(dir, c->uid, path, sizeof(path)) < 0)
                return 0;
        json_auto_t *record = json_load_file(path, 0, NULL);
        if (!record)
                return 0;
        if (result_from_record(record, res) < 0)
                return set_error(res, "out of memory");
        char cdi[4096];
        if (path_in(cdi_root(a), c->uid, cdi, sizeof(cdi)) >= 0 && access(cdi, F_OK) < 0) {
                int r = write_json_file(cdi_root(a), c->uid, json_object_get(record, "cdi"));
                if (r < 0)
                        return set_error(res, "cannot write the CDI spec in %s: %s", cdi_root(a),
                                         strerror(-r));
        }
        return 1;
}

static const struct dp_pool *find_device(const struct agent *a, const char *name,
                                         const struct dp_device **ret)
{
        for (size_t i = 0; i < a->dra_pools.n_pools; i++) {
                const struct dp_pool *p = &a->dra_pools.pools[i];
                bool sriov = p->kind == DP_POOL_SRIOV;
                const struct dp_device *list = sriov ? p->devices : p->cards;
                size_t n = sriov ? p->n_devices : p->n_cards;
                for (size_t j = 0; j < n; j++) {
                        char dn[PCI_ADDR_MAX];
                        dra_device_name(list[j].id, dn);
                        if (strcmp(dn, name) == 0) {
                                *ret = &list[j];
                                return p;
                        }
                }
        }
        return NULL;
}

/* A VF's allocation as the device plugin gives it; a whole card's as dp_allocate_cards(). */
static int allocate(const struct dp_pool *pool, char *const *ids, size_t n,
                    struct dp_container_allocation *ret, struct grpc_status *st)
{
        if (!pool) /* find_device() found every device before this is called */
                return grpc_fail(st, GRPC_STATUS_INTERNAL, "no pool");
        return pool->kind == DP_POOL_RDMA_SHARED ? dp_allocate_cards(pool, ids, n, ret, st)
                                                 : dp_allocate_container(pool, ids, n, ret, st);
}

/* What a claim's VfConfig asks that the agent can do (addVhostMount; the driver the policy
 * already binds), or why not: a per-claim error naming the field. The VF's driver, MTU and
 * network are the policy's and the NetworkAttachmentDefinition's; the agent never reconfigures
 * a VF per claim, and never prepares a claim while ignoring what its configuration asks. */
static int check_config(struct dra_claim_result *res, const struct dra_allocated *al,
                        const struct dp_pool *pool, const struct dra_vf_config *cfg)
{
        if (cfg->if_name)
                return set_error(res,
                                 "device %s (request %s): VfConfig ifName \"%s\" cannot be "
                                 "applied: the agent does not attach the VF itself; the CNI "
                                 "plugin does, under the interface name the pod's network "
                                 "(k8s.v1.cni.cncf.io/networks \"interface\") gives",
                                 al->device, al->request, cfg->if_name);
        if (cfg->nad_name || cfg->nad_namespace)
                return set_error(res,
                                 "device %s (request %s): VfConfig %s cannot be applied: the "
                                 "pod's k8s.v1.cni.cncf.io/networks annotation names the "
                                 "NetworkAttachmentDefinition, the agent does not run the CNI "
                                 "itself",
                                 al->device, al->request,
                                 cfg->nad_name ? "netAttachDefName" : "netAttachDefNamespace");
        if (cfg->driver && *cfg->driver) {
                bool vfio =
                    pool->kind == DP_POOL_SRIOV && pool->device_type == DEVICE_TYPE_VFIO_PCI;
                if (!vfio || strcmp(cfg->driver, "vfio-pci") != 0)
                        return set_error(res,
                                         "device %s (request %s): VfConfig driver \"%s\" cannot "
                                         "be applied: resource %s binds its VFs to %s by policy "
                                         "and the agent does not rebind a VF per claim",
                                         al->device, al->request, cfg->driver, pool->resource,
                                         vfio ? "vfio-pci" : "their netdevice driver");
        }
        return 0;
}

/* Turns the claim's allocation into a CDI spec, its record and the answer. On success *status
 * holds our devices' entries for the claim's status.devices. */
static void prepare_from_claim(struct agent *a, const struct dra_claim *c, json_t *claim,
                               struct dra_claim_result *res, json_t **status)
{
        _cleanup_free_ char *error = NULL;
        struct dra_allocated *al = NULL;
        size_t n = 0;
        int r = dra_claim_allocated(claim, c->uid, DRA_DRIVER_NAME_DEFAULT, a->config.node_name,
                                    &al, &n, &error);
        if (r < 0) {
                set_error(res, "%s", error ?: "out of memory");
                return;
        }
        const struct dp_pool **pools = calloc(n ?: 1, sizeof(*pools));
        const struct dp_device **dps = calloc(n ?: 1, sizeof(*dps));
        struct dp_container_allocation *own = calloc(n ?: 1, sizeof(*own));
        struct dp_container_allocation *per_pool = calloc(n ?: 1, sizeof(*per_pool));
        struct dra_cdi_device *cdevs = calloc(n ?: 1, sizeof(*cdevs));
        char **ids = calloc(n ?: 1, sizeof(*ids));
        json_t *record_devs = json_array(), *status_devs = json_array();
        struct grpc_status st = { 0 };
        r = 0;
        if (!pools || !dps || !own || !per_pool || !cdevs || !ids || !record_devs || !status_devs) {
                (void)set_error(res, "out of memory");
                r = -ENOMEM;
        }
        for (size_t i = 0; r == 0 && i < n; i++) {
                pools[i] = find_device(a, al[i].device, &dps[i]);
                if (!pools[i]) {
                        r = set_error(res,
                                      "device %s (request %s) is not a VF or card this node "
                                      "serves through DRA",
                                      al[i].device, al[i].request);
                        break;
                }
                struct dra_vf_config cfg = { 0 };
                _cleanup_free_ char *cfg_error = NULL;
                r = dra_claim_vf_config(claim, DRA_DRIVER_NAME_DEFAULT, al[i].request, &cfg,
                                        &cfg_error);
                if (r < 0) {
                        set_error(res, "request %s: %s", al[i].request,
                                  cfg_error ?: "out of memory");
                        break;
                }
                r = check_config(res, &al[i], pools[i], &cfg);
                bool vhost = cfg.add_vhost_mount;
                dra_vf_config_done(&cfg);
                if (r < 0)
                        break;
                ids[i] = (char *)dps[i]->id;
                if (allocate(pools[i], &ids[i], 1, &own[i], &st) != GRPC_STATUS_OK)
                        r = set_error(res, "device %s: %s", al[i].device, st.message);
                cdevs[i] = (struct dra_cdi_device){ .name = al[i].device,
                                                    .pci = dps[i]->id,
                                                    .rdma_device = dps[i]->rdma_device,
                                                    .own = &own[i],
                                                    .vhost = vhost };
        }
        /* Per pool, every device of the claim in it, for the PCIDEVICE_* variables. */
        for (size_t i = 0; r == 0 && i < n; i++) {
                size_t k = 0;
                for (size_t j = 0; j < n; j++)
                        if (pools[j] == pools[i])
                                k++;
                _cleanup_free_ char **group = calloc(k, sizeof(*group));
                if (!group) {
                        r = set_error(res, "out of memory");
                        break;
                }
                k = 0;
                for (size_t j = 0; j < n; j++)
                        if (pools[j] == pools[i])
                                group[k++] = ids[j];
                if (allocate(pools[i], group, k, &per_pool[i], &st) != GRPC_STATUS_OK) {
                        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees group */
                        r = set_error(res, "%s", st.message);
                }
                cdevs[i].pool = &per_pool[i];
        }
        json_auto_t *cdi = r == 0 ? dra_cdi_spec(DRA_DRIVER_NAME_DEFAULT, c->uid, cdevs, n) : NULL;
        if (r == 0 && !cdi)
                r = set_error(res, "out of memory");
        if (r == 0) {
                res->devices = calloc(n ?: 1, sizeof(*res->devices));
                if (!res->devices)
                        r = set_error(res, "out of memory");
        }
        for (size_t i = 0; r == 0 && i < n; i++) {
                char id[512], msg[1024];
                struct dra_prepared_device *p = &res->devices[res->n_devices++];
                p->pool = strdup(a->config.node_name);
                p->device = strdup(al[i].device);
                snprintf(msg, sizeof(msg), "%s %.64s of %.320s prepared on node %.253s",
                         pools[i]->kind == DP_POOL_SRIOV ? "VF" : "card", dps[i]->id,
                         pools[i]->resource, a->config.node_name);
                if (dra_cdi_device_id(DRA_DRIVER_NAME_DEFAULT, c->uid, al[i].device, id,
                                      sizeof(id)) < 0 ||
                    !p->pool || !p->device ||
                    strv_push_dup(&p->request_names, &p->n_request_names, al[i].request) < 0 ||
                    strv_push_dup(&p->cdi_ids, &p->n_cdi_ids, id) < 0 ||
                    json_array_append_new(record_devs,
                                          json_pack("{s:s,s:s,s:s,s:s}", "request", al[i].request,
                                                    "pool", a->config.node_name, "device",
                                                    al[i].device, "cdi", id)) < 0 ||
                    json_array_append_new(status_devs,
                                          json_pack("{s:s,s:s,s:s}", "pool", a->config.node_name,
                                                    "device", al[i].device, "message", msg)) < 0)
                        r = set_error(res, "out of memory");
        }
        char dir[4096];
        if (r == 0) {
                r = write_json_file(cdi_root(a), c->uid, cdi);
                if (r < 0)
                        r = set_error(res, "cannot write the CDI spec in %s: %s", cdi_root(a),
                                      strerror(-r));
        }
        if (r == 0) {
                /* The claim's namespace and the pods it is reserved for: the CNI plugin hands a
                 * prepared VF to those pods only (agent/cni/dra-owner.c). */
                json_t *pods = dra_claim_reserved_pods(claim);
                json_auto_t *record =
                    pods ? json_pack("{s:s,s:s,s:s,s:o,s:O,s:O}", "namespace", c->namespace_,
                                     "name", c->name, "uid", c->uid, "reservedFor", pods, "devices",
                                     record_devs, "cdi", cdi)
                         : NULL;
                r = record_dir(a, dir, sizeof(dir));
                if (r >= 0)
                        r = record ? write_json_file(dir, c->uid, record) : -ENOMEM;
                if (r < 0)
                        (void)set_error(res, "cannot record the prepared claim in %s: %s", dir,
                                        strerror(-r));
        }
        if (r == 0)
                *status = json_incref(status_devs);
        for (size_t i = 0; i < n && own && per_pool; i++) {
                dp_container_allocation_done(&own[i]);
                dp_container_allocation_done(&per_pool[i]);
        }
        json_decref(record_devs);
        json_decref(status_devs);
        free(pools);
        free(dps);
        free(own);
        free(per_pool);
        free(cdevs);
        free(ids);
        dra_allocated_free(al, n);
}

static void read_done(struct claim_read *rd)
{
        json_decref(TAKE_PTR(rd->claim));
        json_decref(TAKE_PTR(rd->status_devices));
        free(TAKE_PTR(rd->ns));
        free(TAKE_PTR(rd->name));
}

/* Frees the job once answered and its status writes are over. */
static void job_release(struct prepare_job *job)
{
        if (job->req || job->writing)
                return;
        struct agent *a = job->agent;
        for (struct prepare_job **pp = &a->dra_jobs; *pp; pp = &(*pp)->next)
                if (*pp == job) {
                        *pp = job->next;
                        break;
                }
        for (size_t i = 0; i < job->n_reads; i++)
                read_done(&job->reads[i]);
        free(job->reads);
        free(job);
}

static void job_answer(struct prepare_job *job)
{
        dra_prepare_done(job->req);
        job->req = NULL;
        job_release(job);
}

/* ---- ResourceClaim status.devices: what was prepared, written after the answer ---- */

#define STATUS_WRITE_ATTEMPTS 3

static void status_write_start(struct claim_read *rd);

static void status_write_end(struct claim_read *rd)
{
        struct prepare_job *job = rd->job;
        rd->request = NULL;
        read_done(rd);
        job->writing--;
        job_release(job);
}

static void status_reread_done(struct kube_request *request, int error, long status,
                               const char *body, size_t body_len, void *userdata)
{
        struct claim_read *rd = userdata;
        rd->request = NULL;
        json_t *claim = error == 0 && status == 200 ? json_loadb(body, body_len, 0, NULL) : NULL;
        if (!claim) {
                log_warning("DRA: ResourceClaim %s/%s: cannot read it again to write its "
                            "status.devices (HTTP %ld)",
                            rd->ns, rd->name, status);
                return status_write_end(rd);
        }
        json_decref(rd->claim);
        rd->claim = claim;
        status_write_start(rd);
}

static void status_write_done(struct kube_request *request, int error, long status,
                              const char *body, size_t body_len, void *userdata)
{
        struct claim_read *rd = userdata;
        rd->request = NULL;
        if (error == 0 && status == 200) {
                log_debug("DRA: ResourceClaim %s/%s: status.devices written", rd->ns, rd->name);
                return status_write_end(rd);
        }
        if (error == 0 && status == 409 && rd->attempts < STATUS_WRITE_ATTEMPTS) {
                /* Someone else (the scheduler, another driver) wrote it meanwhile: again,
                 * from what is there now. */
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s",
                             rd->ns, rd->name) >= 0) {
                        const struct kube_request_opts opts = { .path = path,
                                                                .on_done = status_reread_done,
                                                                .userdata = rd,
                                                                .timeout_s = 10 };
                        if (kube_http_start(kube_cluster_http(rd->job->agent->cluster), &opts,
                                            &rd->request) >= 0)
                                return;
                }
        }
        /* The claim stays prepared: the status is what users read, not what the pod needs. */
        log_warning("DRA: ResourceClaim %s/%s: cannot write status.devices (HTTP %ld%s%.200s)%s",
                    rd->ns, rd->name, status, body && *body ? ": " : "", body ?: "",
                    status == 403 ? "; the agent's ClusterRole needs: apiGroups "
                                    "[resource.k8s.io], resources [resourceclaims/status], "
                                    "verbs [update] (docs/dra.md)"
                                  : "");
        status_write_end(rd);
}

/* PUT .../resourceclaims/<name>/status with the claim as read and our devices' entries set
 * (the whole list: other drivers' entries kept as they are; a 409 reads it again). */
static void status_write_start(struct claim_read *rd)
{
        struct agent *a = rd->job->agent;
        size_t n = json_array_size(rd->status_devices);
        _cleanup_free_ struct dra_status_device *devs = calloc(n ?: 1, sizeof(*devs));
        _cleanup_free_ char *path = NULL;
        char now[32];
        time_t t = time(NULL);
        struct tm tm;
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
        if (!devs)
                return status_write_end(rd);
        for (size_t i = 0; i < n; i++) {
                json_t *d = json_array_get(rd->status_devices, i);
                devs[i] = (struct dra_status_device){
                        .pool = json_string_value(json_object_get(d, "pool")) ?: "",
                        .device = json_string_value(json_object_get(d, "device")) ?: "",
                        .message = json_string_value(json_object_get(d, "message")),
                };
        }
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees devs */
        json_t *list = dra_claim_status_devices(rd->claim, DRA_DRIVER_NAME_DEFAULT, devs, n, now);
        json_t *st = json_object_get(rd->claim, "status");
        if (!list || !json_is_object(st) || json_object_set_new(st, "devices", list) < 0 ||
            asprintf(&path, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s/status",
                     rd->ns, rd->name) < 0) {
                path = NULL;
                return status_write_end(rd);
        }
        rd->attempts++;
        const struct kube_request_opts opts = { .method = "PUT",
                                                .path = path,
                                                .content_type = "application/json",
                                                .on_done = status_write_done,
                                                .userdata = rd,
                                                .timeout_s = 10 };
        if (kube_http_start_json(kube_cluster_http(a->cluster), &opts, rd->claim, &rd->request) < 0)
                status_write_end(rd);
}

static void claim_read_done(struct kube_request *request, int error, long status, const char *body,
                            size_t body_len, void *userdata)
{
        struct claim_read *rd = userdata;
        struct prepare_job *job = rd->job;
        rd->request = NULL;
        const struct dra_claim *c = dra_prepare_claim(job->req, rd->index);
        struct dra_claim_result *res = dra_prepare_result(job->req, rd->index);
        json_auto_t *claim =
            error == 0 && status == 200 ? json_loadb(body, body_len, 0, NULL) : NULL;
        if (claim) {
                uint64_t read = clock_monotonic_usec();
                json_t *status_devs = NULL;
                prepare_from_claim(job->agent, c, claim, res, &status_devs);
                /* The preparation's own time apart from the claim's read (bench/dra-prepare.py
                 * reads both). */
                if (!res->error)
                        log_debug("DRA: claim %s/%s read in %llu us, then prepared (CDI spec and "
                                  "record written) in %llu us",
                                  c->namespace_, c->name,
                                  (unsigned long long)(read - rd->started_usec),
                                  (unsigned long long)(clock_monotonic_usec() - read));
                if (status_devs) {
                        rd->claim = json_incref(claim);
                        rd->status_devices = status_devs;
                        rd->ns = kube_http_escape(c->namespace_);
                        rd->name = kube_http_escape(c->name);
                        if (rd->ns && rd->name && json_array_size(status_devs)) {
                                job->writing++;
                                status_write_start(rd);
                        } else
                                read_done(rd);
                }
        } else if (status == 404)
                set_error(res, "ResourceClaim %s/%s not found", c->namespace_, c->name);
        else
                set_error(res, "cannot read ResourceClaim %s/%s: %s", c->namespace_, c->name,
                          error    ? strerror(-error)
                          : status ? "unexpected answer"
                                   : "no answer");
        if (--job->pending == 0)
                job_answer(job);
}

static void prepare(void *userdata, struct dra_prepare *req)
{
        struct agent *a = userdata;
        size_t n = dra_prepare_n_claims(req);
        struct prepare_job *job = calloc(1, sizeof(*job));
        struct claim_read *reads = calloc(n ?: 1, sizeof(*reads));
        if (!job || !reads) {
                for (size_t i = 0; i < n; i++)
                        set_error(dra_prepare_result(req, i), "out of memory");
                free(job);
                free(reads);
                dra_prepare_done(req);
                return;
        }
        *job = (struct prepare_job){
                .agent = a, .req = req, .reads = reads, .n_reads = n, .pending = 1
        };
        job->next = a->dra_jobs;
        a->dra_jobs = job;
        for (size_t i = 0; i < n; i++) {
                const struct dra_claim *c = dra_prepare_claim(req, i);
                struct dra_claim_result *res = dra_prepare_result(req, i);
                if (!c->uid || !filename_is_valid(c->uid) || !c->name || !*c->name ||
                    !c->namespace_ || !*c->namespace_) {
                        set_error(res, "claim without a valid namespace, name and uid");
                        continue;
                }
                if (prepare_from_record(a, c, res) != 0)
                        continue;
                if (!a->cluster) {
                        set_error(res,
                                  "claim %s/%s: no API server to read it from "
                                  "(standalone mode)",
                                  c->namespace_, c->name);
                        continue;
                }
                _cleanup_free_ char *ns = kube_http_escape(c->namespace_),
                                    *name = kube_http_escape(c->name), *path = NULL;
                if (!ns || !name ||
                    asprintf(&path, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s", ns,
                             name) < 0) {
                        path = NULL;
                        set_error(res, "out of memory");
                        continue;
                }
                reads[i] = (struct claim_read){ .job = job,
                                                .index = i,
                                                .started_usec = clock_monotonic_usec() };
                const struct kube_request_opts opts = {
                        .path = path,
                        .on_done = claim_read_done,
                        .userdata = &reads[i],
                        .timeout_s = 10,
                };
                int r = kube_http_start(kube_cluster_http(a->cluster), &opts, &reads[i].request);
                if (r < 0)
                        set_error(res, "cannot read ResourceClaim %s/%s: %s", c->namespace_,
                                  c->name, strerror(-r));
                else
                        job->pending++;
        }
        if (--job->pending == 0)
                job_answer(job);
}

static char *unprepare(void *userdata, const struct dra_claim *claim)
{
        struct agent *a = userdata;
        char *error = NULL;
        if (!claim->uid || !filename_is_valid(claim->uid))
                return strdup("claim without a valid uid");
        char dir[4096], path[4096];
        if (path_in(cdi_root(a), claim->uid, path, sizeof(path)) >= 0 && unlink(path) < 0 &&
            errno != ENOENT && asprintf(&error, "cannot remove %s: %m", path) < 0)
                error = NULL;
        /* The record goes last: while it exists, Prepare and Unprepare can both be redone. */
        if (!error && record_dir(a, dir, sizeof(dir)) >= 0 &&
            path_in(dir, claim->uid, path, sizeof(path)) >= 0 && unlink(path) < 0 &&
            errno != ENOENT && asprintf(&error, "cannot remove %s: %m", path) < 0)
                error = NULL;
        return error;
}

/* Slices are written only while the kubelet has the driver registered: before, the scheduler
 * would place pods on devices no kubelet can prepare, and after it lost the driver it wipes
 * them itself (wipingDelay). A registration (also a restarted kubelet's, which wiped every
 * slice of the node at its start) makes the publisher list the server's slices and write
 * them again. */
static void on_registration(void *userdata, bool registered)
{
        struct agent *a = userdata;
        if (a->slices)
                kube_slices_set_paused(a->slices, !registered);
}

static const struct dra_handlers agent_dra_handlers = { .prepare = prepare,
                                                        .unprepare = unprepare,
                                                        .registration = on_registration };

int agent_dra_start(struct agent *a)
{
        if (a->n_dra_resources == 0)
                return 0;
        const struct dra_plugin_options opts = {
                .kubelet_root = a->config.kubelet_root,
                .handlers = &agent_dra_handlers,
                .userdata = a,
        };
        int r = dra_plugin_new(a->event, &opts, &a->dra);
        if (r < 0)
                return log_error_errno(r, "cannot start the DRA driver (kubelet root %s)",
                                       a->config.kubelet_root ?: DRA_KUBELET_ROOT_DEFAULT);
        return 0;
}

/* The same link health the device plugin reports (a VF whose PF link is down is unhealthy),
 * for the kubelet's DRAResourceHealth stream. */
static int report_health(struct agent *a)
{
        size_t n = 0, k = 0;
        for (size_t i = 0; i < a->dra_pools.n_pools; i++)
                n += a->dra_pools.pools[i].kind == DP_POOL_SRIOV ? a->dra_pools.pools[i].n_devices
                                                                 : a->dra_pools.pools[i].n_cards;
        _cleanup_free_ struct dra_device_health *list = calloc(n ?: 1, sizeof(*list));
        _cleanup_free_ char(*names)[PCI_ADDR_MAX] = calloc(n ?: 1, sizeof(*names));
        if (!list || !names)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees them */
                return -ENOMEM;
        for (size_t i = 0; i < a->dra_pools.n_pools; i++) {
                const struct dp_pool *p = &a->dra_pools.pools[i];
                bool sriov = p->kind == DP_POOL_SRIOV;
                const struct dp_device *devs = sriov ? p->devices : p->cards;
                size_t count = sriov ? p->n_devices : p->n_cards;
                for (size_t j = 0; j < count; j++, k++) {
                        dra_device_name(devs[j].id, names[k]);
                        list[k] = (struct dra_device_health){
                                .device = names[k],
                                .healthy = devs[j].healthy,
                                .message = devs[j].healthy ? NULL
                                           : sriov         ? "the PF's link is down"
                                                           : "the card's link or port is down",
                        };
                }
        }
        int r = dra_plugin_set_health(a->dra, a->config.node_name ?: "node", list, k);
        return r < 0 ? r : 0;
}

int agent_dra_take_pools(struct agent *a, struct dp_pool_set *pools)
{
        struct dp_pool_set dra = { 0 };
        int r = dp_pool_set_split(pools, a->dra_resources, a->n_dra_resources, &dra);
        if (r < 0)
                return r;
        dp_pool_set_done(&a->dra_pools);
        a->dra_pools = dra;
        return a->dra ? report_health(a) : 0;
}

int agent_dra_publisher_new(struct agent *a)
{
        int r = kube_slices_new(kube_cluster_http(a->cluster), a->config.node_name,
                                DRA_DRIVER_NAME_DEFAULT, &a->slices);
        if (r < 0)
                return log_error_errno(r, "cannot set up the ResourceSlice publisher");
        if (a->n_dra_resources > 0)
                kube_slices_set_paused(a->slices, !a->dra || !dra_plugin_is_registered(a->dra));
        if (a->n_dra_resources == 0) {
                /* DRA off: slices a previous run published for this node must go. */
                json_t *none = json_array();
                r = none ? kube_slices_set(a->slices, none) : -ENOMEM;
                json_decref(none);
        }
        return r;
}

static bool same_usage(const struct dp_usage *x, const struct dp_usage *y)
{
        if (x->n_resources != y->n_resources)
                return false;
        for (size_t i = 0; i < x->n_resources; i++) {
                const struct dp_resource_usage *u = &x->resources[i];
                const struct dp_resource_usage *v = dp_usage_find(y, u->resource);
                if (!v || v->n_ids != u->n_ids)
                        return false;
                for (size_t j = 0; j < u->n_ids; j++)
                        if (!dp_usage_in_use(y, u->resource, u->ids[j]))
                                return false;
        }
        return true;
}

/* How long ResourceSlices wait for the kubelet's first PodResources answer, and how often it
 * is asked meanwhile. Until the kubelet has said which VFs pods hold through the device
 * plugin, a slice could offer one of them (after an agent start, or a resource just moved to
 * DRA with pods running), and the scheduler could give it to a claim: nothing is published
 * (slices a previous run left stay as they are). A kubelet serves PodResources within seconds
 * of its start; one that has not answered for a minute is missing (no kubelet here yet, the
 * socket not mounted into the agent's container) rather than slow, and waiting for ever
 * would keep DRA off on that node for good. So after DRA_HELD_WAIT_USEC the slices are
 * published with what is known (a warning says so), and the kubelet's first answer still takes
 * the VFs it names out at once. --pod-resources-socket none (no kubelet on this host) has
 * nothing to wait for. */
#define DRA_HELD_WAIT_USEC  (60 * 1000000ULL)
#define DRA_HELD_RETRY_USEC (2 * 1000000ULL)
/* A second ask may come a little late; coalesced with other wake-ups. */
#define DRA_HELD_RETRY_ACCURACY_USEC (200 * 1000ULL)

static bool no_kubelet_to_ask(const struct agent *a)
{
        const char *sock = a->config.pod_resources_socket;
        return !sock || !*sock || strcmp(sock, "none") == 0;
}

/* What pods hold through the device plugin. A resource moved to DRA while pods use it keeps
 * those VFs out of the slices until the pods end: the kubelet still has them assigned. A
 * kubelet that cannot be asked changes nothing (the last answer stands). */
static void on_held(void *userdata, int error, const char *message, const struct dp_usage *usage)
{
        struct agent *a = userdata;
        a->dra_held_call = NULL;
        if (error < 0) {
                if (a->dra_held_known || a->dra_held_gave_up)
                        log_debug("DRA: cannot ask the kubelet which VFs pods hold: %s",
                                  message ?: strerror(-error));
                else
                        log_warning("DRA: cannot ask the kubelet which VFs pods hold (%s): %s; "
                                    "ResourceSlices wait for its answer, at most %llu s",
                                    a->config.pod_resources_socket, message ?: strerror(-error),
                                    DRA_HELD_WAIT_USEC / 1000000ULL);
                return;
        }
        struct dp_usage copy = { 0 };
        for (size_t i = 0; i < usage->n_resources; i++)
                for (size_t j = 0; j < usage->resources[i].n_ids; j++)
                        if (strv_contains(a->dra_resources, a->n_dra_resources,
                                          strchr(usage->resources[i].resource, '/')
                                              ? strchr(usage->resources[i].resource, '/') + 1
                                              : usage->resources[i].resource) &&
                            dp_usage_add(&copy, usage->resources[i].resource,
                                         usage->resources[i].ids[j]) < 0) {
                                dp_usage_done(&copy); /* asked again by the timer */
                                return;
                        }
        bool first = !a->dra_held_known;
        a->dra_held_known = true;
        a->dra_held_timer = sd_event_source_disable_unref(a->dra_held_timer);
        if (first) {
                size_t n = 0;
                for (size_t i = 0; i < copy.n_resources; i++)
                        n += copy.resources[i].n_ids;
                log_info("DRA: the kubelet says device-plugin pods hold %zu device(s) of DRA "
                         "resources; publishing ResourceSlices without them",
                         n);
        }
        if (!first && same_usage(&copy, &a->dra_held)) {
                dp_usage_done(&copy);
                return;
        }
        dp_usage_done(&a->dra_held);
        a->dra_held = copy;
        (void)agent_schedule_reconcile(a, first ? "the kubelet said which VFs pods hold (DRA)"
                                                : "VFs of a DRA resource held or freed by "
                                                  "device-plugin pods");
}

static void ask_held(struct agent *a);

/* Until the kubelet's first answer: asks again every DRA_HELD_RETRY_USEC, and publishes
 * without it once DRA_HELD_WAIT_USEC have passed (then reconciles ask on their own). */
static int on_held_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct agent *a = userdata;
        if (a->dra_held_known)
                return 0;
        if (usec >= a->dra_held_deadline) {
                a->dra_held_gave_up = true;
                a->dra_held_timer = sd_event_source_disable_unref(a->dra_held_timer);
                log_warning("DRA: the kubelet has not said which VFs pods hold within %llu s "
                            "(%s); publishing ResourceSlices without that: a VF a "
                            "device-plugin pod still holds may be offered until it answers",
                            DRA_HELD_WAIT_USEC / 1000000ULL, a->config.pod_resources_socket);
                (void)agent_schedule_reconcile(a, "no answer from the kubelet's PodResources "
                                                  "(DRA)");
                return 0;
        }
        ask_held(a);
        if (sd_event_source_set_time_relative(s, DRA_HELD_RETRY_USEC) < 0 ||
            sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) < 0)
                log_warning("DRA: cannot re-arm the PodResources retry timer; reconciles ask "
                            "instead");
        return 0;
}

static void ask_held(struct agent *a)
{
        if (no_kubelet_to_ask(a)) {
                a->dra_held_known = true;
                return;
        }
        if (!a->dra_held_known && !a->dra_held_gave_up && !a->dra_held_timer) {
                uint64_t now = 0;
                (void)sd_event_now(a->event, CLOCK_MONOTONIC, &now);
                a->dra_held_deadline = now + DRA_HELD_WAIT_USEC;
                int r = sd_event_add_time_relative(a->event, &a->dra_held_timer, CLOCK_MONOTONIC,
                                                   DRA_HELD_RETRY_USEC,
                                                   DRA_HELD_RETRY_ACCURACY_USEC, on_held_retry, a);
                if (r < 0) {
                        /* Without a timer nothing would ever end the wait. */
                        log_warning("DRA: cannot arm the PodResources timer: %s; publishing "
                                    "without waiting for the kubelet",
                                    strerror(-r));
                        a->dra_held_gave_up = true;
                } else {
                        log_info("DRA: ResourceSlices wait for the kubelet to say which VFs "
                                 "device-plugin pods hold (%s)",
                                 a->config.pod_resources_socket);
                }
        }
        if (a->dra_held_call)
                return;
        if (dp_podresources_list(a->event, a->config.pod_resources_socket, 2 * 1000000ULL, on_held,
                                 a, &a->dra_held_call) < 0)
                a->dra_held_call = NULL;
}

/* Resources left out of the slices because a device would break resource.k8s.io/v1's limits:
 * in the journal and a Warning Event on the NodeState when one appears or its reason changes,
 * and in the NodeState (a->dra_rejected, report.c) while it lasts. */
static bool json_array_has(const json_t *array, const json_t *value)
{
        size_t i;
        const json_t *e;
        json_array_foreach(array, i, e)
        {
                if (json_equal(e, value))
                        return true;
        }
        return false;
}

static void report_rejected(struct agent *a, json_t *rejected)
{
        size_t i;
        json_t *e;
        json_array_foreach(rejected, i, e)
        {
                if (!json_array_has(a->dra_rejected, e))
                        log_warning("DRA: resource %s left out of the ResourceSlices (every "
                                    "other resource is still published): %s",
                                    json_string_value(json_object_get(e, "resourceName")),
                                    json_string_value(json_object_get(e, "reason")));
        }
        if (json_array_size(a->dra_rejected) && !json_array_size(rejected))
                log_info("DRA: every DRA resource is published again");
        json_decref(a->dra_rejected);
        a->dra_rejected = json_array_size(rejected) ? json_incref(rejected) : NULL;

        struct kube_object_ref ref;
        json_t *obj = a->cluster ? kube_nodestate_object(kube_cluster_nodestate(a->cluster)) : NULL;
        if (!obj || kube_object_ref_from_json(obj, &ref) < 0)
                return; /* no NodeState yet: the next publication posts them */
        json_array_foreach(rejected, i, e)
        {
                if (json_array_has(a->dra_rejected_posted, e))
                        continue;
                char msg[1024];
                snprintf(msg, sizeof(msg), "DRA resource %s is not published as ResourceSlices: %s",
                         json_string_value(json_object_get(e, "resourceName")),
                         json_string_value(json_object_get(e, "reason")));
                kube_events_post(kube_cluster_events(a->cluster), &ref, "Warning",
                                 "DRAResourceRejected", msg);
        }
        json_decref(a->dra_rejected_posted);
        a->dra_rejected_posted = json_incref(rejected);
}

int agent_dra_publish(struct agent *a, const struct inventory *inv)
{
        if (!a->slices || a->n_dra_resources == 0)
                return 0;
        json_t *slices = NULL;
        ask_held(a); /* for the next publication, if pods' VFs changed */
        if (!a->dra_held_known && !a->dra_held_gave_up)
                return 0; /* on_held() or on_held_retry() reconciles again */
        json_auto_t *rejected = NULL;
        int r = dra_slices_build_checked(&a->dra_pools, inv, a->config.node_name,
                                         DRA_DRIVER_NAME_DEFAULT, &a->dra_held, &slices, &rejected);
        if (r < 0)
                return r;
        report_rejected(a, rejected);
        r = kube_slices_set(a->slices, slices);
        json_decref(slices);
        return r;
}

static void dra_drained(struct dra_plugin *p, void *userdata)
{
        struct agent *a = userdata;
        void (*fn)(void *) = a->dra_drained;
        a->dra_drained = NULL;
        if (fn)
                fn(a);
}

void agent_dra_drain(struct agent *a, uint64_t grace_usec, void (*done)(void *userdata))
{
        if (!a->dra) {
                done(a);
                return;
        }
        a->dra_drained = done;
        dra_plugin_drain(a->dra, grace_usec, dra_drained, a);
}

void agent_dra_stop(struct agent *a)
{
        /* Claims still being read: answered with an error now, before the HTTP client goes;
         * status writes still running are dropped (the claims stay prepared). */
        while (a->dra_jobs) {
                struct prepare_job *job = a->dra_jobs;
                a->dra_jobs = job->next; /* unlinked here: job_release() then finds nothing */
                job->next = NULL;
                for (size_t i = 0; i < job->n_reads; i++) {
                        if (!job->reads[i].request)
                                continue;
                        kube_request_cancel(job->reads[i].request);
                        job->reads[i].request = NULL;
                        if (job->req && !job->reads[i].status_devices)
                                set_error(dra_prepare_result(job->req, i), "the agent is stopping");
                }
                job->writing = 0;
                if (job->req)
                        dra_prepare_done(job->req);
                job->req = NULL;
                job_release(job);
        }
        a->slices = kube_slices_free(a->slices);
        dp_podresources_call_cancel(a->dra_held_call);
        a->dra_held_call = NULL;
        a->dra_held_timer = sd_event_source_disable_unref(a->dra_held_timer);
        dp_usage_done(&a->dra_held);
        json_decref(TAKE_PTR(a->dra_rejected));
        json_decref(TAKE_PTR(a->dra_rejected_posted));
        a->dra = dra_plugin_free(a->dra);
        dp_pool_set_done(&a->dra_pools);
        strv_free_n(a->dra_resources, a->n_dra_resources);
        a->dra_resources = NULL;
        a->n_dra_resources = 0;
}
