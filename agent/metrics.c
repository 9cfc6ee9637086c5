/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics endpoint's content: everything is read when Prometheus asks (counters from the
 * kernel, who holds which device from the kubelet), nothing between scrapes. A scrape first
 * needs the kubelet's PodResources answer (bounded by a 1 s deadline; the connection waits
 * suspended meanwhile, the loop goes on), then writes every family in one pass.
 *
 * The kubelet rate-limits PodResources for the whole node (100/s, burst 10) and refuses the
 * rest, the sriov CNI plugin's ownership checks included: scrapes share one List (single
 * flight), and its outcome serves every scrape for a second after the List started, so
 * scrapes cost the kubelet at most one List a second however many scrapers there are. */
#include <errno.h>
#include <linux/netlink.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "cni/state.h"
#include "deviceplugin/manager.h"
#include "deviceplugin/podresources.h"
#include "host/counters.h"
#include "host/discover.h"
#include "host/netlink-link.h"
#include "host/netlink-request.h"
#include "httpd/httpd.h"
#include "kube/cluster.h"
#include "kube/http.h"
#include "metrics-vf.h"
#include "metrics/exposition.h"
#include "plan/node-status.h"
#include "util/array.h"
#include "util/log.h"
#include "util/macro.h"

#define POD_RESOURCES_TIMEOUT_USEC      (1000 * 1000ULL)
#define POD_RESOURCES_MIN_INTERVAL_USEC (1000 * 1000ULL) /* scrapes: at most one List a second */
#define RDMA_MAX_COUNTERS_PER_PORT      256              /* mlx5 has ~100 hw_counters per port */

struct scrape {
        struct agent *agent;
        struct httpd_request *req;
        struct scrape *prev, *next; /* waiting for the List in flight */
};

/* The one PodResources List scrapes share, and its last outcome. */
struct metrics_podres {
        struct dp_podresources_call *call; /* in flight */
        struct scrape *waiting;
        uint64_t asked; /* CLOCK_MONOTONIC: when the last List started */
        bool have;      /* the last List has ended */
        bool ok;        /* ... with an answer, in usage */
        struct dp_usage usage;
};

/* RDMA ports, then their counters pointing back at them: the counters are most of the lines
 * (mlx5 has ~100 hw_counters per port), so they stay small. */
struct rdma_port_sample {
        const char *device; /* the inventory's: stable for the scrape */
        struct host_rdma_port port;
        char port_label[12]; /* port.port in decimal: written once, used by every sample */
};

struct rdma_counter_sample {
        uint32_t port; /* index in rdma_samples.ports */
        bool hw;
        char name[47];
        uint64_t value;
};

struct rdma_samples {
        struct agent *agent;
        size_t n_devices; /* read so far: the index of the next one's names in agent->rdma_names */
        const char *device;
        struct rdma_port_sample *ports;
        size_t n_ports, cap_ports;
        struct rdma_counter_sample *counters;
        size_t n_counters, cap_counters;
        int error;
};

static void on_rdma_port(const struct host_rdma_port *port, const char *counter, bool hw,
                         uint64_t value, void *userdata)
{
        struct rdma_samples *s = userdata;
        if (s->error)
                return;
        if (!counter) {
                if (GROW_ARRAY(s->ports, s->cap_ports, s->n_ports + 1) < 0) {
                        s->error = -ENOMEM;
                        return;
                }
                struct rdma_port_sample *x = &s->ports[s->n_ports++];
                *x = (struct rdma_port_sample){ .device = s->device, .port = *port };
                snprintf(x->port_label, sizeof(x->port_label), "%d", port->port);
                return;
        }
        if (s->n_ports == 0 || strlen(counter) >= sizeof(s->counters[0].name))
                return;
        if (GROW_ARRAY(s->counters, s->cap_counters, s->n_counters + 1) < 0) {
                s->error = -ENOMEM;
                return;
        }
        struct rdma_counter_sample *c = &s->counters[s->n_counters++];
        *c = (struct rdma_counter_sample){ .port = (uint32_t)(s->n_ports - 1),
                                           .hw = hw,
                                           .value = value };
        strcpy(c->name, counter);
}

