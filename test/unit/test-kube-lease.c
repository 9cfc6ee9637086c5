/* SPDX-License-Identifier: Apache-2.0 */
/* Leader election over a coordination.k8s.io/v1 Lease (lib/kube/lease.c) against the fake API
 * server, with short timings (2 s lease, 0.9 s renew deadline, 0.25 s retry) so the
 * client-go rules can be timed: one holder; a crashed holder is replaced only after the lease
 * expired on the candidate's clock; a released Lease is taken at once (well before the 1 s a
 * released Lease still names); a holder that cannot renew stops leading before anyone may take
 * over, also while its renewal waits out a 429's Retry-After; a 429 to another request does
 * not hold the renewals; timings that would let leaderships overlap are refused. Lower bounds
 * are the rules; upper bounds only catch a hang or the wrong rule, with room for a slow
 * machine (ASan, valgrind). */
#define WAIT_USEC (10 * 1000 * 1000ULL) /* hang deadline for what should come at once */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "kube-fake.h"
#include "kube/lease.h"

#define NS            "lease-ns"
#define DURATION_USEC (2000 * 1000ULL)
#define RENEW_USEC    (900 * 1000ULL)
#define RETRY_USEC    (250 * 1000ULL)
#define LEASE_PATH    "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases/test-lease"

struct candidate {
        struct kube_lease *lease;
        int leader; /* 1 while leading */
        int changes;
        uint64_t changed_usec;
        struct candidate *peer; /* the other candidate, when the test watches for overlap */
        int overlaps;           /* times this one became leader while the peer led */
};

static void on_change(struct kube_lease *l, bool leader, void *userdata)
{
        struct candidate *c = userdata;
        c->leader = leader;
        c->changes++;
        c->changed_usec = now_usec();
        if (leader && c->peer && c->peer->leader) {
                print_message("a candidate became leader while the other still leads\n");
                c->overlaps++;
        }
}

static void start_candidate_on(struct kube_http *http, struct candidate *c, const char *identity)
{
        *c = (struct candidate){};
        const struct kube_lease_opts o = { .namespace_ = NS,
                                           .name = "test-lease",
                                           .identity = identity,
                                           .duration_usec = DURATION_USEC,
                                           .renew_deadline_usec = RENEW_USEC,
                                           .retry_usec = RETRY_USEC,
                                           .renew_period_usec = RETRY_USEC,
                                           .on_change = on_change,
                                           .userdata = c };
        assert_int_equal(kube_lease_new(http, &o, &c->lease), 0);
        assert_int_equal(kube_lease_start(c->lease), 0);
}

static void start_candidate(struct fake *f, struct candidate *c, const char *identity)
{
        start_candidate_on(f->agent, c, identity);
}

static char *holder(struct fake *f)
{
        json_t *l = get_json(f, LEASE_PATH);
        char *h = strdup(
            json_string_value(json_object_get(json_object_get(l, "spec"), "holderIdentity")));
        json_decref(l);
        return h;
}

static int setup(void **state)
{
        start_fake(state);
        struct fake *f = *state;
        assert_int_equal(request(f, f->admin, "POST", "/api/v1/namespaces", "application/json",
                                 "{\"metadata\":{\"name\":\"" NS "\"}}", NULL, 0),
                         201);
        return 0;
}

