/* SPDX-License-Identifier: Apache-2.0 */
/* Reconnects of many agents after an API server restart (lib/kube/http.c pacing, watch.c
 * jitter and relists), against the fake API server's request log: 20 simulated agents of 3
 * watches each lose the server together, and the restarted server answers every resumed watch
 * with 410 Expired, so every informer must relist: the worst case.
 * What an operator of a large cluster needs: no second holds more requests than there are
 * agents, each agent spaces its own requests, the reconnects are spread rather than aligned,
 * the relists are answered from the watch cache, everything is back well within 60 s, and a
 * 429's Retry-After is honoured for the resource that got it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "kube-fleet.h"
#include "util/log.h"

#define AGENTS 20
/* The fake's clock is in milliseconds; loopback and the pacing timer's 10 ms accuracy. */
#define SPACING_SLACK_S 0.15

struct window {
        double t0;
        unsigned per_second[128];
        unsigned busiest, requests;
        double first[AGENTS], last[AGENTS];
        double first_watch[AGENTS * FLEET_INFORMERS]; /* each informer's first attempt */
        double min_spacing; /* the shortest gap between two requests of one agent */
        json_t *log;
};

/* Reads the request log after t0: requests per second, per agent spacing, first attempts. */
static void analyse(struct fake *f, struct window *w)
{
        json_t *j = get_json(f, "/_fake/requests");
        w->log = json_incref(json_object_get(j, "requests"));
        json_decref(j);
        for (unsigned a = 0; a < AGENTS; a++)
                w->first[a] = w->last[a] = -1;
        for (unsigned k = 0; k < AGENTS * FLEET_INFORMERS; k++)
                w->first_watch[k] = -1;
        w->min_spacing = 1e9;
        const char *last_path[AGENTS] = { NULL };
        size_t i;
        json_t *e;
        json_array_foreach(w->log, i, e)
        {
                double t = json_number_value(json_array_get(e, 0));
                const char *path = json_string_value(json_array_get(e, 2));
                int a = fleet_agent_of(path);
                if (t < w->t0 || a < 0 || a >= AGENTS)
                        continue;
                /* The fake "refuses" by hanging up without an answer; curl sends a request
                 * that met a dead reused connection once more on a fresh one, at once. That
                 * is one request of the agent (and a refused connection to a restarting
                 * server), not two. */
                bool resend = json_is_true(json_array_get(e, 3)) && last_path[a] &&
                              strcmp(last_path[a], path) == 0 && t - w->last[a] < 0.05;
                last_path[a] = path;
                if (resend)
                        continue;
                unsigned s = (unsigned)(t - w->t0);
                if (s < 128 && ++w->per_second[s] > w->busiest)
                        w->busiest = w->per_second[s];
                w->requests++;
                int k = fleet_informer_of(json_string_value(json_array_get(e, 2)));
                if (k >= 0 && w->first_watch[a * FLEET_INFORMERS + k] < 0)
                        w->first_watch[a * FLEET_INFORMERS + k] = t;
                if (w->first[a] < 0)
                        w->first[a] = t;
                else if (t - w->last[a] < w->min_spacing)
                        w->min_spacing = t - w->last[a];
                w->last[a] = t;
        }
}

static double server_now(struct fake *f)
{
        json_t *j = get_json(f, "/_fake/requests");
        double now = json_number_value(json_object_get(j, "now"));
        json_decref(j);
        return now;
}

static void print_seconds(const struct window *w)
{
        fprintf(stderr, "requests per second after the restart:");
        for (unsigned s = 0; s < 70; s++)
                fprintf(stderr, " %u", w->per_second[s]);
        fprintf(stderr, "\n");
}