static void write_build_and_process(struct metrics_writer *w)
{
        metrics_family(w, "sriov_agent_build_info", METRICS_GAUGE,
                       "The agent's version; always 1.");
        metrics_sample(w, "sriov_agent_build_info",
                       METRICS_LABELS({ "version", SRIOV_AGENT_VERSION }), 1);

        struct host_process_stats p;
        int r = host_process_read(&p);
        if (r < 0) {
                log_debug("metrics: cannot read the process's figures: %s", strerror(-r));
                return;
        }
        metrics_family(w, "process_cpu_seconds_total", METRICS_COUNTER,
                       "Total user and system CPU time spent in seconds.");
        metrics_sample(w, "process_cpu_seconds_total", METRICS_NO_LABELS, p.cpu_seconds);
        metrics_family(w, "process_resident_memory_bytes", METRICS_GAUGE,
                       "Resident memory size in bytes.");
        metrics_sample_u64(w, "process_resident_memory_bytes", METRICS_NO_LABELS, p.resident_bytes);
        metrics_family(w, "process_virtual_memory_bytes", METRICS_GAUGE,
                       "Virtual memory size in bytes.");
        metrics_sample_u64(w, "process_virtual_memory_bytes", METRICS_NO_LABELS, p.virtual_bytes);
        metrics_family(w, "process_open_fds", METRICS_GAUGE, "Number of open file descriptors.");
        metrics_sample_u64(w, "process_open_fds", METRICS_NO_LABELS, p.open_fds);
        metrics_family(w, "process_max_fds", METRICS_GAUGE,
                       "Maximum number of open file descriptors.");
        metrics_sample_u64(w, "process_max_fds", METRICS_NO_LABELS, p.max_fds);
        metrics_family(w, "process_start_time_seconds", METRICS_GAUGE,
                       "Start time of the process since unix epoch in seconds.");
        metrics_sample(w, "process_start_time_seconds", METRICS_NO_LABELS, p.start_time_seconds);
}

/* One rtnetlink socket for every PF of the scrape. */
static void write_vf_counters(struct metrics_writer *w, const struct inventory *inv)
{
        _cleanup_(host_nl_socket_freep) struct nl_sock *rtnl = NULL;
        int r = host_netlink_open(NETLINK_ROUTE, HOST_NETLINK_VF_LIST_RCVBUF, &rtnl);
        if (r >= 0)
                r = agent_metrics_write_vf_counters(w, inv, rtnl);
        if (r < 0)
                log_error_errno(r, "metrics: no VF counters this scrape");
}

/* The names kept for the scrape's next device (zeroed the first time: listed by the read). */
static struct host_rdma_names *next_rdma_names(struct rdma_samples *s)
{
        struct agent *a = s->agent;
        size_t i = s->n_devices++;
        if (i >= a->n_rdma_names) {
                if (GROW_ARRAY(a->rdma_names, a->cap_rdma_names, i + 1) < 0)
                        return NULL; /* listed this time, kept next time */
                /* from the first not yet zeroed: an earlier ENOMEM may have left a gap */
                for (size_t k = a->n_rdma_names; k <= i; k++)
                        a->rdma_names[k] = (struct host_rdma_names){ 0 };
                a->n_rdma_names = i + 1;
        }
        return &a->rdma_names[i];
}

static void add_rdma(struct rdma_samples *s, const char *sysfs_root, const struct rdma_device *d,
                     size_t n)
{
        for (size_t i = 0; i < n; i++) {
                s->device = d[i].name;
                (void)host_rdma_read_ports(sysfs_root, d[i].name, RDMA_MAX_COUNTERS_PER_PORT,
                                           next_rdma_names(s), on_rdma_port, s);
        }
}

static void drop_rdma_names(struct agent *a, size_t keep)
{
        for (size_t i = keep; i < a->n_rdma_names; i++)
                host_rdma_names_done(&a->rdma_names[i]);
        if (keep < a->n_rdma_names)
                a->n_rdma_names = keep;
        if (keep == 0) {
                free(a->rdma_names);
                a->rdma_names = NULL;
                a->cap_rdma_names = 0;
        }
}

