/* SPDX-License-Identifier: Apache-2.0 */
/* dp-harness: serves the device-plugin pools of a (generated) node for the integration tests.
 *
 *   dp-harness --sysfs-root DIR (--policy-dir DIR --node-labels k=v,... | --desired FILE.json)
 *              --kubelet-dir DIR --devinfo-dir DIR [--resource-prefix P]
 *              [--rdma-shared-config FILE] [--vhost-net RES]... [--exclude-topology RES]...
 *
 * Discovers the tree, builds the desired state from SriovNetworkNodePolicy files with the
 * policy engine (or reads it from desired-state JSON, lib/model/desired-json.h, which has no
 * needVhostNet/excludeTopology: the two flags set them per resourceName), builds the SR-IOV
 * pools from it and whole-card RDMA pools from the config, and serves them with the plugin
 * manager. Commands on stdin, one per line: "rescan" (discover
 * again and update the pools), "shutdown" (graceful stop: Unhealthy first). Prints "ready", then
 * {"event": "rescanned", "t_apply": <wall-clock ms when the pools went to the manager>} on stdout.
 * SIGTERM also stops gracefully. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-event.h>

#include "agent/policy-files.h"
#include "deviceplugin/manager.h"
#include "deviceplugin/podresources.h"
#include "deviceplugin/pool-set.h"
#include "deviceplugin/rdma-shared-config.h"
#include "host/discover.h"
#include "model/desired-json.h"
#include "policy/node-labels.h"
#include "policy/policy-merge.h"
#include "util/log.h"
#include "util/macro.h"

#include "harness-loop.h"

struct harness {
        const char *sysfs_root, *desired_path, *rdma_config_path, *prefix, *policy_dir;
        struct string_pair *labels;
        size_t n_labels;
        char **vhost, **notopo;
        size_t n_vhost, n_notopo;
        struct dp_manager_options opts;
        struct dp_manager *manager;
        sd_event *event;
        long long applied_ms; /* wall clock when the pools were last handed to the manager */
        char line[4096];
        size_t line_len;
};

static void apply_flags(struct harness *h, struct desired_state *d)
{
        for (size_t i = 0; i < d->n_interfaces; i++)
                for (size_t j = 0; j < d->interfaces[i].n_groups; j++) {
                        struct vf_group *g = &d->interfaces[i].groups[j];
                        if (strv_contains(h->vhost, h->n_vhost, g->resource_name))
                                g->need_vhost_net = true;
                        if (strv_contains(h->notopo, h->n_notopo, g->resource_name))
                                g->exclude_topology = true;
                }
}

static int load_desired(struct harness *h, struct desired_state *ret)
{
        json_error_t jerr;
        json_t *root = json_load_file(h->desired_path, 0, &jerr);
        if (!root)
                return log_error_errno(EINVAL, "%s: %s", h->desired_path, jerr.text);
        _cleanup_free_ char *error = NULL;
        int r = desired_state_from_json(root, ret, &error);
        json_decref(root);
        if (r < 0)
                return log_error_errno(r, "%s: %s", h->desired_path, error ?: "invalid");
        apply_flags(h, ret);
        return 0;
}

static int desired_from_policies(struct harness *h, const struct inventory *inv,
                                 struct desired_state *ret)
{
        struct policy_list list = { 0 };
        struct policy_report report = { 0 };
        int r = policy_list_load_path(&list, h->policy_dir);
        if (r >= 0)
                r = policy_build_desired_state(list.items, list.n_items, h->labels, h->n_labels,
                                               inv, ret, &report);
        for (size_t i = 0; r >= 0 && i < report.n_results; i++)
                log_info("dp-harness: policy %s: %s (%s)", report.results[i].name ?: "?",
                         policy_status_to_string(report.results[i].status),
                         report.results[i].reason ?: "");
        policy_report_done(&report);
        policy_list_done(&list);
        return r;
}

static int build_pools(struct harness *h, struct dp_pool_set *ret)
{
        struct inventory inv = { 0 };
        struct desired_state desired = { 0 };
        struct rdma_shared_config rc = { 0 };
        const struct discover_options dopts = { .sysfs_root = h->sysfs_root };
        int r = host_discover(&dopts, &inv);
        if (r >= 0 && h->desired_path)
                r = load_desired(h, &desired);
        else if (r >= 0 && h->policy_dir) {
                r = desired_from_policies(h, &inv, &desired);
                if (r >= 0)
                        apply_flags(h, &desired);
        }
        if (r >= 0 && h->rdma_config_path) {
                _cleanup_free_ char *error = NULL;
                r = rdma_shared_config_load(h->rdma_config_path, &rc, &error);
                if (r < 0)
                        log_error("%s", error ?: strerror(-r));
        }
        struct dp_pool_set served = { 0 };
        if (r >= 0)
                r = dp_manager_get_pools(h->manager, &served);
        if (r >= 0)
                r = dp_pools_build(&desired, &inv, h->prefix, h->rdma_config_path ? &rc : NULL,
                                   &served, NULL, ret);
        dp_pool_set_done(&served);
        rdma_shared_config_done(&rc);
        desired_state_done(&desired);
        inventory_done(&inv);
        return r;
}

