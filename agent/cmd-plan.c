/* SPDX-License-Identifier: Apache-2.0 */
/* `sriov-agent plan`: what would the agent do on this node with these policies?
 *
 * Reads policy files, discovers the node (read-only), loads the applied-state records, builds
 * the desired state and the plan, and prints all of it. Writes nothing anywhere.
 * Exit status: 0 when every policy is valid, 2 when any is invalid or conflicting or the plan
 * reports a problem (the plan of the valid ones is still printed), 1 on other errors. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "applied-store.h"
#include "commands.h"
#include "deviceplugin/pool-set.h"
#include "dra/plugin.h"
#include "dra/slices.h"
#include "host/discover.h"
#include "ib-attachments.h"
#include "kube/cluster.h"
#include "kube/http.h"
#include "kube/kubeconfig.h"
#include "model/desired-json.h"
#include "plan/freeze.h"
#include "plan/plan.h"
#include "policy-files.h"
#include "policy/node-labels.h"
#include "policy/policy-merge.h"
#include "policy/policy.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/strv.h"

#define MAX_POLICY_PATHS 64

struct plan_args {
        const char *paths[MAX_POLICY_PATHS];
        size_t n_paths;
        struct string_pair *labels;
        size_t n_labels;
        const char *node_name;
        const char *kubeconfig; /* policies and labels from the API, with this kubeconfig */
        bool live;              /* policies and labels from the API (kubeconfig or in-cluster) */
        const char *namespace_;
        const char *sysfs_root;
        const char *state_dir;
        const char *cni_state_dir; /* the GUIDs pods were given are theirs (plan/ib-guids.h) */
        const char *supported_paths[MAX_POLICY_PATHS];
        size_t n_supported_paths;
        bool all_nics;
        bool json;
        const char *dra_resources;
};

static void print_usage(FILE *f)
{
        fprintf(f, "Usage: sriov-agent plan --policies PATH [--policies PATH ...] [OPTIONS]\n"
                   "       sriov-agent plan --kubeconfig FILE --node-name NODE [OPTIONS]\n"
                   "       sriov-agent plan [OPTIONS]      (in a pod: the live cluster)\n\n"
                   "Show the desired state, the actions and the status of every policy,\n"
                   "without changing anything.\n\n"
                   "  --policies PATH        policy file or directory (*.yaml, *.yml, *.json)\n"
                   "  --kubeconfig FILE      read the live cluster instead: the policies of the\n"
                   "                         namespace, the labels of --node-name, and the\n"
                   "                         supported-nic-ids ConfigMap (read only). Without\n"
                   "                         --policies in a pod (KUBERNETES_SERVICE_HOST set)\n"
                   "                         the pod's service account is used instead\n"
                   "  --namespace NS         live cluster: where the policies are (default: in a\n"
                   "                         pod its namespace, else sriov-network-operator)\n"
                   "  --node-labels k=v,...  labels of this node (nodeSelector matching)\n"
                   "  --node-name N          node name (adds label kubernetes.io/hostname=N);\n"
                   "                         live cluster: default $NODE_NAME (set in the pod)\n"
                   "  --sysfs-root DIR       discover under DIR instead of /sys\n"
                   "  --state-dir DIR        records of previously applied PFs (<pci>.json)\n"
                   "  --cni-state-dir DIR    the CNI plugin's records: a GUID an ib-sriov\n"
                   "                         attachment gave its pod is left to it, as the\n"
                   "                         agent does (on a node: /var/lib/cni/sriov)\n"
                   "  --supported-nics FILE  more NIC models, in the supported-nic-ids ConfigMap\n"
                   "                         format (Name: \"<vendor> <pf-device> <vf-device>\")\n"
                   "  --all-nics             configure any SR-IOV PF, not only supported models\n"
                   "  --dra-resources N,...  with -o json: also the ResourceSlices these\n"
                   "                         resources would be published as (DRA)\n"
                   "  -o, --output json|text output format (default text)\n\n"
                   "Exit status: 0 all policies valid, 2 a policy is invalid or conflicting,\n"
                   "1 other errors.\n");
}