static void test_one_holder_and_takeover(void **state)
{
        struct fake *f = *state;
        struct candidate a, b;
        start_candidate(f, &a, "node-a");
        assert_true(run_until(f, &a.leader, 1, WAIT_USEC));
        start_candidate(f, &b, "node-b");
        run_until(f, NULL, 0, 500 * 1000); /* b listed and watches */
        /* Idle, the candidate costs nothing: it watches the Lease instead of reading it every
         * retry period, so the server sees the holder's renewals only (one per renew period,
         * here 0.25 s: 6 in 1.5 s; a polling candidate would add another 5). The window is
         * the one measured, which a slow machine stretches beyond the 1.5 s asked for. */
        const uint64_t w0 = now_usec();
        json_t *s0 = get_json(f, "/_fake/stats");
        run_until(f, NULL, 0, 1500 * 1000);
        json_t *s1 = get_json(f, "/_fake/stats");
        const uint64_t window = now_usec() - w0;
        json_int_t requests = json_integer_value(json_object_get(s1, "requests")) -
                              json_integer_value(json_object_get(s0, "requests"));
        json_decref(s0);
        json_decref(s1);
        if (requests > (json_int_t)(window / RETRY_USEC + 1))
                fail_msg("%lld requests in %.2f s: more than the holder's renewals",
                         (long long)requests, (double)window / 1e6);
        assert_int_equal(a.leader, 1);
        assert_int_equal(b.leader, 0);
        assert_int_equal(b.changes, 0);
        char *h = holder(f);
        assert_string_equal(h, "node-a");
        free(h);

        /* kill -9: no release. b waits for the full duration on its own clock (the rule: not
         * sooner), then takes over (within a hang deadline; how soon after is not timed here,
         * as a slow machine delays it). */
        uint64_t t0 = now_usec();
        kube_lease_free(a.lease);
        assert_true(run_until(f, &b.leader, 1, DURATION_USEC + WAIT_USEC));
        uint64_t took = b.changed_usec - t0;
        print_message("takeover after %llu ms (lease %llu ms)\n", (unsigned long long)took / 1000,
                      (unsigned long long)DURATION_USEC / 1000);
        if (took < DURATION_USEC - 2 * RETRY_USEC)
                fail_msg("takeover after %llu ms, before the %llu ms lease expired",
                         (unsigned long long)took / 1000, (unsigned long long)DURATION_USEC / 1000);
        json_t *l = get_json(f, LEASE_PATH);
        json_t *spec = json_object_get(l, "spec");
        assert_string_equal(json_string_value(json_object_get(spec, "holderIdentity")), "node-b");
        assert_int_equal(json_integer_value(json_object_get(spec, "leaseTransitions")), 1);
        assert_int_equal(json_integer_value(json_object_get(spec, "leaseDurationSeconds")), 2);
        json_decref(l);
        kube_lease_free(b.lease);
}

static int released;
static void on_released(void *userdata)
{
        released = 1;
}

static void test_release_hands_over_at_once(void **state)
{
        struct fake *f = *state;
        struct candidate a, b;
        start_candidate(f, &a, "node-a");
        assert_true(run_until(f, &a.leader, 1, 5 * 1000 * 1000));
        start_candidate(f, &b, "node-b");
        run_until(f, NULL, 0, 500 * 1000);
        released = 0;
        assert_int_equal(kube_lease_release(a.lease, on_released, NULL), 0);
        assert_int_equal(a.leader, 0); /* stops leading before the write */
        assert_true(run_until(f, &released, 1, WAIT_USEC));
        uint64_t t0 = now_usec();
        assert_true(run_until(f, &b.leader, 1, WAIT_USEC));
        /* At once, not after the released Lease's 1 s duration (what a candidate that took the
         * release for a renewal would wait): the bound sits just below that, the most room for
         * a slow machine that still tells the two apart. */
        const uint64_t took = b.changed_usec > t0 ? b.changed_usec - t0 : 0; /* may precede */
        if (took > 900 * 1000)
                fail_msg("takeover after a release took %llu ms", (unsigned long long)took / 1000);
        /* Releasing a Lease one does not hold writes nothing. */
        released = 0;
        assert_int_equal(kube_lease_release(a.lease, on_released, NULL), 1);
        assert_int_equal(released, 1);
        kube_lease_free(a.lease);
        kube_lease_free(b.lease);
}

static void test_renew_deadline(void **state)
{
        struct fake *f = *state;
        struct candidate a;
        start_candidate(f, &a, "node-c");
        assert_true(run_until(f, &a.leader, 1, 5 * 1000 * 1000));
        run_until(f, NULL, 0, 300 * 1000);
        /* The API server goes away: a must stop leading after the renew deadline, before
         * another candidate could take over (duration). */
        uint64_t t0 = now_usec();
        fault(f, "{\"refuse_ms\": 2500}");
        int not_leader = 0;
        while (a.leader && now_usec() - t0 < 3 * 1000 * 1000)
                sd_event_run(f->event, 50 * 1000);
        not_leader = !a.leader;
        assert_true(not_leader);
        uint64_t took = a.changed_usec - t0;
        if (took >= DURATION_USEC || took < RENEW_USEC - 2 * RETRY_USEC)
                fail_msg("gave up leading after %llu ms (renew deadline %llu, lease %llu)",
                         (unsigned long long)took / 1000, (unsigned long long)RENEW_USEC / 1000,
                         (unsigned long long)DURATION_USEC / 1000);
        /* Back: the Lease still names it, so it takes it again at once. */
        assert_true(run_until(f, &a.leader, 1, 5 * 1000 * 1000));
        kube_lease_free(a.lease);
}

/* A 409 to the holder's own renewal (a server that lost our write's resourceVersion, a
 * concurrent no-op writer): the Lease still names it, so it reads it and renews again instead
 * of resigning and re-acquiring (which would restart everything that follows leadership). */