static int rescan(struct harness *h)
{
        struct dp_pool_set pools = { 0 };
        int r = build_pools(h, &pools);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        h->applied_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        if (r >= 0)
                r = dp_manager_set_pools(h->manager, &pools);
        dp_pool_set_done(&pools);
        return r;
}

static void stop(struct harness *h)
{
        dp_manager_shutdown(h->manager);
        sd_event_exit(h->event, 0);
}

/* "podresources PATH": List through our client, printed as {"in-use": {resource: [ids]}}. */
static void print_usage(const char *path)
{
        struct dp_usage u = { 0 };
        int r = dp_podresources_list_sync(path, 5 * 1000000ULL, &u);
        if (r < 0) {
                printf("{\"error\": %d}\n", r);
                fflush(stdout);
                return;
        }
        json_t *in_use = json_object();
        for (size_t i = 0; i < u.n_resources; i++) {
                json_t *ids = json_array();
                for (size_t j = 0; j < u.resources[i].n_ids; j++)
                        json_array_append_new(ids, json_string(u.resources[i].ids[j]));
                json_object_set_new(in_use, u.resources[i].resource, ids);
        }
        json_t *root = json_pack("{s:o}", "in-use", in_use);
        char *s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
        printf("%s\n", s ?: "{}");
        fflush(stdout);
        free(s);
        json_decref(root);
        dp_usage_done(&u);
}

static void command(struct harness *h, const char *cmd)
{
        if (strncmp(cmd, "podresources ", 13) == 0)
                return print_usage(cmd + 13);
        if (strcmp(cmd, "rescan") == 0) {
                int r = rescan(h);
                printf("{\"event\": \"%s\", \"t_apply\": %lld}\n",
                       r < 0 ? "rescan-failed" : "rescanned", h->applied_ms);
                fflush(stdout);
        } else if (strcmp(cmd, "shutdown") == 0)
                stop(h);
        else if (cmd[0])
                log_warning("dp-harness: unknown command \"%s\"", cmd);
}

static int on_stdin(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct harness *h = userdata;
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0) {
                sd_event_source_set_enabled(s, SD_EVENT_OFF);
                stop(h);
                return 0;
        }
        for (ssize_t i = 0; i < n; i++) {
                if (buf[i] == '\n') {
                        h->line[h->line_len] = 0;
                        h->line_len = 0;
                        command(h, h->line);
                } else if (h->line_len < sizeof(h->line) - 1)
                        h->line[h->line_len++] = buf[i];
        }
        return 0;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        stop(userdata);
        return 0;
}

int main(int argc, char **argv)
{
        struct harness h = { .sysfs_root = "/sys" };
        static const struct option options[] = {
                { "sysfs-root", required_argument, NULL, 's' },
                { "desired", required_argument, NULL, 'd' },
                { "kubelet-dir", required_argument, NULL, 'k' },
                { "devinfo-dir", required_argument, NULL, 'i' },
                { "resource-prefix", required_argument, NULL, 'p' },
                { "rdma-shared-config", required_argument, NULL, 'r' },
                { "vhost-net", required_argument, NULL, 'v' },
                { "exclude-topology", required_argument, NULL, 't' },
                { "policy-dir", required_argument, NULL, 'P' },
                { "node-labels", required_argument, NULL, 'L' },
                {},
        };
        int c, r;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                switch (c) {
                case 's':
                        h.sysfs_root = optarg;
                        break;
                case 'd':
                        h.desired_path = optarg;
                        break;
                case 'k':
                        h.opts.kubelet_dir = optarg;
                        break;
                case 'i':
                        h.opts.devinfo_dir = optarg;
                        break;
                case 'p':
                        h.prefix = optarg;
                        break;
                case 'r':
                        h.rdma_config_path = optarg;
                        break;
                case 'v':
                        (void)strv_push_dup(&h.vhost, &h.n_vhost, optarg);
                        break;
                case 't':
                        (void)strv_push_dup(&h.notopo, &h.n_notopo, optarg);
                        break;
                case 'P':
                        h.policy_dir = optarg;
                        break;
                case 'L': {
                        _cleanup_free_ char *error = NULL;
                        if (node_labels_parse(optarg, &h.labels, &h.n_labels, &error) < 0) {
                                fprintf(stderr, "dp-harness: --node-labels: %s\n", error ?: "?");
                                return 2;
                        }
                        break;
                }
                default:
                        fprintf(stderr, "dp-harness: unknown option\n");
                        return 2;
                }
        }
        r = harness_event_new(on_sigterm, on_stdin, &h, &h.event);
        if (r < 0)
                return 1;
        r = dp_manager_new(h.event, &h.opts, &h.manager);
        if (r >= 0)
                r = rescan(&h);
        if (r >= 0)
                r = harness_run(h.event);
        dp_manager_free(h.manager);
        sd_event_unref(h.event);
        strv_free_n(h.vhost, h.n_vhost);
        strv_free_n(h.notopo, h.n_notopo);
        node_labels_free(h.labels, h.n_labels);
        return r < 0 ? 1 : 0;
}