static int parse_args(int argc, char **argv, struct plan_args *a)
{
        enum {
                OPT_POLICIES = 0x100,
                OPT_LABELS,
                OPT_NODE,
                OPT_SYSFS,
                OPT_STATE,
                OPT_CNI_STATE,
                OPT_SUPPORTED,
                OPT_ALL_NICS,
                OPT_KUBECONFIG,
                OPT_NAMESPACE,
                OPT_DRA_RESOURCES,
        };
        static const struct option options[] = {
                { "policies", required_argument, NULL, OPT_POLICIES },
                { "node-labels", required_argument, NULL, OPT_LABELS },
                { "node-name", required_argument, NULL, OPT_NODE },
                { "sysfs-root", required_argument, NULL, OPT_SYSFS },
                { "state-dir", required_argument, NULL, OPT_STATE },
                { "cni-state-dir", required_argument, NULL, OPT_CNI_STATE },
                { "supported-nics", required_argument, NULL, OPT_SUPPORTED },
                { "all-nics", no_argument, NULL, OPT_ALL_NICS },
                { "kubeconfig", required_argument, NULL, OPT_KUBECONFIG },
                { "namespace", required_argument, NULL, OPT_NAMESPACE },
                { "dra-resources", required_argument, NULL, OPT_DRA_RESOURCES },
                { "output", required_argument, NULL, 'o' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *labels = NULL;
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "o:h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_POLICIES:
                        if (a->n_paths >= MAX_POLICY_PATHS) {
                                fprintf(stderr, "sriov-agent plan: too many --policies\n");
                                return -E2BIG;
                        }
                        a->paths[a->n_paths++] = optarg;
                        break;
                case OPT_LABELS:
                        labels = optarg;
                        break;
                case OPT_NODE:
                        a->node_name = optarg;
                        break;
                case OPT_SYSFS:
                        a->sysfs_root = optarg;
                        break;
                case OPT_STATE:
                        a->state_dir = optarg;
                        break;
                case OPT_CNI_STATE:
                        a->cni_state_dir = optarg;
                        break;
                case OPT_SUPPORTED:
                        if (a->n_supported_paths >= MAX_POLICY_PATHS) {
                                fprintf(stderr, "sriov-agent plan: too many --supported-nics\n");
                                return -E2BIG;
                        }
                        a->supported_paths[a->n_supported_paths++] = optarg;
                        break;
                case OPT_DRA_RESOURCES:
                        a->dra_resources = optarg;
                        break;
                case OPT_ALL_NICS:
                        a->all_nics = true;
                        break;
                case OPT_KUBECONFIG:
                        a->kubeconfig = optarg;
                        break;
                case OPT_NAMESPACE:
                        a->namespace_ = optarg;
                        break;
                case 'o':
                        if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
                                fprintf(stderr, "sriov-agent plan: -o must be json or text\n");
                                return -EINVAL;
                        }
                        a->json = strcmp(optarg, "json") == 0;
                        break;
                case 'h':
                        print_usage(stdout);
                        return 1;
                default:
                        print_usage(stderr);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "sriov-agent plan: unexpected argument \"%s\"\n", argv[optind]);
                return -EINVAL;
        }
        /* In a pod (kubectl exec into the DaemonSet) the live cluster is the only source of
         * policies there is, and the pod's service account its credentials. */
        a->live = a->kubeconfig || (a->n_paths == 0 && kube_in_cluster());
        if (a->live && !a->node_name) {
                const char *env = getenv("NODE_NAME");
                if (env && *env)
                        a->node_name = env;
        }
        if (a->n_paths == 0 && !a->live) {
                fprintf(stderr, "sriov-agent plan: --policies PATH is required (or "
                                "--kubeconfig FILE --node-name NODE, or run it in the agent's "
                                "pod)\n");
                return -EINVAL;
        }
        if (a->live && (a->n_paths > 0 || labels || !a->node_name)) {
                fprintf(stderr,
                        "sriov-agent plan: %s reads policies and labels from the "
                        "cluster: give --node-name (or set NODE_NAME), and no "
                        "--policies or --node-labels\n",
                        a->kubeconfig ? "--kubeconfig" : "in a pod, plan");
                return -EINVAL;
        }
        if (labels) {
                _cleanup_free_ char *error = NULL;
                int r = node_labels_parse(labels, &a->labels, &a->n_labels, &error);
                if (r < 0) {
                        fprintf(stderr, "sriov-agent plan: --node-labels: %s\n",
                                error ? error : strerror(-r));
                        return -EINVAL;
                }
        }
        if (a->node_name &&
            node_labels_set(&a->labels, &a->n_labels, "kubernetes.io/hostname", a->node_name) < 0)
                return -E2BIG;
        return 0;
}

