/* SPDX-License-Identifier: Apache-2.0 */
/* sriov-agent nad-controller: the SriovNetwork → NetworkAttachmentDefinition controller on its
 * own (a Deployment of the agent's image, two replicas, one leader by the Lease), so that the
 * node agents need no NAD or Lease rights and the writer is not one of thousands of nodes. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "commands.h"
#include "kube/cluster.h"
#include "kube/events.h"
#include "kube/http.h"
#include "kube/kubeconfig.h"
#include "kube/networks.h"
#include "util/log.h"
#include "util/macro.h"

static void print_usage(FILE *f)
{
        fprintf(f,
                "Usage: sriov-agent nad-controller [OPTIONS]\n\n"
                "Render SriovNetwork and SriovIBNetwork objects into the\n"
                "NetworkAttachmentDefinitions Multus reads. Run it as a Deployment (two\n"
                "replicas): only the holder of the Lease sriov-agent-networks in the namespace\n"
                "writes; the others wait to take over. Only NADs this controller rendered\n"
                "(label sriovnetwork.openshift.io/rendered-by=sriov-agent) are listed and\n"
                "watched; any other NAD is read before anything is decided about it and is never\n"
                "written unless it carries the network's owner-ref annotation.\n\n"
                "  --kubeconfig FILE         API server credentials (default: $KUBECONFIG, the\n"
                "                            in-cluster service account, ~/.kube/config)\n"
                "  --namespace NS            namespace of the SriovNetworks and of the Lease\n"
                "                            (default: sriov-network-operator)\n"
                "  --identity NAME           Lease holder identity (default: $POD_NAME, else\n"
                "                            the host name)\n"
                "  --resource-prefix PREFIX  prefix of the NADs' resourceName annotation\n"
                "                            (default: openshift.io)\n"
                "  --log-level LEVEL         err, warning, notice, info (default), debug\n"
                "  -h, --help                show this help\n");
}

struct controller {
        sd_event *event;
        struct kube_config *config;
        struct kube_http *http;
        struct kube_events *events;
        struct kube_networks *networks;
        bool stopping;
};

static void controller_done(struct controller *c)
{
        /* Users of the HTTP layer first, then the layer, then its configuration. */
        kube_networks_free(c->networks);
        kube_events_free(c->events);
        kube_http_free(c->http);
        kube_config_free(c->config);
        sd_event_unref(c->event);
}

static void released(void *userdata)
{
        struct controller *c = userdata;
        sd_event_exit(c->event, 0);
}

static int on_release_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
        log_warning("shutdown: the Lease release did not finish in time; exiting anyway");
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct controller *c = userdata;
        if (c->stopping)
                return 0;
        c->stopping = true;
        log_info("stop: %s", strsignal((int)si->ssi_signo));
        /* The Lease is handed back so the other replica takes over within seconds instead of
         * after its expiry; bounded, so a dead API server cannot hold the pod. */
        if (kube_networks_release(c->networks, released, c) == 0) {
                /* A bound on shutdown, not a deadline: 100 ms of slack is fine. */
                if (sd_event_add_time_relative(c->event, NULL, CLOCK_MONOTONIC, 3 * 1000000ULL,
                                               100 * 1000, on_release_timeout, c) >= 0)
                        return 0;
        }
        return sd_event_exit(c->event, 0);
}

int cmd_nad_controller(int argc, char **argv)
{
        enum {
                OPT_KUBECONFIG = 256,
                OPT_NAMESPACE,
                OPT_IDENTITY,
                OPT_RESOURCE_PREFIX,
                OPT_LOG_LEVEL,
        };
        static const struct option options[] = {
                { "kubeconfig", required_argument, NULL, OPT_KUBECONFIG },
                { "namespace", required_argument, NULL, OPT_NAMESPACE },
                { "identity", required_argument, NULL, OPT_IDENTITY },
                { "resource-prefix", required_argument, NULL, OPT_RESOURCE_PREFIX },
                { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *kubeconfig = NULL, *namespace_ = KUBE_DEFAULT_NAMESPACE, *prefix = NULL;
        const char *identity = getenv("POD_NAME");
        int level = LOG_INFO, opt;

        optind = 0;
        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (opt) {
                case OPT_KUBECONFIG:
                        kubeconfig = optarg;
                        break;
                case OPT_NAMESPACE:
                        namespace_ = optarg;
                        break;
                case OPT_IDENTITY:
                        identity = optarg;
                        break;
                case OPT_RESOURCE_PREFIX:
                        prefix = optarg;
                        break;
                case OPT_LOG_LEVEL:
                        level = log_level_from_string(optarg);
                        if (level < 0) {
                                fprintf(stderr,
                                        "sriov-agent nad-controller: unknown --log-level '%s'\n",
                                        optarg);
                                return 1;
                        }
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
                fprintf(stderr, "sriov-agent nad-controller: unexpected argument '%s'\n",
                        argv[optind]);
                return 1;
        }
        if (!*namespace_) {
                fprintf(stderr, "sriov-agent nad-controller: --namespace is empty\n");
                return 1;
        }
        char host[256] = "";
        if (!identity || !*identity) {
                if (gethostname(host, sizeof(host) - 1) < 0 || !*host) {
                        fprintf(stderr, "sriov-agent nad-controller: no --identity, no $POD_NAME "
                                        "and no host name\n");
                        return 1;
                }
                identity = host;
        }
        log_setup(LOG_TARGET_AUTO, level);

        struct controller c = {};
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        int k = sd_event_new(&c.event);
        if (k < 0) {
                log_error_errno(k, "nad-controller: cannot create the event loop");
                return 1;
        }
        const struct kube_events_opts event_opts = { .component = "sriov-agent-nad-controller",
                                                     .host = identity };
        if ((k = sd_event_add_signal(c.event, NULL, SIGTERM, on_terminate, &c)) < 0 ||
            (k = sd_event_add_signal(c.event, NULL, SIGINT, on_terminate, &c)) < 0 ||
            (k = kube_config_load(kubeconfig, &c.config)) < 0 ||
            (k = kube_http_new(c.event, c.config, &c.http)) < 0 ||
            (k = kube_events_new(c.http, &event_opts, &c.events)) < 0) {
                log_error_errno(k, "nad-controller: cannot start");
                controller_done(&c);
                return 1;
        }
        const struct kube_networks_opts net_opts = { .namespace_ = namespace_,
                                                     .identity = identity,
                                                     .resource_prefix = prefix,
                                                     .events = c.events };
        if ((k = kube_networks_new(c.http, &net_opts, &c.networks)) < 0) {
                log_error_errno(k, "nad-controller: cannot start");
                controller_done(&c);
                return 1;
        }
        log_info("nad-controller %s: candidate for the Lease %s/%s", identity, namespace_,
                 KUBE_NETWORKS_LEASE);
        k = sd_event_loop(c.event);
        if (k < 0)
                log_error_errno(k, "nad-controller: event loop failed");
        controller_done(&c);
        return k < 0 ? 1 : 0;
}
