/* SPDX-License-Identifier: Apache-2.0 */
/* Test driver for lib/kube pieces that have no CLI of their own (NodeState writer, events,
 * kubeconfig parsing). Used by test/kube/test_kube.py against the fake API server.
 *
 *   kube-harness kubeconfig FILE | kube-harness in-cluster SA_DIR
 *       prints a JSON summary of the parsed configuration, exit 1 on error
 *   kube-harness nodestate --kubeconfig K --node N [--namespace NS] [--spec JSON]
 *                [--interfaces JSON --sync-status S [--error TEXT]] [--events]
 *       writes the NodeState, waits until the server matches; prints {"writes":n}
 *   kube-harness event --kubeconfig K --kind KIND --api-version V --name N [--namespace NS]
 *                --reason R --message M [--repeat N] [--spacing-ms MS] [--interval-ms MS]
 *                [--uid U]
 *       posts the event N times SPACING apart (deduplicated with the given repeat interval),
 *       waits for the requests; prints nothing */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "kube/events.h"
#include "kube/http.h"
#include "kube/kubeconfig.h"
#include "kube/nodestate.h"
#include "util/log.h"
#include "util/macro.h"

#define DEADLINE_USEC (20ULL * 1000 * 1000)

struct harness {
        sd_event *event;
        struct kube_events *events;
        struct kube_nodestate *state;
        int last_error;
        unsigned repeats_left;
        const struct kube_object_ref *ref;
        const char *reason, *message;
        uint64_t spacing_usec;
};

static int cmd_kubeconfig(const char *path, bool in_cluster)
{
        _cleanup_(kube_config_freep) struct kube_config *c = NULL;
        if ((in_cluster ? kube_config_load_in_cluster(path, &c) : kube_config_load_file(path, &c)) <
            0)
                return 1;
        const char *token = NULL;
        kube_config_current_token(c, &token);
        json_t *j =
            json_pack("{s:s, s:b, s:b, s:b, s:b, s:b, s:s?}", "server", c->server, "insecure",
                      c->insecure_skip_tls_verify, "ca", c->ca_file || c->ca_data, "client_cert",
                      c->client_cert_file || c->client_cert_data, "token", token != NULL,
                      "token_file", c->token_file != NULL, "token_value", token);
        char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        printf("%s\n", s);
        free(s);
        json_decref(j);
        return 0;
}

static int check_done(sd_event_source *s, void *userdata)
{
        struct harness *h = userdata;
        bool state_idle = !h->state || !kube_nodestate_busy(h->state);
        bool events_idle = !h->events || kube_events_in_flight(h->events) == 0;
        if (state_idle && events_idle && h->repeats_left == 0)
                sd_event_exit(h->event, h->last_error < 0 ? 1 : 0);
        return 0;
}

static void on_result(struct kube_nodestate *st, int error, void *userdata)
{
        struct harness *h = userdata;
        h->last_error = error;
        if (error < 0)
                fprintf(stderr, "kube-harness: write failed (%d), retrying\n", error);
}

static int deadline_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct harness *h = userdata;
        fprintf(stderr, "kube-harness: timed out\n");
        return sd_event_exit(h->event, 1);
}

static int repeat_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct harness *h = userdata;
        if (h->repeats_left == 0)
                return 0;
        kube_events_post(h->events, h->ref, "Warning", h->reason, h->message);
        h->repeats_left--;
        if (h->repeats_left > 0) {
                sd_event_source_set_time(s, usec + h->spacing_usec);
                sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        return 0;
}

