/* SPDX-License-Identifier: Apache-2.0 */
/* Many simulated agents in one process, for the lib/kube fleet-behaviour tests: each agent is
 * its own kube_http (its own connections, pacing and jitter sequence, seeded with its index so
 * a run can be replayed) with the informers a node agent keeps open: one on its Node, one on a
 * namespace and one on its Lease, each selecting "agent-<i>" so the fake API server's request
 * log tells the agents apart. Header-only, used with kube-fake.h. */
#pragma once

#include "kube-fake.h"
#include "kube/watch.h"

#define FLEET_MAX_AGENTS    64
#define FLEET_INFORMERS     3
#define FLEET_LEASE_NS_PATH "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"

struct fleet_agent {
        struct kube_http *http;
        struct kube_informer *informers[FLEET_INFORMERS];
        char selector[64];
};

struct fleet {
        struct fake *f;
        unsigned n;
        struct fleet_agent agents[FLEET_MAX_AGENTS];
};

static inline void fleet_start(struct fleet *fl, struct fake *f, unsigned n)
{
        assert_true(n <= FLEET_MAX_AGENTS);
        *fl = (struct fleet){ .f = f, .n = n };
        static const char *const paths[FLEET_INFORMERS] = { "/api/v1/nodes", "/api/v1/namespaces",
                                                            FLEET_LEASE_NS_PATH };
        static const char *const kinds[FLEET_INFORMERS] = { "Node", "Namespace", "Lease" };
        for (unsigned i = 0; i < n; i++) {
                struct fleet_agent *a = &fl->agents[i];
                snprintf(a->selector, sizeof(a->selector), "metadata.name=agent-%u", i);
                assert_int_equal(kube_http_new(f->event, &f->agent_cfg, &a->http), 0);
                kube_http_seed_jitter(a->http, i + 1);
                for (unsigned k = 0; k < FLEET_INFORMERS; k++) {
                        const struct kube_informer_opts o = { .kind = kinds[k],
                                                              .path = paths[k],
                                                              .field_selector = a->selector };
                        assert_int_equal(kube_informer_new(a->http, &o, &a->informers[k]), 0);
                        assert_int_equal(kube_informer_start(a->informers[k]), 0);
                }
        }
}

static inline void fleet_stop(struct fleet *fl)
{
        for (unsigned i = 0; i < fl->n; i++) {
                for (unsigned k = 0; k < FLEET_INFORMERS; k++)
                        kube_informer_free(fl->agents[i].informers[k]);
                kube_http_free(fl->agents[i].http);
        }
}

/* The number of watch streams the fake API server has open now. */
static inline long fleet_watching(struct fleet *fl)
{
        return stat_value(fl->f, "watching");
}

/* Runs the loop until the server has every agent's watches open; returns the time it took, or
 * UINT64_MAX after `usec`. */
static inline uint64_t fleet_wait_watching(struct fleet *fl, uint64_t usec)
{
        uint64_t t0 = now_usec();
        while (now_usec() - t0 < usec) {
                if (fleet_watching(fl) >= (long)fl->n * FLEET_INFORMERS)
                        return now_usec() - t0;
                run_until(fl->f, NULL, 0, 100 * 1000);
        }
        return UINT64_MAX;
}

/* Which of an agent's informers a logged request belongs to, -1 if none. */
static inline int fleet_informer_of(const char *path)
{
        if (strncmp(path, "/api/v1/nodes", 13) == 0)
                return 0;
        if (strncmp(path, "/api/v1/namespaces", 18) == 0)
                return 1;
        return strncmp(path, FLEET_LEASE_NS_PATH, strlen(FLEET_LEASE_NS_PATH)) == 0 ? 2 : -1;
}

/* The agent a logged request came from (its "agent-<i>" selector), -1 if none. */
static inline int fleet_agent_of(const char *path)
{
        const char *p = strstr(path, "agent-");
        return p ? (int)strtol(p + 6, NULL, 10) : -1;
}