static void test_conflict_on_renewal_keeps_leadership(void **state)
{
        struct fake *f = *state;
        struct candidate a;
        start_candidate(f, &a, "node-a");
        assert_true(run_until(f, &a.leader, 1, 5 * 1000 * 1000));
        run_until(f, NULL, 0, 100 * 1000);
        assert_int_equal(a.changes, 1);
        long requests_before = stat_value(f, "requests");
        fault(f, "{\"conflicts\": 2}");
        /* Several renew periods: the two conflicts hit renewals, every later one succeeds. */
        run_until(f, NULL, 0, 6 * RETRY_USEC);
        json_t *faults = get_json(f, "/_fake/faults");
        assert_int_equal(json_integer_value(json_object_get(faults, "conflicts")), 0);
        json_decref(faults);
        if (a.changes != 1 || a.leader != 1)
                fail_msg("the holder changed leadership %d times after a 409 to its renewal "
                         "(leader now %d)",
                         a.changes - 1, a.leader);
        char *h = holder(f);
        assert_string_equal(h, "node-a");
        free(h);
        assert_true(stat_value(f, "requests") > requests_before);
        json_t *l = get_json(f, LEASE_PATH);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(l, "spec"), "leaseTransitions")), 0);
        json_decref(l);
        kube_lease_free(a.lease);
}

/* A 409 because someone else took the Lease: the read names the other holder, and only then
 * does the old holder resign. */
static void test_conflict_from_new_holder_resigns(void **state)
{
        struct fake *f = *state;
        struct candidate a;
        start_candidate(f, &a, "node-a");
        assert_true(run_until(f, &a.leader, 1, 5 * 1000 * 1000));
        json_t *l = get_json(f, LEASE_PATH);
        json_object_set_new(json_object_get(l, "spec"), "holderIdentity", json_string("node-z"));
        char *body = json_dumps(l, JSON_COMPACT);
        json_decref(l);
        assert_int_equal(request(f, f->admin, "PUT", LEASE_PATH, "application/json", body, NULL, 0),
                         200);
        free(body);
        int resigned = 0;
        uint64_t t0 = now_usec();
        while (!resigned && now_usec() - t0 < WAIT_USEC) {
                sd_event_run(f->event, 50 * 1000);
                resigned = !a.leader;
        }
        assert_true(resigned);
        run_until(f, NULL, 0, 4 * RETRY_USEC);
        assert_int_equal(a.leader, 0);
        char *h = holder(f);
        assert_string_equal(h, "node-z");
        free(h);
        kube_lease_free(a.lease);
}

/* Two candidates as two processes would be: each with its own HTTP client (connections,
 * pacing, Retry-After), both watching for the other leading at the same time. */
struct pair {
        struct kube_http *http_a, *http_b;
        struct candidate a, b;
};

static void start_pair(struct fake *f, struct pair *p)
{
        assert_int_equal(kube_http_new(f->event, &f->agent_cfg, &p->http_a), 0);
        assert_int_equal(kube_http_new(f->event, &f->agent_cfg, &p->http_b), 0);
        start_candidate_on(p->http_a, &p->a, "node-a");
        assert_true(run_until(f, &p->a.leader, 1, WAIT_USEC));
        start_candidate_on(p->http_b, &p->b, "node-b");
        p->a.peer = &p->b;
        p->b.peer = &p->a;
        run_until(f, NULL, 0, 500 * 1000); /* b listed and watches */
        assert_int_equal(p->b.changes, 0);
}

static void stop_pair(struct pair *p)
{
        kube_lease_free(p->a.lease);
        kube_lease_free(p->b.lease);
        kube_http_free(p->http_a);
        kube_http_free(p->http_b);
}

/* Issue 39.1: API Priority and Fairness answers the holder's renewal with 429 and a
 * Retry-After far beyond the lease (20 s against 2 s). The renewal waits that out, but the
 * holder must stop leading at its renew deadline, before the other candidate may take over:
 * never two leaders. */
static void test_429_on_renewal_never_two_leaders(void **state)
{
        struct fake *f = *state;
        struct pair p;
        start_pair(f, &p);
        fault(f, "{\"throttle\": 1, \"retry_after_s\": 20, \"throttle_method\": \"PUT\", "
                 "\"throttle_path\": \"" LEASE_PATH "\"}");
        /* b takes over once a's renewals stopped for the lease duration (hang deadline well
         * inside the 20 s, so a holder that waited the Retry-After out cannot pass). */
        assert_true(run_until(f, &p.b.leader, 1, DURATION_USEC + WAIT_USEC));
        assert_int_equal(stat_value(f, "throttled"), 1);
        assert_int_equal(p.b.overlaps, 0);
        /* a was told, and before b led. */
        assert_int_equal(p.a.leader, 0);
        assert_int_equal(p.a.changes, 2);
        assert_true(p.a.changed_usec <= p.b.changed_usec);
        /* And stays out: the Lease names b, whose renewals a's late write cannot undo. */
        run_until(f, NULL, 0, 2 * DURATION_USEC);
        assert_int_equal(p.a.overlaps + p.b.overlaps, 0);
        assert_int_equal(p.a.leader, 0);
        assert_int_equal(p.b.leader, 1);
        char *h = holder(f);
        assert_string_equal(h, "node-b");
        free(h);
        stop_pair(&p);
}

