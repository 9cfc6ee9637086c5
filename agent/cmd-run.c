/* SPDX-License-Identifier: Apache-2.0 */
/* sriov-agent run: the node daemon. */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "daemon.h"
#include "host/rdma-netlink.h"
#include "util/log.h"
#include "util/parse.h"

#define USEC_PER_SEC 1000000ULL

#define MAX_SUPPORTED_NICS_FILES 16

static void print_usage(FILE *f)
{
        fprintf(f,
                "Usage: sriov-agent run [OPTIONS]\n\n"
                "Configure SR-IOV VFs from SriovNetworkNodePolicy objects and serve them to the\n"
                "kubelet. With an API server (the default) policies and the node's labels are\n"
                "watched there and the result is written to the SriovNetworkNodeState named\n"
                "after the node. Without one (standalone mode, --policy-dir) policies are read\n"
                "from files and the node's labels from --node-labels; the directory is watched.\n\n"
                "Policies and node:\n"
                "  --node-name NAME          this node (default: $NODE_NAME)\n"
                "  --kubeconfig FILE         API server credentials (default: $KUBECONFIG, the\n"
                "                            in-cluster service account, ~/.kube/config)\n"
                "  --namespace NS            namespace of policies and NodeState\n"
                "                            (default: sriov-network-operator)\n"
                "  --policy-dir DIR          standalone: policies from *.yaml/*.yml/*.json in DIR\n"
                "  --node-labels K=V,...     standalone: the node's labels (nodeSelector)\n"
                "  --supported-nics FILE     more NIC models policies may configure, in the\n"
                "                            supported-nic-ids ConfigMap format (repeatable;\n"
                "                            the ConfigMap itself is read in cluster mode)\n"
                "  --all-nics                configure any SR-IOV PF model, not only supported\n"
                "Host:\n"
                "  --sysfs-root DIR          sysfs to read and change (default: /sys)\n"
                "  --state-dir DIR           records of what this agent configured, used to\n"
                "                            restore PFs later (default: /var/lib/sriov-agent)\n"
                "  --vf-timeout SEC          deadline for VFs to appear after a VF-count change\n"
                "                            (default: 120)\n"
                "  --dry-run                 plan and log the actions, change nothing on the\n"
                "                            host (API objects are still written; the\n"
                "                            NodeState says InProgress while changes are\n"
                "                            planned)\n"
                "  --allow-disruption        apply changes that destroy or rebind VFs that\n"
                "                            pods use (default: hold them back until free)\n"
                "  --ready-timeout SEC       notify systemd READY=1 at the latest this long\n"
                "                            after the start, even if the boot apply of the\n"
                "                            recorded state is not done (default: 60)\n"
                "  --stop-mode MODE          what SIGTERM means: shutdown (report every device\n"
                "                            Unhealthy first), restart (they stay Healthy\n"
                "                            until the sockets close), auto (shutdown when\n"
                "                            systemd or logind say the node is going down,\n"
                "                            else restart; default)\n"
                "  --pod-resources-socket P  kubelet PodResources socket, to see which VFs\n"
                "                            are in use (default:\n"
                "                            /var/lib/kubelet/pod-resources/kubelet.sock);\n"
                "                            when it cannot be asked every VF counts as in\n"
                "                            use; \"none\": no kubelet runs on this host\n"
                "Device plugin:\n"
                "  --kubelet-dir DIR         kubelet device-plugin directory\n"
                "                            (default: /var/lib/kubelet/device-plugins)\n"
                "  --devinfo-dir DIR         device-info files for CNI\n"
                "                            (default: /var/run/k8s.cni.cncf.io/devinfo/dp)\n"
                "  --resource-prefix PREFIX  prefix of SR-IOV resources (default: openshift.io)\n"
                "  --rdma-shared-config FILE whole-card RDMA pools (k8s-rdma-shared-dev-plugin\n"
                "                            format) from a file; it wins over the ConfigMap\n"
                "  --rdma-shared-configmap NS/NAME\n"
                "                            cluster mode: the ConfigMap (key config.json)\n"
                "                            watched for that config (default:\n"
                "                            kube-system/rdma-devices; \"none\": not read)\n"
                "  --link-health on|off      a PF whose link is down (carrier, InfiniBand port\n"
                "                            not ACTIVE) makes its VFs and whole-card devices\n"
                "                            Unhealthy; off: upstream's behaviour, only gone\n"
                "                            or unbound devices count (default: on)\n"
                "Metrics:\n"
                "  --metrics-listen ADDR     serve Prometheus metrics on http://ADDR/metrics:\n"
                "                            HOST:PORT, [IPV6]:PORT or :PORT for every\n"
                "                            address (default: none, no endpoint)\n"
                "  --metrics-pod-labels on|off\n"
                "                            off: no pod, namespace or container names in\n"
                "                            the metrics (no sriov_kubepoddevice and\n"
                "                            sriov_agent_pod_device), for nodes whose\n"
                "                            metrics port tenants reach (default: on)\n"
                "  --cni-state-dir DIR       the sriov CNI plugin's records: counted for the\n"
                "                            metrics; a VF they give to a pod is in use for\n"
                "                            the disruption guard and stays in its pool over\n"
                "                            an agent restart, a GUID they give it is the\n"
                "                            pod's (default: /var/lib/cni/sriov)\n"
                "Dynamic Resource Allocation:\n"
                "  --dra-resources NAME,...  resources (policy resourceName, whole-card pool\n"
                "                            name) served through the DRA driver instead of\n"
                "                            the device plugin (default: none, DRA off)\n"
                "  --kubelet-root DIR        kubelet root: DRA registration in\n"
                "                            DIR/plugins_registry, the driver's socket in\n"
                "                            DIR/plugins (default: /var/lib/kubelet)\n"
                "  --cdi-root DIR            where the DRA driver writes its CDI specs\n"
                "                            (default: /var/run/cdi)\n"
                "RDMA and InfiniBand:\n"
                "  --rdma-mode MODE          RDMA network namespace mode to bring about at\n"
                "                            start, now and for the next boot: exclusive (a\n"
                "                            pod sees only its own RDMA device) or shared\n"
                "                            (default: leave the kernel's)\n"
                "  --modprobe-dir DIR        the modprobe.d directory the next boot's mode is\n"
                "                            read from and written to, file\n"
                "                            sriov-agent-rdma.conf (default: /etc/modprobe.d)\n"
                "  --ib-guid-pool FILE       node and port GUIDs of InfiniBand VFs, upstream's\n"
                "                            static pool format (default:\n"
                "                            /etc/sriov-operator/infiniband/guids); without\n"
                "                            the file each VF gets a stable GUID derived\n"
                "                            from its PF's GUID and its index\n"
                "NetworkAttachmentDefinitions:\n"
                "  --nad-controller on|off   on: also compete for the Lease\n"
                "                            sriov-agent-networks and render SriovNetworks into\n"
                "                            NADs while holding it, for setups without\n"
                "                            `sriov-agent nad-controller` (its RBAC too);\n"
                "                            default: off (the manifests run the controller\n"
                "                            as a Deployment)\n"
                "Loop:\n"
                "  --resync-interval SEC     periodic drift check (default: 30)\n"
                "  --log-level LEVEL         err, warning, notice, info (default), debug\n"
                "  -h, --help                show this help\n");
}