static void write_rdma(struct metrics_writer *w, struct agent *a)
{
        const struct inventory *inv = &a->observed;
        const char *root = a->config.sysfs_root;
        struct rdma_samples s = { .agent = a };

        metrics_family(w, "sriov_rdma_device_info", METRICS_GAUGE,
                       "An RDMA device and the PCI function it belongs to (1); join on "
                       "pci_address with sriov_agent_pod_device.");
        for (size_t i = 0; i < inv->n_pfs; i++) {
                const struct pf_info *pf = &inv->pfs[i];
                for (size_t k = 0; k < pf->n_rdma; k++)
                        metrics_sample(w, "sriov_rdma_device_info",
                                       METRICS_LABELS({ "device", pf->rdma[k].name },
                                                      { "pci_address", pf->pci_address }),
                                       1);
                add_rdma(&s, root, pf->rdma, pf->n_rdma);
                for (size_t j = 0; j < pf->n_vfs; j++) {
                        const struct vf_info *vf = &pf->vfs[j];
                        for (size_t k = 0; k < vf->n_rdma; k++)
                                metrics_sample(w, "sriov_rdma_device_info",
                                               METRICS_LABELS({ "device", vf->rdma[k].name },
                                                              { "pci_address", vf->pci_address }),
                                               1);
                        add_rdma(&s, root, vf->rdma, vf->n_rdma);
                }
        }
        for (size_t i = 0; i < inv->n_rdma_nics; i++) {
                const struct pf_info *nic = &inv->rdma_nics[i];
                for (size_t k = 0; k < nic->n_rdma; k++)
                        metrics_sample(w, "sriov_rdma_device_info",
                                       METRICS_LABELS({ "device", nic->rdma[k].name },
                                                      { "pci_address", nic->pci_address }),
                                       1);
                add_rdma(&s, root, nic->rdma, nic->n_rdma);
        }

        metrics_family(w, "sriov_rdma_port_state", METRICS_GAUGE,
                       "Port state as sysfs numbers it (4 = ACTIVE), with its name.");
        for (size_t i = 0; i < s.n_ports; i++) {
                const struct rdma_port_sample *x = &s.ports[i];
                if (x->port.state_code >= 0)
                        metrics_sample(w, "sriov_rdma_port_state",
                                       METRICS_LABELS({ "device", x->device },
                                                      { "port", x->port_label },
                                                      { "state", x->port.state }),
                                       x->port.state_code);
        }
        metrics_family(w, "sriov_rdma_port_rate_bytes_per_second", METRICS_GAUGE,
                       "Port rate from sysfs ports/N/rate (100 Gb/sec: 12.5e9).");
        for (size_t i = 0; i < s.n_ports; i++) {
                const struct rdma_port_sample *x = &s.ports[i];
                if (x->port.rate_bps >= 0)
                        metrics_sample(
                            w, "sriov_rdma_port_rate_bytes_per_second",
                            METRICS_LABELS({ "device", x->device }, { "port", x->port_label }),
                            x->port.rate_bps / 8);
        }
        metrics_family(w, "sriov_rdma_port_link_width_info", METRICS_GAUGE,
                       "Port link width from sysfs ports/N/rate (1).");
        for (size_t i = 0; i < s.n_ports; i++) {
                const struct rdma_port_sample *x = &s.ports[i];
                if (x->port.width[0])
                        metrics_sample(w, "sriov_rdma_port_link_width_info",
                                       METRICS_LABELS({ "device", x->device },
                                                      { "port", x->port_label },
                                                      { "width", x->port.width }),
                                       1);
        }
        static const struct {
                const char *name, *help;
                bool hw;
        } counter_families[] = {
                { "sriov_rdma_port_stat",
                  "Port counters from sysfs ports/N/counters (IB standard; *_data in 4-byte "
                  "words).",
                  false },
                { "sriov_rdma_port_hw_stat",
                  "Driver counters from sysfs ports/N/hw_counters (mlx5: out_of_buffer, ...).",
                  true },
        };
        for (size_t f = 0; f < ELEMENTSOF(counter_families); f++) {
                metrics_family(w, counter_families[f].name, METRICS_UNTYPED,
                               counter_families[f].help);
                for (size_t i = 0; i < s.n_counters; i++) {
                        const struct rdma_counter_sample *c = &s.counters[i];
                        if (c->hw != counter_families[f].hw)
                                continue;
                        metrics_sample_u64(w, counter_families[f].name,
                                           METRICS_LABELS({ "device", s.ports[c->port].device },
                                                          { "port", s.ports[c->port].port_label },
                                                          { "counter", c->name }),
                                           c->value);
                }
        }
        free(s.ports);
        free(s.counters);
        drop_rdma_names(s.agent, s.n_devices); /* the devices the inventory no longer has */
}

