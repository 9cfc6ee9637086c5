/* SPDX-License-Identifier: Apache-2.0 */
/* sriov-agent watch: prints every change the agent's informers see, one JSON line each.
 * A debugging aid for users: it shows exactly what the daemon would react to. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "commands.h"
#include "kube/http.h"
#include "kube/kubeconfig.h"
#include "kube/watch.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"

#define DEFAULT_NAMESPACE "sriov-network-operator"

/* Userdata of each informer's callbacks: which kind the printed line names. */
struct watch_printer {
        const char *kind;
};

static void print_event(const char *type, const char *kind, json_t *object)
{
        json_t *meta = json_object_get(object, "metadata");
        json_auto_t *line =
            json_pack("{s:s, s:s, s:O, s:O}", "type", type, "kind", kind, "name",
                      json_object_get(meta, "name") ?: json_null(), "object", object);
        if (!line)
                return;
        json_t *ns = json_object_get(meta, "namespace");
        if (ns)
                json_object_set(line, "namespace", ns);
        _cleanup_free_ char *text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (text) {
                printf("%s\n", text);
                fflush(stdout); /* one line per event, even into a pipe */
        }
}

static void on_added(json_t *object, void *userdata)
{
        print_event("ADDED", ((struct watch_printer *)userdata)->kind, object);
}

static void on_updated(json_t *old, json_t *object, void *userdata)
{
        print_event("MODIFIED", ((struct watch_printer *)userdata)->kind, object);
}

static void on_deleted(json_t *object, void *userdata)
{
        print_event("DELETED", ((struct watch_printer *)userdata)->kind, object);
}

static void on_synced(struct kube_informer *inf, void *userdata)
{
        log_debug("%s: in sync at resourceVersion %s", ((struct watch_printer *)userdata)->kind,
                  kube_informer_resource_version(inf));
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void print_usage(FILE *f)
{
        fprintf(f, "Usage: sriov-agent watch [--node-name NAME] [--kubeconfig FILE] "
                   "[--namespace NS]\n\n"
                   "Prints each SriovNetworkNodePolicy and Node change the agent sees as one "
                   "JSON line:\n"
                   "  {\"type\":\"ADDED\",\"kind\":\"SriovNetworkNodePolicy\",\"name\":...,"
                   "\"object\":{...}}\n\n"
                   "  --node-name NAME   this node (its labels select policies; default\n"
                   "                     $NODE_NAME, which the agent's pod sets)\n"
                   "  --kubeconfig FILE  default: $KUBECONFIG, in-cluster, ~/.kube/config\n"
                   "  --namespace NS     where the policies live (default: in-cluster the pod's\n"
                   "                     namespace, else " DEFAULT_NAMESPACE ")\n"
                   "  --log-level LEVEL  err, warning, notice, info, debug\n"
                   "  --watch-timeout S  ask the server to end each watch after S seconds\n"
                   "                     (default: random 300..599, renewed transparently)\n"
                   "Exit with SIGINT or SIGTERM.\n");
}

static int parse_unsigned(const char *s, unsigned *ret)
{
        int v;
        int k = parse_int(s, &v);
        if (k < 0 || v < 0)
                return k < 0 ? k : -ERANGE;
        *ret = (unsigned)v;
        return 0;
}

int cmd_watch(int argc, char **argv)
{
        static const struct option options[] = {
                { "node-name", required_argument, NULL, 'n' },
                { "kubeconfig", required_argument, NULL, 'k' },
                { "namespace", required_argument, NULL, 's' },
                { "log-level", required_argument, NULL, 'l' },
                { "watch-timeout", required_argument, NULL, 't' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *node = getenv("NODE_NAME"), *kubeconfig = NULL, *namespace_ = NULL;
        unsigned watch_timeout = 0;
        int c, level;
        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'n':
                        node = optarg;
                        break;
                case 'k':
                        kubeconfig = optarg;
                        break;
                case 's':
                        namespace_ = optarg;
                        break;
                case 'l':
                        level = log_level_from_string(optarg);
                        if (level < 0) {
                                fprintf(stderr, "watch: invalid --log-level '%s'\n", optarg);
                                return 2;
                        }
                        log_setup(LOG_TARGET_AUTO, level);
                        break;
                case 't':
                        if (parse_unsigned(optarg, &watch_timeout) < 0 || watch_timeout == 0) {
                                fprintf(stderr, "watch: invalid --watch-timeout '%s'\n", optarg);
                                return 2;
                        }
                        break;
                case 'h':
                        print_usage(stdout);
                        return 0;
                default:
                        print_usage(stderr);
                        return 2;
                }
        }
        if (!node || !*node || optind < argc) {
                fprintf(stderr, "watch: --node-name (or NODE_NAME) is required and no other "
                                "arguments are accepted\n\n");
                print_usage(stderr);
                return 2;
        }

        _cleanup_(kube_config_freep) struct kube_config *config = NULL;
        if (kube_config_load(kubeconfig, &config) < 0)
                return 1; /* logged, naming the file and field */
        if (!namespace_)
                namespace_ = config->namespace_ ? config->namespace_ : DEFAULT_NAMESPACE;

        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        int k = sd_event_default(&event);
        if (k < 0)
                return log_error_errno(k, "cannot create the event loop"), 1;
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if (sd_event_add_signal(event, NULL, SIGINT, on_signal, NULL) < 0 ||
            sd_event_add_signal(event, NULL, SIGTERM, on_signal, NULL) < 0)
                return log_error("cannot handle SIGINT/SIGTERM"), 1;

        _cleanup_(kube_http_freep) struct kube_http *http = NULL;
        if (kube_http_new(event, config, &http) < 0)
                return 1;

        struct watch_printer policy_printer = { .kind = "SriovNetworkNodePolicy" };
        struct watch_printer node_printer = { .kind = "Node" };
        _cleanup_free_ char *policy_path = kube_policy_collection_path(namespace_);
        _cleanup_free_ char *node_path = kube_node_collection_path();
        _cleanup_free_ char *node_selector = NULL;
        if (!policy_path || !node_path || asprintf(&node_selector, "metadata.name=%s", node) < 0)
                return log_error_errno(-ENOMEM, "watch"), 1;

        const struct kube_informer_opts policy_opts = {
                .kind = policy_printer.kind,
                .path = policy_path,
                .callbacks = { .added = on_added,
                               .updated = on_updated,
                               .deleted = on_deleted,
                               .userdata = &policy_printer },
                .on_synced = on_synced,
                .synced_userdata = &policy_printer,
                .watch_timeout_s = watch_timeout,
        };
        const struct kube_informer_opts node_opts = {
                .kind = node_printer.kind,
                .path = node_path,
                .field_selector = node_selector,
                .callbacks = { .added = on_added,
                               .updated = on_updated,
                               .deleted = on_deleted,
                               .userdata = &node_printer },
                .on_synced = on_synced,
                .synced_userdata = &node_printer,
                .watch_timeout_s = watch_timeout,
        };
        _cleanup_(kube_informer_freep) struct kube_informer *policies = NULL, *nodes = NULL;
        if (kube_informer_new(http, &policy_opts, &policies) < 0 ||
            kube_informer_new(http, &node_opts, &nodes) < 0 || kube_informer_start(policies) < 0 ||
            kube_informer_start(nodes) < 0)
                return 1;

        k = sd_event_loop(event);
        /* informers before the HTTP layer they use: cleanup order is reverse declaration. */
        return k < 0 ? 1 : 0;
}