static int parse_seconds(const char *flag, const char *text, uint64_t *ret)
{
        int v;
        if (parse_int(text, &v) < 0 || v <= 0) {
                fprintf(stderr,
                        "sriov-agent run: %s wants a positive number of seconds, not '%s'\n", flag,
                        text);
                return -1;
        }
        *ret = (uint64_t)v * USEC_PER_SEC;
        return 0;
}

static int parse_switch(const char *flag, const char *text, bool *on)
{
        int v;
        if (parse_on_off(text, &v) < 0) {
                fprintf(stderr, "sriov-agent run: %s wants on or off, not '%s'\n", flag, text);
                return -1;
        }
        *on = v;
        return 0;
}

int cmd_run(int argc, char **argv)
{
        enum {
                OPT_POLICY_DIR = 256,
                OPT_KUBECONFIG,
                OPT_NAMESPACE,
                OPT_NODE_LABELS,
                OPT_NODE_NAME,
                OPT_SYSFS_ROOT,
                OPT_STATE_DIR,
                OPT_VF_TIMEOUT,
                OPT_DRY_RUN,
                OPT_KUBELET_DIR,
                OPT_DEVINFO_DIR,
                OPT_RESOURCE_PREFIX,
                OPT_RDMA_SHARED_CONFIG,
                OPT_RDMA_SHARED_CONFIGMAP,
                OPT_RESYNC,
                OPT_POD_RESOURCES,
                OPT_ALLOW_DISRUPTION,
                OPT_SUPPORTED_NICS,
                OPT_ALL_NICS,
                OPT_LOG_LEVEL,
                OPT_RDMA_MODE,
                OPT_MODPROBE_DIR,
                OPT_IB_GUID_POOL,
                OPT_READY_TIMEOUT,
                OPT_STOP_MODE,
                OPT_LINK_HEALTH,
                OPT_METRICS_POD_LABELS,
                OPT_METRICS_LISTEN,
                OPT_DRA_RESOURCES,
                OPT_KUBELET_ROOT,
                OPT_CDI_ROOT,
                OPT_CNI_STATE_DIR,
                OPT_NAD_CONTROLLER,
        };
        static const struct option options[] = {
                { "policy-dir", required_argument, NULL, OPT_POLICY_DIR },
                { "kubeconfig", required_argument, NULL, OPT_KUBECONFIG },
                { "namespace", required_argument, NULL, OPT_NAMESPACE },
                { "node-labels", required_argument, NULL, OPT_NODE_LABELS },
                { "node-name", required_argument, NULL, OPT_NODE_NAME },
                { "sysfs-root", required_argument, NULL, OPT_SYSFS_ROOT },
                { "state-dir", required_argument, NULL, OPT_STATE_DIR },
                { "vf-timeout", required_argument, NULL, OPT_VF_TIMEOUT },
                { "dry-run", no_argument, NULL, OPT_DRY_RUN },
                { "kubelet-dir", required_argument, NULL, OPT_KUBELET_DIR },
                { "devinfo-dir", required_argument, NULL, OPT_DEVINFO_DIR },
                { "resource-prefix", required_argument, NULL, OPT_RESOURCE_PREFIX },
                { "rdma-shared-config", required_argument, NULL, OPT_RDMA_SHARED_CONFIG },
                { "rdma-shared-configmap", required_argument, NULL, OPT_RDMA_SHARED_CONFIGMAP },
                { "resync-interval", required_argument, NULL, OPT_RESYNC },
                { "pod-resources-socket", required_argument, NULL, OPT_POD_RESOURCES },
                { "allow-disruption", no_argument, NULL, OPT_ALLOW_DISRUPTION },
                { "supported-nics", required_argument, NULL, OPT_SUPPORTED_NICS },
                { "all-nics", no_argument, NULL, OPT_ALL_NICS },
                { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
                { "rdma-mode", required_argument, NULL, OPT_RDMA_MODE },
                { "modprobe-dir", required_argument, NULL, OPT_MODPROBE_DIR },
                { "ib-guid-pool", required_argument, NULL, OPT_IB_GUID_POOL },
                { "ready-timeout", required_argument, NULL, OPT_READY_TIMEOUT },
                { "stop-mode", required_argument, NULL, OPT_STOP_MODE },
                { "link-health", required_argument, NULL, OPT_LINK_HEALTH },
                { "metrics-pod-labels", required_argument, NULL, OPT_METRICS_POD_LABELS },
                { "metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN },
                { "dra-resources", required_argument, NULL, OPT_DRA_RESOURCES },
                { "kubelet-root", required_argument, NULL, OPT_KUBELET_ROOT },
                { "cdi-root", required_argument, NULL, OPT_CDI_ROOT },
                { "cni-state-dir", required_argument, NULL, OPT_CNI_STATE_DIR },
                { "nad-controller", required_argument, NULL, OPT_NAD_CONTROLLER },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *supported_files[MAX_SUPPORTED_NICS_FILES] = { 0 };
        struct agent_config config = {
                .supported_nics_files = supported_files,
                .node_name = getenv("NODE_NAME"),
                .state_dir = "/var/lib/sriov-agent",
                .resync_usec = 30 * USEC_PER_SEC,
                .debounce_usec = 200 * 1000ULL,
                .vf_timeout_usec = 120 * USEC_PER_SEC,
                .ready_timeout_usec = 60 * USEC_PER_SEC,
                .pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock",
                .rdma_mode = -1,
                /* where k8s-rdma-shared-dev-plugin's deployment keeps it */
                .rdma_shared_configmap = "kube-system/rdma-devices",
        };
        int level = LOG_INFO, c;
        bool on;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case OPT_POLICY_DIR:
                        config.policy_dir = optarg;
                        break;
                case OPT_KUBECONFIG:
                        config.kubeconfig = optarg;
                        break;
                case OPT_NAMESPACE:
                        config.namespace_ = optarg;
                        break;
                case OPT_NODE_LABELS:
                        config.node_labels = optarg;
                        break;
                case OPT_NODE_NAME:
                        config.node_name = optarg;
                        break;
                case OPT_SYSFS_ROOT:
                        config.sysfs_root = optarg;
                        break;
                case OPT_STATE_DIR:
                        config.state_dir = optarg;
                        break;
                case OPT_VF_TIMEOUT:
                        if (parse_seconds("--vf-timeout", optarg, &config.vf_timeout_usec) < 0)
                                return 1;
                        break;
                case OPT_DRY_RUN:
                        config.dry_run = true;
                        break;
                case OPT_KUBELET_DIR:
                        config.kubelet_dir = optarg;
                        break;
                case OPT_DEVINFO_DIR:
                        config.devinfo_dir = optarg;
                        break;
                case OPT_RESOURCE_PREFIX:
                        config.resource_prefix = optarg;
                        break;
                case OPT_RDMA_SHARED_CONFIG:
                        config.rdma_shared_config = optarg;
                        break;
                case OPT_RDMA_SHARED_CONFIGMAP:
                        config.rdma_shared_configmap =
                            strcmp(optarg, "none") == 0 || !*optarg ? NULL : optarg;
                        break;
                case OPT_RESYNC:
                        if (parse_seconds("--resync-interval", optarg, &config.resync_usec) < 0)
                                return 1;
                        break;
                case OPT_POD_RESOURCES:
                        config.pod_resources_socket = optarg;
                        break;
                case OPT_SUPPORTED_NICS:
                        if (config.n_supported_nics_files >= MAX_SUPPORTED_NICS_FILES) {
                                fprintf(stderr, "sriov-agent run: too many --supported-nics\n");
                                return 1;
                        }
                        supported_files[config.n_supported_nics_files++] = optarg;
                        break;
                case OPT_ALL_NICS:
                        config.all_nics = true;
                        break;
                case OPT_METRICS_LISTEN:
                        config.metrics_listen = *optarg ? optarg : NULL;
                        break;
                case OPT_ALLOW_DISRUPTION:
                        config.allow_disruption = true;
                        break;
                case OPT_LOG_LEVEL:
                        level = log_level_from_string(optarg);
                        if (level < 0) {
                                fprintf(stderr, "sriov-agent run: unknown --log-level '%s'\n",
                                        optarg);
                                return 1;
                        }
                        break;
                case OPT_DRA_RESOURCES:
                        config.dra_resources = optarg;
                        break;
                case OPT_KUBELET_ROOT:
                        config.kubelet_root = optarg;
                        break;
                case OPT_CDI_ROOT:
                        config.cdi_root = optarg;
                        break;
                case OPT_CNI_STATE_DIR:
                        config.cni_state_dir = optarg;
                        break;
                case OPT_NAD_CONTROLLER:
                        if (parse_switch("--nad-controller", optarg, &config.nad_controller) < 0)
                                return 1;
                        break;
                case OPT_READY_TIMEOUT:
                        if (parse_seconds("--ready-timeout", optarg, &config.ready_timeout_usec) <
                            0)
                                return 1;
                        break;
                case OPT_STOP_MODE:
                        if (stop_mode_from_string(optarg, &config.stop_mode) < 0) {
                                fprintf(stderr,
                                        "sriov-agent run: --stop-mode wants auto, restart or "
                                        "shutdown, not '%s'\n",
                                        optarg);
                                return 1;
                        }
                        break;
                case OPT_LINK_HEALTH:
                        if (parse_switch("--link-health", optarg, &on) < 0)
                                return 1;
                        config.no_link_health = !on;
                        break;
                case OPT_METRICS_POD_LABELS:
                        if (parse_switch("--metrics-pod-labels", optarg, &on) < 0)
                                return 1;
                        config.no_metrics_pod_labels = !on;
                        break;
                case OPT_RDMA_MODE:
                        config.rdma_mode = host_rdma_netns_mode_from_string(optarg);
                        if (config.rdma_mode < 0) {
                                fprintf(stderr,
                                        "sriov-agent run: --rdma-mode wants exclusive or shared, "
                                        "not '%s'\n",
                                        optarg);
                                return 1;
                        }
                        break;
                case OPT_MODPROBE_DIR:
                        config.modprobe_dir = optarg;
                        break;
                case OPT_IB_GUID_POOL:
                        config.ib_guid_pool = optarg;
                        break;
                case 'h':
                        print_usage(stdout);
                        return 0;
                default:
                        print_usage(stderr);
                        return 1;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "sriov-agent run: unexpected argument '%s'\n", argv[optind]);
                return 1;
        }
        if (!config.policy_dir && (!config.node_name || !*config.node_name)) {
                fprintf(stderr, "sriov-agent run: --node-name (or $NODE_NAME) is required with "
                                "an API server; use --policy-dir to run without one\n");
                return 1;
        }
        if (config.policy_dir && config.node_labels == NULL)
                fprintf(stderr, "sriov-agent run: note: no --node-labels; only policies without "
                                "a nodeSelector can apply\n");
        log_setup(LOG_TARGET_AUTO, level);
        /* Blocks of 128 KiB and more stay mmap()ed, returned to the kernel when freed. glibc
         * otherwise raises this threshold to the largest such block freed (a scrape's 0.6 MiB
         * exposition, a NodeState echo), and the next ones then come from the heap and stay
         * resident while the agent idles: 0.8 MB more after 50 scrapes, measured. */
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);

        struct agent *agent = NULL;
        int r = agent_new(&config, &agent);
        if (r < 0)
                return 1;
        r = agent_run(agent);
        agent_free(agent);
        return r < 0 ? 1 : 0;
}
