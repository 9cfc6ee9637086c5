/* SPDX-License-Identifier: Apache-2.0 */
/* dra-harness: serves the DRA plugin sockets (lib/dra/plugin.h) for the registration tests.
 *
 *   dra-harness --kubelet-root DIR [--driver NAME] --allocations FILE.json
 *
 * The allocations file stands in for the claims' allocation results that the agent reads from
 * the API server: {"<claim uid>": [{"request": R, "pool": P, "device": D, "cdi": [IDS]}]}.
 * A claim it does not list is answered with an error in its entry, as a claim for a device
 * the node does not have. Prints "ready" once serving; stops on SIGTERM or end of stdin. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-event.h>

#include "dra/plugin.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/strv.h"

#include "harness-loop.h"

struct harness {
        json_t *allocations;
        sd_event *event;
};

static int strv_from_json(const json_t *array, char ***ret, size_t *n)
{
        size_t i;
        const json_t *v;
        json_array_foreach(array, i, v)
        {
                int r = strv_push_dup(ret, n, json_string_value(v) ?: "");
                if (r < 0)
                        return r;
        }
        return 0;
}

static void prepare_claim(struct harness *h, const struct dra_claim *claim,
                          struct dra_claim_result *ret)
{
        const json_t *devs = json_object_get(h->allocations, claim->uid);
        if (!json_is_array(devs)) {
                if (asprintf(&ret->error, "claim %s/%s (%s) has no allocation on this node",
                             claim->namespace_, claim->name, claim->uid) < 0)
                        ret->error = NULL;
                return;
        }
        ret->devices = calloc(json_array_size(devs) ?: 1, sizeof(*ret->devices));
        if (!ret->devices) {
                ret->error = strdup("out of memory");
                return;
        }
        size_t i;
        const json_t *d;
        json_array_foreach(devs, i, d)
        {
                struct dra_prepared_device *p = &ret->devices[ret->n_devices++];
                p->pool = strdup(json_string_value(json_object_get(d, "pool")) ?: "");
                p->device = strdup(json_string_value(json_object_get(d, "device")) ?: "");
                const char *req = json_string_value(json_object_get(d, "request"));
                if (!p->pool || !p->device ||
                    (req && strv_push_dup(&p->request_names, &p->n_request_names, req) < 0) ||
                    strv_from_json(json_object_get(d, "cdi"), &p->cdi_ids, &p->n_cdi_ids) < 0) {
                        dra_claim_result_done(ret);
                        ret->error = strdup("out of memory");
                        return;
                }
        }
}

static void prepare(void *userdata, struct dra_prepare *req)
{
        for (size_t i = 0; i < dra_prepare_n_claims(req); i++)
                prepare_claim(userdata, dra_prepare_claim(req, i), dra_prepare_result(req, i));
        dra_prepare_done(req);
}

static char *unprepare(void *userdata, const struct dra_claim *claim)
{
        return NULL; /* nothing was set up on the host for these claims */
}

static const struct dra_handlers handlers = { .prepare = prepare, .unprepare = unprepare };

static int on_stdin(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct harness *h = userdata;
        char buf[256];
        if (read(fd, buf, sizeof(buf)) <= 0)
                sd_event_exit(h->event, 0);
        return 0;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct harness *h = userdata;
        sd_event_exit(h->event, 0);
        return 0;
}

int main(int argc, char **argv)
{
        struct harness h = { 0 };
        struct dra_plugin_options opts = { .handlers = &handlers, .userdata = &h };
        const char *alloc_path = NULL;
        static const struct option options[] = {
                { "kubelet-root", required_argument, NULL, 'k' },
                { "driver", required_argument, NULL, 'd' },
                { "allocations", required_argument, NULL, 'a' },
                {},
        };
        int c, r;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
                switch (c) {
                case 'k':
                        opts.kubelet_root = optarg;
                        break;
                case 'd':
                        opts.driver_name = optarg;
                        break;
                case 'a':
                        alloc_path = optarg;
                        break;
                default:
                        fprintf(stderr, "dra-harness: unknown option\n");
                        return 2;
                }
        }
        json_error_t jerr;
        h.allocations = alloc_path ? json_load_file(alloc_path, 0, &jerr) : json_object();
        if (!h.allocations) {
                fprintf(stderr, "dra-harness: %s: %s\n", alloc_path, jerr.text);
                return 2;
        }
        r = harness_event_new(on_sigterm, on_stdin, &h, &h.event);
        if (r < 0)
                return 1;
        struct dra_plugin *p = NULL;
        r = dra_plugin_new(h.event, &opts, &p);
        if (r >= 0)
                r = harness_run(h.event);
        dra_plugin_free(p);
        sd_event_unref(h.event);
        json_decref(h.allocations);
        return r < 0 ? 1 : 0;
}