int main(int argc, char **argv)
{
        log_setup(LOG_TARGET_STDERR, LOG_INFO);
        if (argc >= 3 && strcmp(argv[1], "kubeconfig") == 0)
                return cmd_kubeconfig(argv[2], false);
        if (argc >= 3 && strcmp(argv[1], "in-cluster") == 0)
                return cmd_kubeconfig(argv[2], true);
        if (argc < 2)
                return 2;
        const char *mode = argv[1];
        static const struct option options[] = {
                { "kubeconfig", required_argument, NULL, 'k' },
                { "node", required_argument, NULL, 'n' },
                { "namespace", required_argument, NULL, 's' },
                { "spec", required_argument, NULL, 'p' },
                { "interfaces", required_argument, NULL, 'i' },
                { "sync-status", required_argument, NULL, 'y' },
                { "error", required_argument, NULL, 'e' },
                { "events", no_argument, NULL, 'E' },
                { "kind", required_argument, NULL, 'K' },
                { "api-version", required_argument, NULL, 'A' },
                { "name", required_argument, NULL, 'N' },
                { "uid", required_argument, NULL, 'U' },
                { "reason", required_argument, NULL, 'R' },
                { "message", required_argument, NULL, 'M' },
                { "repeat", required_argument, NULL, 'r' },
                { "interval-ms", required_argument, NULL, 'I' },
                { "spacing-ms", required_argument, NULL, 'S' },
                {},
        };
        const char *kubeconfig = NULL, *node = NULL, *ns = NULL, *spec = NULL, *ifaces = NULL;
        const char *sync = NULL, *error_text = NULL;
        struct kube_object_ref ref = {};
        const char *reason = NULL, *message = NULL;
        bool want_events = false;
        unsigned repeat = 1;
        uint64_t interval_usec = 0, spacing_usec = 10 * 1000;
        int c;
        optind = 2;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                switch (c) {
                case 'k':
                        kubeconfig = optarg;
                        break;
                case 'n':
                        node = optarg;
                        break;
                case 's':
                        ns = optarg;
                        break;
                case 'p':
                        spec = optarg;
                        break;
                case 'i':
                        ifaces = optarg;
                        break;
                case 'y':
                        sync = optarg;
                        break;
                case 'e':
                        error_text = optarg;
                        break;
                case 'E':
                        want_events = true;
                        break;
                case 'K':
                        ref.kind = optarg;
                        break;
                case 'A':
                        ref.api_version = optarg;
                        break;
                case 'N':
                        ref.name = optarg;
                        break;
                case 'U':
                        ref.uid = optarg;
                        break;
                case 'R':
                        reason = optarg;
                        break;
                case 'M':
                        message = optarg;
                        break;
                case 'r':
                        repeat = (unsigned)atoi(optarg);
                        break;
                case 'I':
                        interval_usec = (uint64_t)atoll(optarg) * 1000;
                        break;
                case 'S':
                        spacing_usec = (uint64_t)atoll(optarg) * 1000;
                        break;
                default:
                        return 2;
                }
        }
        ref.namespace_ = ns;

        _cleanup_(kube_config_freep) struct kube_config *config = NULL;
        if (kube_config_load(kubeconfig, &config) < 0)
                return 1;
        struct harness h = {};
        if (sd_event_new(&h.event) < 0)
                return 1;
        struct kube_http *http = NULL;
        if (kube_http_new(h.event, config, &http) < 0)
                return 1;
        int r = 0;
        if (want_events || strcmp(mode, "event") == 0) {
                const struct kube_events_opts eo = { .component = "sriov-agent",
                                                     .host = node ? node : "harness",
                                                     .repeat_interval_usec = interval_usec };
                if (kube_events_new(http, &eo, &h.events) < 0)
                        return 1;
        }
        if (strcmp(mode, "nodestate") == 0) {
                const struct kube_nodestate_opts so = { .namespace_ = ns,
                                                        .node_name = node,
                                                        .events = h.events,
                                                        .on_result = on_result,
                                                        .userdata = &h };
                if (kube_nodestate_new(http, &so, &h.state) < 0)
                        return 1;
                if (spec) {
                        json_t *j = json_loads(spec, 0, NULL);
                        if (!j || kube_nodestate_set_spec(h.state, j) < 0)
                                return 2;
                        json_decref(j);
                }
                if (sync) {
                        json_t *j = json_loads(ifaces ? ifaces : "[]", 0, NULL);
                        int s = kube_sync_status_from_string(sync);
                        if (!j || s < 0 ||
                            kube_nodestate_set_status(h.state, j, (enum kube_sync_status)s,
                                                      error_text) < 0)
                                return 2;
                        json_decref(j);
                }
        } else if (strcmp(mode, "event") == 0) {
                h.ref = &ref;
                h.reason = reason;
                h.message = message;
                h.spacing_usec = spacing_usec;
                h.repeats_left = repeat;
                if (!ref.kind || !ref.name || !reason || !message)
                        return 2;
                if (sd_event_add_time_relative(h.event, NULL, CLOCK_MONOTONIC, 0, 0, repeat_cb,
                                               &h) < 0)
                        return 1;
        } else
                return 2;

        sd_event_source *post = NULL;
        sd_event_add_post(h.event, &post, check_done, &h);
        sd_event_add_time_relative(h.event, NULL, CLOCK_MONOTONIC, DEADLINE_USEC, 0, deadline_cb,
                                   &h);
        r = sd_event_loop(h.event);
        if (h.state)
                printf("{\"writes\":%u}\n", kube_nodestate_writes(h.state));
        sd_event_source_unref(post);
        kube_nodestate_free(h.state);
        kube_events_free(h.events);
        kube_http_free(http);
        sd_event_unref(h.event);
        return r;
}