/* ---- live-cluster mode: three GETs on a private event loop, nothing written ---- */

struct fetch {
        const char *what;
        char *path;
        int error;
        long status;
        char *body;
        size_t len;
        int *pending;
        sd_event *event;
};

static void on_fetched(struct kube_request *req, int error, long status, const char *body,
                       size_t len, void *userdata)
{
        struct fetch *f = userdata;

        (void)req;
        f->error = error;
        f->status = status;
        f->body = malloc(len + 1);
        if (f->body) {
                memcpy(f->body, body, len);
                f->body[len] = '\0';
                f->len = len;
        } else if (!error)
                f->error = -ENOMEM;
        if (--*f->pending == 0)
                sd_event_exit(f->event, 0);
}

static json_t *fetched_json(const struct fetch *f, const char *server)
{
        json_t *v;

        if (f->error < 0) {
                log_error_errno(f->error, "GET %s%s (%s): %s", server, f->path, f->what,
                                strerror(-f->error));
                return NULL;
        }
        if (f->status != 200) {
                log_error("GET %s%s (%s): HTTP %ld: %.300s", server, f->path, f->what, f->status,
                          f->body ? f->body : "");
                return NULL;
        }
        v = f->body ? json_loadb(f->body, f->len, 0, NULL) : NULL;
        if (!v)
                log_error("GET %s%s (%s): the answer is not JSON", server, f->path, f->what);
        return v;
}

static void fetches_done(struct fetch (*f)[3])
{
        for (size_t i = 0; i < ELEMENTSOF(*f); i++) {
                free((*f)[i].path);
                free((*f)[i].body);
        }
}

/* Policies of the namespace, the node's labels, and the supported-nic-ids ConfigMap. */
static int load_cluster(struct plan_args *a, struct policy_list *list,
                        struct supported_nics *supported)
{
        /* released in reverse: the HTTP client, its event loop, the config */
        _cleanup_(kube_config_freep) struct kube_config *config = NULL;
        int r = kube_config_load(a->kubeconfig, &config);
        if (r < 0)
                return r; /* logged, naming the file and field */
        const char *ns = a->namespace_        ? a->namespace_
                         : config->namespace_ ? config->namespace_
                                              : KUBE_DEFAULT_NAMESPACE;
        _cleanup_free_ char *ns_esc = kube_http_escape(ns),
                            *node_esc = kube_http_escape(a->node_name);
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(kube_http_freep) struct kube_http *http = NULL;
        int pending = 0;
        _cleanup_(fetches_done) struct fetch f[3] = {
                { .what = "SriovNetworkNodePolicies" },
                { .what = "the Node" },
                { .what = "ConfigMap " SUPPORTED_NICS_CONFIGMAP },
        };
        json_auto_t *policies = NULL, *node = NULL;
        json_t *item, *labels, *value;
        const char *key;
        size_t i;