static void write_pf_links(struct metrics_writer *w, const struct agent *a)
{
        metrics_family(w, "sriov_pf_link_up", METRICS_GAUGE,
                       "1 when the PF's netdev operstate is up, read at scrape time.");
        for (size_t i = 0; i < a->observed.n_pfs; i++) {
                const struct pf_info *pf = &a->observed.pfs[i];
                const char *ifname = pf_netdev_name(pf);
                char state[32];
                if (!ifname || host_netdev_read_operstate(a->config.sysfs_root, ifname, state,
                                                          sizeof(state)) < 0)
                        continue;
                metrics_sample(w, "sriov_pf_link_up",
                               METRICS_LABELS({ "pf", ifname }, { "pci_address", pf->pci_address }),
                               strcmp(state, "up") == 0);
        }
}

static void write_device_plugin(struct metrics_writer *w, const struct agent *a,
                                const struct dp_usage *usage)
{
        size_t n = dp_manager_n_plugins(a->plugins);

        metrics_family(w, "sriov_agent_device_healthy", METRICS_GAUGE,
                       "A device as advertised to the kubelet: 1 Healthy, 0 Unhealthy.");
        for (size_t i = 0; i < n; i++) {
                const struct dp_pool *pool = dp_plugin_pool(dp_manager_plugin(a->plugins, i));
                for (size_t j = 0; j < pool->n_devices; j++)
                        metrics_sample(w, "sriov_agent_device_healthy",
                                       METRICS_LABELS({ "resource", pool->resource },
                                                      { "device", pool->devices[j].id }),
                                       pool->devices[j].healthy);
        }
        metrics_family(w, "sriov_agent_pool_allocatable_devices", METRICS_GAUGE,
                       "Healthy devices a pool advertises to the kubelet.");
        for (size_t i = 0; i < n; i++) {
                const struct dp_pool *pool = dp_plugin_pool(dp_manager_plugin(a->plugins, i));
                size_t healthy = 0;
                for (size_t j = 0; j < pool->n_devices; j++)
                        healthy += pool->devices[j].healthy;
                metrics_sample_u64(w, "sriov_agent_pool_allocatable_devices",
                                   METRICS_LABELS({ "resource", pool->resource }), healthy);
        }
        if (usage) {
                metrics_family(w, "sriov_agent_pool_allocated_devices", METRICS_GAUGE,
                               "Devices of a pool that pods hold (kubelet PodResources).");
                for (size_t i = 0; i < n; i++) {
                        const struct dp_pool *pool =
                            dp_plugin_pool(dp_manager_plugin(a->plugins, i));
                        const struct dp_resource_usage *u = dp_usage_find(usage, pool->resource);
                        metrics_sample_u64(w, "sriov_agent_pool_allocated_devices",
                                           METRICS_LABELS({ "resource", pool->resource }),
                                           u ? u->n_ids : 0);
                }
        }
        metrics_family(w, "sriov_agent_device_plugin_registered", METRICS_GAUGE,
                       "1 when the pool's device plugin is registered with the kubelet.");
        for (size_t i = 0; i < n; i++) {
                const struct dp_plugin *p = dp_manager_plugin(a->plugins, i);
                metrics_sample(w, "sriov_agent_device_plugin_registered",
                               METRICS_LABELS({ "resource", dp_plugin_pool(p)->resource }),
                               dp_plugin_is_registered(p));
        }
        metrics_family(w, "sriov_agent_device_plugin_registrations_total", METRICS_COUNTER,
                       "Registrations with the kubelet, by result (a failed one is retried).");
        for (size_t i = 0; i < n; i++) {
                const struct dp_plugin *p = dp_manager_plugin(a->plugins, i);
                const struct dp_plugin_stats *st = dp_plugin_stats(p);
                const char *res = dp_plugin_pool(p)->resource;
                metrics_sample_u64(w, "sriov_agent_device_plugin_registrations_total",
                                   METRICS_LABELS({ "resource", res }, { "result", "ok" }),
                                   st->registrations);
                metrics_sample_u64(w, "sriov_agent_device_plugin_registrations_total",
                                   METRICS_LABELS({ "resource", res }, { "result", "failed" }),
                                   st->registration_failures);
        }
        metrics_family(w, "sriov_agent_allocate_total", METRICS_COUNTER,
                       "Allocate calls from the kubelet, by result.");
        for (size_t i = 0; i < n; i++) {
                const struct dp_plugin *p = dp_manager_plugin(a->plugins, i);
                const struct dp_plugin_stats *st = dp_plugin_stats(p);
                const char *res = dp_plugin_pool(p)->resource;
                metrics_sample_u64(w, "sriov_agent_allocate_total",
                                   METRICS_LABELS({ "resource", res }, { "result", "ok" }),
                                   st->allocate_ok);
                metrics_sample_u64(w, "sriov_agent_allocate_total",
                                   METRICS_LABELS({ "resource", res }, { "result", "refused" }),
                                   st->allocate_refused);
        }
        metrics_family(w, "sriov_agent_allocate_duration_seconds", METRICS_HISTOGRAM,
                       "Time to answer an Allocate call.");
        for (size_t i = 0; i < n; i++) {
                const struct dp_plugin *p = dp_manager_plugin(a->plugins, i);
                metrics_sample_histogram(
                    w, "sriov_agent_allocate_duration_seconds",
                    METRICS_LABELS({ "resource", dp_plugin_pool(p)->resource }),
                    &dp_plugin_stats(p)->allocate_seconds);
        }
}

