/* SPDX-License-Identifier: Apache-2.0 */
/* Leader election over a coordination.k8s.io/v1 Lease (lib/kube/lease.c) against the fake API
 * server, with short timings (2 s lease, 1.5 s renew deadline, 0.25 s retry) so the
 * client-go rules can be timed: one holder; a crashed holder is replaced only after the lease
 * expired on the candidate's clock; a released Lease is taken at once (well before the 1 s a
 * released Lease still names); a holder that cannot renew stops leading before anyone may take
 * over. Lower bounds are the rules; upper bounds only catch a hang or the wrong rule, with room
 * for a slow machine (ASan, valgrind). */
#define WAIT_USEC (10 * 1000 * 1000ULL) /* hang deadline for what should come at once */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "kube-fake.h"
#include "kube/lease.h"

#define NS            "lease-ns"
#define DURATION_USEC (2000 * 1000ULL)
#define RENEW_USEC    (1500 * 1000ULL)
#define RETRY_USEC    (250 * 1000ULL)
#define LEASE_PATH    "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases/test-lease"

struct candidate {
        struct kube_lease *lease;
        int leader; /* 1 while leading */
        int changes;
        uint64_t changed_usec;
};

static void on_change(struct kube_lease *l, bool leader, void *userdata)
{
        struct candidate *c = userdata;
        c->leader = leader;
        c->changes++;
        c->changed_usec = now_usec();
}

static void start_candidate(struct fake *f, struct candidate *c, const char *identity)
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
        assert_int_equal(kube_lease_new(f->agent, &o, &c->lease), 0);
        assert_int_equal(kube_lease_start(c->lease), 0);
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
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