static void nodes_done(struct kube_request *req, int error, long status, const char *body,
                       size_t body_len, void *userdata)
{
        *(long *)userdata = error < 0 ? error : status;
}

/* Issue 39.1/39.5: a 429 with a long Retry-After to another request of the holder's process
 * holds that request's resource only: the renewals go on, the holder keeps leading, the other
 * candidate never leads; a later request to the throttled resource waits the Retry-After out. */
static void test_429_elsewhere_does_not_hold_renewals(void **state)
{
        struct fake *f = *state;
        struct pair p;
        start_pair(f, &p);
        fault(f, "{\"throttle\": 1, \"retry_after_s\": 20, \"throttle_path\": \"/api/v1/nodes\"}");
        long first = 0, second = 0;
        const struct kube_request_opts o = { .path = "/api/v1/nodes",
                                             .on_done = nodes_done,
                                             .userdata = &first };
        assert_int_equal(kube_http_start(p.http_a, &o, NULL), 0);
        uint64_t t0 = now_usec();
        while (!first && now_usec() - t0 < WAIT_USEC)
                sd_event_run(f->event, 50 * 1000);
        assert_int_equal(first, 429);
        fault(f, "{\"clear_requests\": true}");
        const struct kube_request_opts o2 = { .path = "/api/v1/nodes",
                                              .on_done = nodes_done,
                                              .userdata = &second };
        struct kube_request *again = NULL;
        assert_int_equal(kube_http_start(p.http_a, &o2, &again), 0);
        /* Three lease durations: without renewals b would have taken over twice over. */
        run_until(f, NULL, 0, 3 * DURATION_USEC);
        assert_int_equal(p.a.leader, 1);
        assert_int_equal(p.a.changes, 1);
        assert_int_equal(p.b.changes, 0);
        char *h = holder(f);
        assert_string_equal(h, "node-a");
        free(h);
        /* The renewals reached the server meanwhile; the second list of nodes did not. */
        json_t *log = get_json(f, "/_fake/requests");
        unsigned renewals = 0, lists = 0;
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(log, "requests"), i, e)
        {
                const char *method = json_string_value(json_array_get(e, 1));
                const char *path = json_string_value(json_array_get(e, 2));
                renewals += strcmp(method, "PUT") == 0 && strcmp(path, LEASE_PATH) == 0;
                lists += strncmp(path, "/api/v1/nodes", 13) == 0;
        }
        json_decref(log);
        print_message("%u renewals while /api/v1/nodes was held\n", renewals);
        assert_true(renewals >= 2);
        assert_int_equal(lists, 0);
        assert_int_equal(second, 0);
        kube_request_cancel(again);
        stop_pair(&p);
}

struct resumed {
        struct candidate *c;
        int ran, is_leader, told_leader;
};

static int first_after_resume(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct resumed *r = userdata;
        r->ran = 1;
        r->is_leader = kube_lease_is_leader(r->c->lease);
        r->told_leader = r->c->leader;
        return 0;
}

/* A holder whose process was stopped (SIGSTOP, a frozen VM) for longer than the lease wakes up
 * with its renew deadline, its watch events and its users' timers all due at once. Whatever
 * sd-event dispatches first must already see that it does not lead: the NAD controller asks
 * kube_lease_is_leader() before every write. */