        if (!ns_esc || !node_esc ||
            asprintf(&f[0].path,
                     "/apis/sriovnetwork.openshift.io/v1/namespaces/%s/sriovnetworknodepolicies",
                     ns_esc) < 0 ||
            asprintf(&f[1].path, "/api/v1/nodes/%s", node_esc) < 0 ||
            asprintf(&f[2].path, "/api/v1/namespaces/%s/configmaps/%s", ns_esc,
                     SUPPORTED_NICS_CONFIGMAP) < 0)
                return log_error_errno(-ENOMEM, "out of memory");
        r = sd_event_new(&event);
        if (r >= 0)
                r = kube_http_new(event, config, &http);
        if (r < 0)
                return log_error_errno(r, "cannot set up HTTP to the API server: %s", strerror(-r));
        for (i = 0; i < 3; i++) {
                f[i].pending = &pending;
                f[i].event = event;
                r = kube_http_start(http,
                                    &(const struct kube_request_opts){ .path = f[i].path,
                                                                       .on_done = on_fetched,
                                                                       .userdata = &f[i] },
                                    NULL);
                if (r < 0)
                        return log_error_errno(r, "GET %s: %s", f[i].path, strerror(-r));
                pending++;
        }
        r = sd_event_loop(event);
        if (r < 0)
                return r;
        policies = fetched_json(&f[0], kube_http_server(http));
        node = fetched_json(&f[1], kube_http_server(http));
        if (!policies || !node)
                return -EIO;
        json_array_foreach(json_object_get(policies, "items"), i, item)
        {
                /* List items of a custom resource carry kind and apiVersion; fill them in
                 * if a server left them out. */
                char origin[512];
                const char *name =
                    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
                if (!json_object_get(item, "kind"))
                        json_object_set_new(item, "kind", json_string(POLICY_KIND));
                if (!json_object_get(item, "apiVersion"))
                        json_object_set_new(item, "apiVersion", json_string(POLICY_API_VERSION));
                snprintf(origin, sizeof(origin), "SriovNetworkNodePolicy %s/%s", ns,
                         name ? name : "(unnamed)");
                r = policy_list_add_json(list, item, origin);
                if (r < 0)
                        return r;
        }
        labels = json_object_get(json_object_get(node, "metadata"), "labels");
        json_object_foreach(labels, key, value)
        {
                r = node_labels_set(&a->labels, &a->n_labels, key,
                                    json_is_string(value) ? json_string_value(value) : "");
                if (r < 0)
                        return r;
        }
        r = 0;
        if (f[2].error == 0 && f[2].status == 200) {
                _cleanup_free_ char *error = NULL;
                json_auto_t *cm = fetched_json(&f[2], kube_http_server(http));
                r = cm ? supported_nics_add_json(supported, cm, f[2].path, &error) : -EIO;
                if (r < 0 && error)
                        log_error("%s", error);
        } else if (f[2].error < 0 || f[2].status != 404)
                log_warning("cannot read ConfigMap %s (%s); using the built-in supported-NIC list",
                            SUPPORTED_NICS_CONFIGMAP,
                            f[2].error < 0 ? strerror(-f[2].error) : "HTTP error");
        return r;
}