static void write_agent_work(struct metrics_writer *w, const struct agent *a)
{
        static const char *const results[] = { [AGENT_RECONCILE_OK] = "ok",
                                               [AGENT_RECONCILE_FAILED] = "failed",
                                               [AGENT_RECONCILE_CHANGES_LEFT] = "changes_left",
                                               [AGENT_RECONCILE_STOPPED] = "stopped" };
        const struct agent_stats *st = &a->stats;

        metrics_family(w, "sriov_agent_reconciles_total", METRICS_COUNTER,
                       "Reconciles by result: ok, failed (a PF failed), changes_left (due after "
                       "the apply rounds), stopped (could not go on).");
        for (size_t i = 0; i < ELEMENTSOF(results); i++)
                metrics_sample_u64(w, "sriov_agent_reconciles_total",
                                   METRICS_LABELS({ "result", results[i] }), st->reconciles[i]);
        metrics_family(w, "sriov_agent_reconcile_duration_seconds", METRICS_HISTOGRAM,
                       "Time from a reconcile's start to its end (apply rounds included).");
        metrics_sample_histogram(w, "sriov_agent_reconcile_duration_seconds", METRICS_NO_LABELS,
                                 &st->reconcile_seconds);
        if (st->last_end_seconds > 0) {
                metrics_family(w, "sriov_agent_last_reconcile_result", METRICS_GAUGE,
                               "The last reconcile's result (1 on its label).");
                for (size_t i = 0; i < ELEMENTSOF(results); i++)
                        metrics_sample(w, "sriov_agent_last_reconcile_result",
                                       METRICS_LABELS({ "result", results[i] }),
                                       st->last_result == (int)i);
                metrics_family(w, "sriov_agent_last_reconcile_timestamp_seconds", METRICS_GAUGE,
                               "When the last reconcile ended, since the epoch.");
                metrics_sample(w, "sriov_agent_last_reconcile_timestamp_seconds", METRICS_NO_LABELS,
                               st->last_end_seconds);
        }
        if (a->sync_status >= 0) {
                static const enum node_sync_status all[] = { NODE_SYNC_SUCCEEDED,
                                                             NODE_SYNC_IN_PROGRESS,
                                                             NODE_SYNC_FAILED };
                metrics_family(w, "sriov_agent_node_sync_status", METRICS_GAUGE,
                               "The NodeState's syncStatus (1 on its label), also in "
                               "standalone mode.");
                for (size_t i = 0; i < ELEMENTSOF(all); i++)
                        metrics_sample(
                            w, "sriov_agent_node_sync_status",
                            METRICS_LABELS({ "status", node_sync_status_to_string(all[i]) }),
                            a->sync_status == (int)all[i]);
        }
        if (a->cluster) {
                const struct kube_http_stats *k = kube_http_stats(kube_cluster_http(a->cluster));
                metrics_family(w, "sriov_agent_api_requests_total", METRICS_COUNTER,
                               "Requests to the API server by verb (WATCH: streams) and HTTP "
                               "status code (0: no answer).");
                for (size_t i = 0; i < k->n_counts; i++) {
                        char code[16];
                        snprintf(code, sizeof(code), "%ld", k->counts[i].code);
                        metrics_sample_u64(
                            w, "sriov_agent_api_requests_total",
                            METRICS_LABELS({ "verb", k->counts[i].verb }, { "code", code }),
                            k->counts[i].n);
                }
                metrics_family(w, "sriov_agent_api_watch_restarts_total", METRICS_COUNTER,
                               "Watch streams that ended and were started again.");
                metrics_sample_u64(w, "sriov_agent_api_watch_restarts_total", METRICS_NO_LABELS,
                                   k->watch_ends);
        }
}