static void test_resumed_past_deadline_not_leader(void **state)
{
        struct fake *f = *state;
        struct candidate a;
        start_candidate(f, &a, "node-a");
        assert_true(run_until(f, &a.leader, 1, WAIT_USEC));
        run_until(f, NULL, 0, 2 * RETRY_USEC);
        assert_true(kube_lease_is_leader(a.lease));
        while (sd_event_run(f->event, 0) > 0)
                ; /* nothing left pending from before the stop */
        /* Stopped: the loop does not run for longer than the lease. */
        const struct timespec stop = { .tv_sec = (DURATION_USEC + RETRY_USEC) / 1000000,
                                       .tv_nsec = (DURATION_USEC + RETRY_USEC) % 1000000 * 1000 };
        nanosleep(&stop, NULL);
        /* The first thing dispatched after the resume, ahead of the step-down's own timer. */
        struct resumed r = { .c = &a };
        sd_event_source *first = NULL;
        assert_int_equal(
            sd_event_add_time(f->event, &first, CLOCK_MONOTONIC, 1, 0, first_after_resume, &r), 0);
        assert_int_equal(sd_event_source_set_priority(first, SD_EVENT_PRIORITY_IMPORTANT - 1), 0);
        run_until(f, &r.ran, 1, WAIT_USEC);
        sd_event_source_disable_unref(first);
        assert_int_equal(r.ran, 1);
        if (!r.told_leader)
                print_message("the step-down ran first: this run does not tell\n");
        if (r.is_leader)
                fail_msg("resumed %llu ms after its last renewal (renew deadline %llu ms), it "
                         "still said it leads",
                         (unsigned long long)(DURATION_USEC + RETRY_USEC) / 1000,
                         (unsigned long long)RENEW_USEC / 1000);
        /* Then it is told, and (the only candidate, the Lease naming it) leads again. */
        assert_true(run_until(f, &a.changes, 3, WAIT_USEC));
        assert_true(run_until(f, &a.leader, 1, WAIT_USEC));
        kube_lease_free(a.lease);
}

static int new_lease(struct fake *f, uint64_t duration, uint64_t renew_deadline, uint64_t retry,
                     char *why, size_t why_size)
{
        const struct kube_lease_opts o = { .namespace_ = NS,
                                           .name = "test-lease",
                                           .identity = "node-a",
                                           .duration_usec = duration,
                                           .renew_deadline_usec = renew_deadline,
                                           .retry_usec = retry,
                                           .duration_name = "--lease-duration",
                                           .renew_deadline_name = "--renew-deadline",
                                           .retry_name = "--retry-period" };
        int k = kube_lease_check_timings(&o, why, why_size);
        struct kube_lease *l = NULL;
        assert_int_equal(kube_lease_new(f->agent, &o, &l), k);
        kube_lease_free(l);
        return k;
}

/* client-go's rules (leaseDuration > renewDeadline > 1.2 retryPeriod) plus a clock-skew
 * margin between the renew deadline and the lease, refused with the setting named. */
static void test_timings_validated(void **state)
{
        struct fake *f = *state;
        char why[256] = "";
        const uint64_t s = 1000 * 1000;
        assert_int_equal(new_lease(f, 30 * s, 20 * s, 2 * s, why, sizeof(why)), 0);
        assert_int_equal(new_lease(f, 0, 0, 0, why, sizeof(why)), 0); /* the defaults */
        assert_int_equal(new_lease(f, 4 * s, 3500 * 1000, 250 * 1000, why, sizeof(why)), -EINVAL);
        print_message("%s\n", why);
        assert_non_null(strstr(why, "--lease-duration"));
        assert_non_null(strstr(why, "--renew-deadline"));
        assert_int_equal(new_lease(f, 20 * s, 20 * s, 2 * s, why, sizeof(why)), -EINVAL);
        assert_non_null(strstr(why, "--lease-duration"));
        assert_int_equal(new_lease(f, 30 * s, 2 * s, 2 * s, why, sizeof(why)), -EINVAL);
        print_message("%s\n", why);
        assert_non_null(strstr(why, "--renew-deadline"));
        assert_non_null(strstr(why, "--retry-period"));
        assert_int_equal(new_lease(f, 100000 * s, 20 * s, 2 * s, why, sizeof(why)), -EINVAL);
        assert_non_null(strstr(why, "--lease-duration"));
        /* leaseDurationSeconds is whole seconds: 2.5 s would be written as 2. */
        assert_int_equal(new_lease(f, 2500 * 1000, 1 * s, 250 * 1000, why, sizeof(why)), -EINVAL);
        print_message("%s\n", why);
        assert_non_null(strstr(why, "--lease-duration"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_one_holder_and_takeover, setup, stop_fake),
                cmocka_unit_test_setup_teardown(test_release_hands_over_at_once, setup, stop_fake),
                cmocka_unit_test_setup_teardown(test_renew_deadline, setup, stop_fake),
                cmocka_unit_test_setup_teardown(test_conflict_on_renewal_keeps_leadership, setup,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_conflict_from_new_holder_resigns, setup,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_429_on_renewal_never_two_leaders, setup,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_429_elsewhere_does_not_hold_renewals, setup,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_resumed_past_deadline_not_leader, setup,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_timings_validated, setup, stop_fake),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
