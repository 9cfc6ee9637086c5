/* SPDX-License-Identifier: Apache-2.0 */
#include "podres.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cni/podres.h"
#include "deviceplugin/podresources.h"
#include "dra-owner.h"
#include "util/clock.h"
#include "util/macro.h"

struct answer {
        bool done;
        int error;
        char message[512];
        struct cni_device_holder *holders;
        size_t n_holders;
        bool oom;
};

/* The kubelet's holders, copied (usage is only valid during the callback). */
static void on_list(void *userdata, int error, const char *message, const struct dp_usage *usage)
{
        struct answer *a = userdata;
        a->done = true;
        a->error = error;
        if (error < 0) {
                snprintf(a->message, sizeof(a->message), "%s", message ? message : "");
                return;
        }
        a->holders = calloc(usage->n_holders ?: 1, sizeof(*a->holders));
        if (!a->holders) {
                a->oom = true;
                return;
        }
        for (size_t i = 0; i < usage->n_holders; i++) {
                const struct dp_device_holder *h = &usage->holders[i];
                struct cni_device_holder *c = &a->holders[a->n_holders++];
                c->resource = strdup(h->resource);
                c->id = strdup(h->id);
                c->namespace_ = strdup(h->namespace_);
                c->pod = strdup(h->pod);
                if (!c->resource || !c->id || !c->namespace_ || !c->pod)
                        a->oom = true;
        }
}

static void answer_done(struct answer *a)
{
        for (size_t i = 0; i < a->n_holders; i++) {
                free((char *)a->holders[i].resource);
                free((char *)a->holders[i].id);
                free((char *)a->holders[i].namespace_);
                free((char *)a->holders[i].pod);
        }
        free(a->holders);
}

/* One List call on a private loop, bounded by timeout_ms (the gRPC deadline covers the
 * connection and the answer; the socket is connected without blocking). */
static int list(const char *socket_path, int timeout_ms, struct answer *a)
{
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        int r = sd_event_new(&event);
        if (r < 0)
                return r;
        struct dp_podresources_call *call = NULL;
        r = dp_podresources_list(event, socket_path, (uint64_t)timeout_ms * 1000, on_list, a,
                                 &call);
        /* the deadline ends the call; the loop has its own bound besides, a second later */
        uint64_t now = 0, end = UINT64_MAX;
        if (r >= 0 && (r = sd_event_now(event, CLOCK_MONOTONIC, &now)) >= 0)
                end = now + ((uint64_t)timeout_ms + 1000) * 1000;
        while (r >= 0 && !a->done) {
                r = sd_event_run(event, (uint64_t)timeout_ms * 1000);
                if (r >= 0 && !a->done && sd_event_now(event, CLOCK_MONOTONIC, &now) >= 0 &&
                    now >= end)
                        r = -ETIMEDOUT;
        }
        if (!a->done)
                dp_podresources_call_cancel(call);
        return r < 0 ? r : 0;
}

static uint64_t now_ms(void)
{
        return clock_monotonic_usec() / 1000;
}

/* No kubelet answers at all: nothing at the socket, or no answer in time. Only then does the
 * pool check alone apply. */
static bool no_kubelet(int error)
{
        return error == -ENOENT || error == -ECONNREFUSED || error == -ETIMEDOUT;
}

/* A refusal (RESOURCE_EXHAUSTED: the kubelet rate-limits PodResources for the whole node) or a
 * connection that closed before the answer: worth asking again within the budget. */
static bool retryable(int error)
{
        return error == -EBUSY || error == -EAGAIN;
}

int cni_podres_check(const char *socket_path, int timeout_ms, const char *agent_dir,
                     const char *args, const char *device_id, const char *pool_resource,
                     struct cni_error *e)
{
        struct cni_pod_ref pod;
        int r = cni_args_pod(args, &pod, e);
        if (r < 0)
                return r;
        /* a VF the agent's DRA driver prepared goes to its claim's pods only (dra-owner.c) */
        int owner = cni_dra_owner_check(agent_dir, device_id, r > 0 ? &pod : NULL, e);
        if (owner != 0)
                return owner > 0 ? 0 : owner;
        if (r == 0)
                return r; /* no pod named: the pool check alone, as before */
        struct answer a = { .done = false };
        uint64_t end = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
        bool refused = false; /* a kubelet answered, with a refusal */
        int error = 0;
        for (unsigned attempt = 0;; attempt++) {
                uint64_t now = now_ms();
                if (attempt > 0) {
                        answer_done(&a);
                        a = (struct answer){ .done = false };
                        /* back off a little (20, 40 ... 160 ms): the kubelet's bucket refills
                         * at 100 tokens a second */
                        uint64_t pause = 20u << (attempt < 4 ? attempt - 1 : 3);
                        if (now + pause >= end)
                                break; /* the budget is spent: error is the last outcome */
                        nanosleep(&(struct timespec){ .tv_nsec = (long)pause * 1000000L }, NULL);
                        now = now_ms();
                }
                r = list(socket_path, (int)(end > now ? end - now : 1), &a);
                error = r < 0 ? r : a.error;
                /* The deadline travels with the call (grpc-timeout), so a server may end the
                 * call itself when it passes, with any status (grpc-go gives UNKNOWN "context
                 * deadline exceeded" for a handler returning ctx.Err()), racing our own timer:
                 * whatever ends the call once the budget is spent is no answer in time. */
                if (error < 0 && error != -EBUSY && now_ms() >= end)
                        error = -ETIMEDOUT;
                if (error == -EBUSY)
                        refused = true;
                if (!retryable(error))
                        break;
        }
        if (a.oom) {
                answer_done(&a);
                return cni_fail(e, CNI_ERR_TRY_LATER, -ENOMEM,
                                "pod %s/%s: deviceID %s: out of memory reading the kubelet's "
                                "PodResources answer",
                                pod.namespace_, pod.name, device_id);
        }
        if (error < 0 && no_kubelet(error) && !refused) {
                fprintf(stderr,
                        "sriov: pod %s/%s: the kubelet's PodResources gave no answer (%s): "
                        "deviceID %s checked against the sriov-agent's pools only\n",
                        pod.namespace_, pod.name, *a.message ? a.message : strerror(-error),
                        device_id);
                answer_done(&a);
                return 0;
        }
        if (error < 0) {
                /* a kubelet is there but did not say who holds the VF: never a reason to let
                 * the ADD through (a flood of other PodResources callers would otherwise
                 * switch the ownership check off) */
                const char *why = *a.message ? a.message : strerror(-error);
                r = cni_fail(e, CNI_ERR_TRY_LATER, error,
                             "pod %s/%s: deviceID %s: the kubelet's PodResources did not "
                             "answer who holds it (%s%s) within %d ms; the VF is not attached "
                             "without that answer, try again",
                             pod.namespace_, pod.name, device_id,
                             refused ? "refused by its rate limit; last: " : "", why, timeout_ms);
                answer_done(&a);
                return r;
        }
        r = cni_podres_verdict(a.holders, a.n_holders, &pod, device_id, pool_resource, e);
        answer_done(&a);
        return r;
}