static void test_restart_spreads_reconnects(void **state)
{
        struct fake *f = *state;
        struct fleet fl;
        fleet_start(&fl, f, AGENTS);
        assert_true(fleet_wait_watching(&fl, 30ULL * 1000 * 1000) != UINT64_MAX);
        run_until(f, NULL, 0, 6ULL * 1000 * 1000); /* the start-up is over, pacing too */
        long cached = stat_value(f, "lists_cached"), consistent = stat_value(f, "lists_consistent");

        /* The restart: every stream cut, connections refused for 1.5 s, and every watch that
         * resumes from its resourceVersion expired (410), so each must relist. */
        fault(f, "{\"clear_requests\": true}");
        struct window w = { .t0 = server_now(f) };
        char restart[128];
        snprintf(restart, sizeof(restart),
                 "{\"expire_watches\": %d, \"close_watches\": true, \"refuse_ms\": 1500}",
                 AGENTS * FLEET_INFORMERS);
        fault(f, restart);
        run_until(f, NULL, 0, 1000 * 1000); /* the streams notice */
        uint64_t back = fleet_wait_watching(&fl, 70ULL * 1000 * 1000);
        assert_true(back != UINT64_MAX);
        analyse(f, &w);
        print_seconds(&w);
        fprintf(stderr,
                "%u requests; busiest second %u for %d agents; back after %.1f s; "
                "shortest spacing of one agent %.2f s\n",
                w.requests, w.busiest, AGENTS, (double)back / 1e6 + 1, w.min_spacing);

        if (w.busiest > AGENTS)
                fail_msg("%u requests in one second from %d agents", w.busiest, AGENTS);
        /* Paced to one every 1.5 s; network and scheduling delays may shorten a gap a little. */
        if (w.min_spacing < 1.0)
                fail_msg("an agent sent two requests %.3f s apart while recovering", w.min_spacing);
        if ((double)back / 1e6 + 1 > 60)
                fail_msg("the watches took %.1f s to come back", (double)back / 1e6 + 1);
        /* Spread, not aligned: the informers' first reconnect attempts are uniform over the
         * reconnect window (at least 4 s), so they cover several seconds and no second holds
         * most of them. */
        double lo = 1e9, hi = 0;
        unsigned in_second[128] = { 0 }, most = 0;
        for (unsigned k = 0; k < AGENTS * FLEET_INFORMERS; k++) {
                double t = w.first_watch[k];
                assert_true(t >= w.t0);
                lo = t < lo ? t : lo;
                hi = t > hi ? t : hi;
                unsigned s = (unsigned)(t - w.t0);
                if (s < 128 && ++in_second[s] > most)
                        most = in_second[s];
        }
        fprintf(stderr, "first reconnect attempts spread over %.2f s, at most %u in one second\n",
                hi - lo, most);
        if (hi - lo < 2.5 || most > AGENTS * FLEET_INFORMERS / 2)
                fail_msg("the informers' first reconnects were not spread: %.2f s, %u of %d in "
                         "one second",
                         hi - lo, most, AGENTS * FLEET_INFORMERS);
        /* Every watch was expired, and every relist came from the watch cache. */
        assert_int_equal(stat_value(f, "lists_consistent") - consistent, 0);
        assert_true(stat_value(f, "lists_cached") - cached >= AGENTS * FLEET_INFORMERS);
        json_decref(w.log);
        fleet_stop(&fl);
}

/* API Priority and Fairness answers 429 with Retry-After: the agent that got it asks nothing
 * more of that resource (the collection an informer lists and watches) before that time has
 * passed, whichever request asks; its other resources are held by their own 429s only (issue
 * 39: one 429 must not stop, say, the Lease holder's renewals). */
static void test_retry_after_holds_the_resource(void **state)
{
        struct fake *f = *state;
        struct fleet fl;
        fleet_start(&fl, f, AGENTS);
        assert_true(fleet_wait_watching(&fl, 30ULL * 1000 * 1000) != UINT64_MAX);
        run_until(f, NULL, 0, 6ULL * 1000 * 1000);
        fault(f, "{\"clear_requests\": true}");
        struct window w = { .t0 = server_now(f) };
        fault(f, "{\"throttle\": -1, \"retry_after_s\": 3, \"close_watches\": true}");
        run_until(f, NULL, 0, 8ULL * 1000 * 1000);
        fault(f, "{\"throttle\": 0}");
        assert_true(fleet_wait_watching(&fl, 70ULL * 1000 * 1000) != UINT64_MAX);
        analyse(f, &w);
        print_seconds(&w);
        unsigned throttled = 0;
        double throttled_at[AGENTS][FLEET_INFORMERS];
        for (unsigned a = 0; a < AGENTS; a++)
                for (unsigned k = 0; k < FLEET_INFORMERS; k++)
                        throttled_at[a][k] = -1;
        size_t i;
        json_t *e;
        json_array_foreach(w.log, i, e)
        {
                double t = json_number_value(json_array_get(e, 0));
                const char *path = json_string_value(json_array_get(e, 2));
                int a = fleet_agent_of(path), k = fleet_informer_of(path);
                if (t < w.t0 || a < 0 || a >= AGENTS || k < 0)
                        continue;
                if (throttled_at[a][k] >= 0 && t < throttled_at[a][k] + 3 - SPACING_SLACK_S)
                        fail_msg("agent %d asked %s again %.2f s after a 429 with Retry-After: 3",
                                 a, path, t - throttled_at[a][k]);
                if (json_integer_value(json_array_get(e, 4)) == 429) {
                        throttled_at[a][k] = t;
                        throttled++;
                }
        }
        assert_true(throttled >= AGENTS);
        if (w.busiest > AGENTS)
                fail_msg("%u requests in one second from %d agents", w.busiest, AGENTS);
        json_decref(w.log);
        fleet_stop(&fl);
}

int main(void)
{
        log_setup(LOG_TARGET_STDERR, LOG_WARNING);
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_restart_spreads_reconnects, start_fake,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_retry_after_holds_the_resource, start_fake,
                                                stop_fake),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