static int load_policies(const struct plan_args *a, struct policy_list *list)
{
        for (size_t i = 0; i < a->n_paths; i++) {
                int r = policy_list_load_path(list, a->paths[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void print_group_text(const struct vf_group *g)
{
        printf("    VFs %d-%d: %s (%s", g->vf_start, g->vf_end, g->resource_name,
               device_type_to_string(g->device_type));
        if (g->mtu)
                printf(", mtu %d", g->mtu);
        if (g->is_rdma)
                printf(", rdma");
        if (g->vdpa_type[0])
                printf(", vdpa %s", g->vdpa_type);
        printf(", policy %s)\n", g->policy_name);
}

static void print_text(const struct desired_state *d, const struct plan *p,
                       const struct policy_report *rep, const struct policy_list *list)
{
        printf("Desired state (%zu PF%s):\n", d->n_interfaces, d->n_interfaces == 1 ? "" : "s");
        for (size_t i = 0; i < d->n_interfaces; i++) {
                const struct desired_interface *di = &d->interfaces[i];
                printf("  %s %s: numVfs %d", di->pci_address, di->name[0] ? di->name : "-",
                       di->num_vfs);
                if (di->mtu)
                        printf(", mtu %d", di->mtu);
                if (di->link_type != LINK_TYPE_UNKNOWN)
                        printf(", linkType %s", link_type_to_string(di->link_type));
                if (di->eswitch_mode != ESWITCH_MODE_UNSET)
                        printf(", eSwitchMode %s", eswitch_mode_to_string(di->eswitch_mode));
                printf("%s\n", di->externally_managed ? ", externally managed" : "");
                for (size_t j = 0; j < di->n_groups; j++)
                        print_group_text(&di->groups[j]);
        }
        printf("\nActions (%zu):\n", p->n_actions);
        for (size_t i = 0; i < p->n_actions; i++) {
                char line[512];
                action_format(&p->actions[i], line, sizeof(line));
                printf("  %s\n", line);
        }
        for (size_t i = 0; i < p->n_problems; i++)
                printf("  problem: %s: %s\n", p->problems[i].pf, p->problems[i].message);
        printf("\nPolicies (%zu):\n", rep->n_results);
        for (size_t i = 0; i < rep->n_results; i++) {
                const struct policy_result *res = &rep->results[i];
                printf("  %-13s %s\n                %s\n", policy_status_to_string(res->status),
                       res->name ? res->name : res->origin, res->reason ? res->reason : "");
        }
        for (size_t i = 0; i < list->n_notes; i++)
                printf("  note: %s\n", list->notes[i]);
}

static json_t *report_to_json(const struct policy_report *rep)
{
        json_auto_t *arr = json_array();

        for (size_t i = 0; arr && i < rep->n_results; i++) {
                const struct policy_result *res = &rep->results[i];
                if (json_array_append_new(
                        arr, json_pack("{s:s, s:s, s:s, s:s}", "name",
                                       res->name ? res->name : res->origin, "origin", res->origin,
                                       "status", policy_status_to_string(res->status), "reason",
                                       res->reason ? res->reason : "")) < 0)
                        return NULL;
        }
        return TAKE_PTR(arr);
}

static json_t *strings_to_json(char *const *items, size_t n)
{
        json_auto_t *arr = json_array();

        for (size_t i = 0; arr && i < n; i++)
                if (json_array_append_new(arr, json_string(items[i])) < 0)
                        return NULL;
        return TAKE_PTR(arr);
}

static json_t *problems_to_json(const struct plan *p)
{
        json_auto_t *arr = json_array();

        for (size_t i = 0; arr && i < p->n_problems; i++)
                if (json_array_append_new(arr, json_pack("{s:s, s:s}", "pf", p->problems[i].pf,
                                                         "message", p->problems[i].message)) < 0)
                        return NULL;
        return TAKE_PTR(arr);
}

static int print_json(const struct desired_state *d, const struct plan *p,
                      const struct policy_report *rep, const struct policy_list *list,
                      json_t *slices)
{
        json_auto_t *desired = NULL, *actions = NULL, *out = NULL;
        _cleanup_free_ char *text = NULL;

        if (desired_state_to_json(d, &desired) < 0 || plan_actions_to_json(p, &actions) < 0)
                return log_error_errno(-ENOMEM, "out of memory");
        /* "o" steals the references, also when packing fails */
        out = json_pack("{s:o, s:o, s:o*, s:o*, s:o*}", "desired", TAKE_PTR(desired), "actions",
                        TAKE_PTR(actions), "policies", report_to_json(rep), "problems",
                        problems_to_json(p), "notes", strings_to_json(list->notes, list->n_notes));
        if (!out || (slices && json_object_set(out, "resourceSlices", slices) < 0))
                return log_error_errno(-ENOMEM, "out of memory");
        text = json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (!text)
                return log_error_errno(-ENOMEM, "out of memory");
        printf("%s\n", text);
        return 0;
}

/* The ResourceSlices the DRA resources would be published as: the pools the agent would
 * build now, cut as `run --dra-resources` cuts them. */
static int dra_slices_preview(const struct plan_args *a, const struct desired_state *desired,
                              const struct inventory *inv, json_t **ret)
{
        char **names = NULL;
        size_t n = 0;
        struct dp_pool_set pools = { 0 }, dra = { 0 };
        int r = agent_dra_parse_resources(a->dra_resources, &names, &n);
        if (r >= 0)
                r = dp_pools_build(desired, inv, NULL, NULL, NULL, NULL, &pools);
        if (r >= 0)
                r = dp_pool_set_split(&pools, names, n, &dra);
        if (r >= 0)
                r = dra_slices_build(&dra, inv, a->node_name ?: "node", DRA_DRIVER_NAME_DEFAULT,
                                     NULL, ret);
        if (r < 0)
                log_error_errno(r, "--dra-resources: cannot build the ResourceSlices: %s",
                                strerror(-r));
        dp_pool_set_done(&pools);
        dp_pool_set_done(&dra);
        strv_free_n(names, n);
        return r;
}

static int run(struct plan_args *a)
{
        _cleanup_(supported_nics_done) struct supported_nics supported = { .any = a->all_nics };
        _cleanup_(policy_list_done) struct policy_list list = { 0 };
        _cleanup_(inventory_done) struct inventory inv = { 0 };
        _cleanup_(applied_state_done) struct applied_state previous = { 0 };
        _cleanup_(ib_guid_attachments_done) struct ib_guid_attachments attachments = { 0 };
        _cleanup_(desired_state_done) struct desired_state desired = { 0 };
        _cleanup_(policy_report_done) struct policy_report report = { 0 };
        _cleanup_(plan_done) struct plan plan = { 0 };
        _cleanup_free_ char *state_error = NULL;
        int r;

        r = a->live ? load_cluster(a, &list, &supported) : load_policies(a, &list);
        if (r < 0)
                return 1;
        for (size_t i = 0; i < a->n_supported_paths; i++) {
                r = supported_nics_load_file(&supported, a->supported_paths[i]);
                if (r < 0)
                        return 1;
        }
        r = host_discover(&(const struct discover_options){ .sysfs_root = a->sysfs_root,
                                                            .query_kernel = host_sysfs_root_is_live(
                                                                a->sysfs_root) },
                          &inv);
        if (r < 0) {
                log_error_errno(r, "discovery under %s failed: %s",
                                a->sysfs_root ? a->sysfs_root : "/sys", strerror(-r));
                return 1;
        }
        if (a->state_dir) {
                r = applied_state_load_dir(a->state_dir, &previous, &state_error);
                if (r < 0) {
                        log_error_errno(r, "--state-dir %s: %s", a->state_dir,
                                        state_error ? state_error : strerror(-r));
                        return 1;
                }
        }
        r = policy_build_desired_state_with(
            &(const struct policy_build_options){ .supported = &supported }, list.items,
            list.n_items, a->labels, a->n_labels, &inv, &desired, &report);
        if (r < 0) {
                log_error_errno(r, "building the desired state: %s", strerror(-r));
                return 1;
        }
        if (a->cni_state_dir) {
                r = ib_attachments_read(a->cni_state_dir, &attachments);
                if (r < 0)
                        return 1; /* logged with the directory */
                desired.ib_attachments = &attachments;
        }
        r = plan_build(&desired, &inv, &previous, &plan);
        if (r >= 0)
                r = plan_freeze_bad_records(&plan, &previous);
        if (r < 0) {
                log_error_errno(r, "planning: %s", strerror(-r));
                return 1;
        }
        json_auto_t *slices = NULL;
        if (a->dra_resources && dra_slices_preview(a, &desired, &inv, &slices) < 0)
                return 1;
        if (a->json) {
                if (print_json(&desired, &plan, &report, &list, slices) < 0)
                        return 1;
        } else
                print_text(&desired, &plan, &report, &list);
        return policy_report_has_errors(&report) || plan.n_problems > 0 ? 2 : 0;
}

int cmd_plan(int argc, char **argv)
{
        struct plan_args a = { 0 };
        int r = parse_args(argc, argv, &a);

        if (r == 0)
                r = run(&a);
        else
                r = r > 0 ? 0 : 1;
        node_labels_free(a.labels, a.n_labels);
        return r;
}