/* The CNI plugin's records on the node: attachments it made and VFs it holds for them. Left
 * out when the directory cannot be read (e.g. not mounted into the agent's container). */
static void write_cni_records(struct metrics_writer *w, const struct agent *a)
{
        const char *dir = a->config.cni_state_dir ?: CNI_STATE_DIR_DEFAULT;
        size_t attachments = 0, held = 0;
        int r = cni_state_count(dir, &attachments, &held);
        if (r < 0) {
                log_ctx_msg(LOG_DEBUG, r, NULL,
                            "metrics: cannot count the CNI plugin's records in %s", dir);
                return;
        }
        metrics_family(w, "sriov_agent_cni_attachment_records", METRICS_GAUGE,
                       "Attachment records of the sriov CNI plugin on the node (one per pod "
                       "interface it set up and has not yet released).");
        metrics_sample_u64(w, "sriov_agent_cni_attachment_records", METRICS_NO_LABELS, attachments);
        metrics_family(w, "sriov_agent_cni_vf_holder_records", METRICS_GAUGE,
                       "VFs the sriov CNI plugin records as held by a pod's network namespace.");
        metrics_sample_u64(w, "sriov_agent_cni_vf_holder_records", METRICS_NO_LABELS, held);
}

static int build(struct agent *a, const struct dp_usage *usage, bool asked_kubelet,
                 bool openmetrics, char **ret, size_t *ret_len)
{
        struct metrics_writer w = { .openmetrics = openmetrics };
        /* as long as the last scrape's, give or take: one buffer instead of ~17 regrowths */
        (void)metrics_writer_reserve(&w, a->metrics_last_len + a->metrics_last_len / 8);
        write_build_and_process(&w);
        write_agent_work(&w, a);
        write_device_plugin(&w, a, usage);
        if (asked_kubelet) {
                metrics_family(&w, "sriov_agent_pod_resources_up", METRICS_GAUGE,
                               "1 when the kubelet's PodResources answered this scrape.");
                metrics_sample(&w, "sriov_agent_pod_resources_up", METRICS_NO_LABELS, !!usage);
        }
        /* the kubelet's answer still counts devices in use; only the names stay out */
        if (!a->config.no_metrics_pod_labels)
                agent_metrics_write_pod_devices(&w, usage);
        write_pf_links(&w, a);
        /* a generated sysfs root's PFs have no kernel link to ask */
        if (host_sysfs_root_is_live(a->config.sysfs_root))
                write_vf_counters(&w, &a->observed);
        write_rdma(&w, a);
        write_cni_records(&w, a);
        int r = metrics_writer_finish(&w, ret, ret_len);
        if (r == 0)
                a->metrics_last_len = *ret_len;
        return r;
}

static void answer(struct agent *a, struct httpd_request *req, const struct dp_usage *usage,
                   bool asked_kubelet)
{
        char *text = NULL;
        size_t len = 0;
        /* OpenMetrics when the scraper prefers it (Prometheus does), else the text format */
        bool om = metrics_accepts_openmetrics(httpd_request_header(req, "Accept"));
        int r = build(a, usage, asked_kubelet, om, &text, &len);
        /* a scrape's working arrays on a large node are megabytes, freed by now: give the
         * pages back rather than keep them resident until the next scrape */
        malloc_trim(0);
        if (r < 0) {
                log_error_errno(r, "metrics: cannot write the exposition");
                char *msg = strdup("500 the agent could not write its metrics\n");
                httpd_respond(req, 500, "text/plain; charset=utf-8", msg, msg ? strlen(msg) : 0);
                return;
        }
        httpd_respond(req, 200, om ? METRICS_CONTENT_TYPE_OPENMETRICS : METRICS_CONTENT_TYPE_TEXT,
                      text, len);
}

static void waiting_remove(struct metrics_podres *m, struct scrape *s)
{
        if (s->prev)
                s->prev->next = s->next;
        else if (m->waiting == s)
                m->waiting = s->next;
        if (s->next)
                s->next->prev = s->prev;
        s->prev = s->next = NULL;
}

static void on_usage(void *userdata, int error, const char *message, const struct dp_usage *usage)
{
        struct agent *a = userdata;
        struct metrics_podres *m = a->metrics_podres;
        m->call = NULL;
        dp_usage_done(&m->usage);
        m->have = true;
        m->ok = false;
        if (error < 0)
                log_debug("metrics: no pod attribution from this List: %s", message);
        else if (dp_usage_copy(usage, &m->usage) < 0)
                log_debug("metrics: no pod attribution from this List: out of memory");
        else
                m->ok = true;
        /* answer() can take long on a large node, and a waiting scrape's connection may go
         * meanwhile: take each off the list before answering it */
        for (struct scrape *s; (s = m->waiting);) {
                m->waiting = s->next;
                if (m->waiting)
                        m->waiting->prev = NULL;
                s->next = NULL;
                answer(a, s->req, m->ok ? &m->usage : NULL, true);
                free(s);
        }
}

static void on_abort(void *data)
{
        struct scrape *s = data;
        waiting_remove(s->agent->metrics_podres, s);
        free(s);
}

static void on_scrape(struct httpd_request *req, void *userdata)
{
        struct agent *a = userdata;
        struct metrics_podres *m = a->metrics_podres;
        const char *socket = a->config.pod_resources_socket;
        if (!socket || strcmp(socket, "none") == 0 || !m) {
                answer(a, req, NULL, false);
                return;
        }
        uint64_t now = 0;
        (void)sd_event_now(a->event, CLOCK_MONOTONIC, &now);
        /* the last outcome is fresh enough: no new List */
        if (!m->call && m->have && now < m->asked + POD_RESOURCES_MIN_INTERVAL_USEC) {
                answer(a, req, m->ok ? &m->usage : NULL, true);
                return;
        }
        struct scrape *s = calloc(1, sizeof(*s));
        if (!s) {
                answer(a, req, NULL, true);
                return;
        }
        *s = (struct scrape){ .agent = a, .req = req };
        if (!m->call) {
                m->asked = now;
                if (dp_podresources_list(a->event, socket, POD_RESOURCES_TIMEOUT_USEC, on_usage, a,
                                         &m->call) < 0) {
                        m->call = NULL;
                        free(s);
                        answer(a, req, NULL, true);
                        return;
                }
        }
        s->next = m->waiting;
        if (m->waiting)
                m->waiting->prev = s;
        m->waiting = s;
        httpd_request_on_abort(req, on_abort, s);
}

void agent_metrics_stop(struct agent *a)
{
        httpd_free(a->metrics); /* first: a scrape waiting for the kubelet is answered 503 */
        a->metrics = NULL;
        struct metrics_podres *m = a->metrics_podres;
        if (!m)
                return;
        drop_rdma_names(a, 0);
        dp_podresources_call_cancel(m->call);
        dp_usage_done(&m->usage);
        free(m);
        a->metrics_podres = NULL;
}

int agent_metrics_start(struct agent *a)
{
        metrics_histogram_init(&a->stats.reconcile_seconds, metrics_duration_bounds,
                               metrics_n_duration_bounds);
        a->sync_status = -1;
        if (!a->config.metrics_listen)
                return 0;
        a->metrics_podres = calloc(1, sizeof(*a->metrics_podres));
        if (!a->metrics_podres)
                return log_error_errno(-ENOMEM, "metrics endpoint: out of memory");
        const struct httpd_options opts = {
                .listen = a->config.metrics_listen,
                .path = "/metrics",
                .handler = on_scrape,
                .userdata = a,
        };
        return httpd_new(a->event, &opts, &a->metrics);
}
