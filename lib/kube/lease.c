/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/lease.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "kube/status.h"
#include "kube/watch.h"
#include "util/log.h"
#include "util/macro.h"

/* Takeover after kill -9 of the holder: at most duration + jitter (32 s) after its last renewal,
 * within issue 18's 40 s. The holder writes every renew period (6 writes/min for the whole
 * cluster); it steps down when it could not renew for the renew deadline, 10 s before anyone
 * else may take over. */
#define DEFAULT_DURATION_USEC (30ULL * 1000000)
#define DEFAULT_RENEW_USEC    (20ULL * 1000000)
#define DEFAULT_RETRY_USEC    (2ULL * 1000000)
#define DEFAULT_PERIOD_USEC   (10ULL * 1000000)
/* Longer timings make no sense for a leadership, and this keeps the checks' arithmetic far from
 * overflow. */
#define MAX_TIMING_USEC (24ULL * 3600 * 1000000)
/* client-go's JitterFactor: a candidate retries after up to 1.2 retry periods. */
#define JITTER_PERCENT 120
/* Acquisition is jittered by up to a retry period anyway; 50 ms of slack, not sd-event's
 * default 250 ms, keeps short test leases timeable. */
#define TIMER_ACCURACY_USEC (50ULL * 1000)
/* The step-down at the renew deadline is what keeps leaderships apart: no slack. */
#define DEADLINE_ACCURACY_USEC 1

enum lease_op {
        OP_NONE,
        OP_GET,
        OP_CREATE,
        OP_UPDATE,
        OP_RELEASE,
};

struct kube_lease {
        struct kube_http *http;
        char *namespace_, *name, *identity, *collection_path, *object_path, *field_selector;
        uint64_t duration_usec, renew_deadline_usec, retry_usec, renew_period_usec;
        void (*on_change)(struct kube_lease *, bool, void *);
        void *userdata;

        /* Non-holders watch the one Lease (fieldSelector metadata.name, served from the API
         * server's watch cache) instead of reading it every retry period: idle, they cost a
         * watch renewal every 5-10 minutes. */
        struct kube_informer *informer;
        json_t *server;         /* the Lease as last read, watched or written */
        json_t *observed_spec;  /* its spec when it last changed... */
        uint64_t observed_usec; /* ...and when we saw that, on our clock */
        uint64_t renewed_usec;  /* when our last successful write as leader was started */
        bool leader, stopped;
        unsigned renew_conflicts; /* 409s to our renewals since the last one that worked */

        struct kube_request *request;
        enum lease_op op;
        uint64_t request_usec; /* when request was started; when it was sent, once done */
        sd_event_source *timer;
        /* The leader's renew deadline, apart from timer: it fires whatever request is
         * outstanding (timer waits for the request's completion). */
        sd_event_source *deadline_timer;
        void (*release_done)(void *);
        void *release_userdata;
};

static uint64_t now_usec(const struct kube_lease *l)
{
        uint64_t now = 0;
        sd_event_now(kube_http_event(l->http), CLOCK_MONOTONIC, &now);
        return now;
}

/* metav1.MicroTime: RFC 3339 with microseconds. */
static void micro_time_now(char buf[static 64])
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        char base[32];
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, 64, "%s.%06dZ", base, (int)(ts.tv_nsec / 1000));
}

static void set_leader(struct kube_lease *l, bool leader)
{
        if (l->leader == leader)
                return;
        l->leader = leader;
        if (!leader && l->deadline_timer)
                sd_event_source_set_enabled(l->deadline_timer, SD_EVENT_OFF);
        if (leader)
                log_info("Lease %s/%s: acquired by %s", l->namespace_, l->name, l->identity);
        else
                log_info("Lease %s/%s: %s is no longer the holder", l->namespace_, l->name,
                         l->identity);
        if (l->on_change)
                l->on_change(l, leader, l->userdata);
}

static int timer_cb(sd_event_source *s, uint64_t usec, void *userdata);

static void schedule(struct kube_lease *l, uint64_t delay_usec)
{
        if (l->stopped)
                return;
        sd_event *event = kube_http_event(l->http);
        uint64_t at = now_usec(l) + delay_usec;
        if (!l->timer) {
                if (sd_event_add_time(event, &l->timer, CLOCK_MONOTONIC, at, TIMER_ACCURACY_USEC,
                                      timer_cb, l) < 0) {
                        log_error("Lease %s/%s: cannot arm its timer", l->namespace_, l->name);
                        return;
                }
        } else
                sd_event_source_set_time(l->timer, at);
        sd_event_source_set_enabled(l->timer, SD_EVENT_ONESHOT);
}

static uint64_t jitter(uint64_t max_usec)
{
        uint64_t rnd = 0;
        (void)!getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK);
        return rnd % (max_usec + 1);
}

/* A failed request: the leader retries every retry period (until its renew deadline), a
 * candidate after a retry period plus jitter (client-go's factor 1.2). */
static void schedule_retry(struct kube_lease *l)
{
        schedule(l, l->leader ? l->retry_usec : l->retry_usec + jitter(l->retry_usec / 5));
}

static void request_done(struct kube_request *req, int error, long status, const char *body,
                         size_t body_len, void *userdata);

static int start(struct kube_lease *l, enum lease_op op, const char *method, const char *path,
                 json_t *body)
{
        const struct kube_request_opts opts = {
                .method = method,
                .path = path,
                .content_type = body ? "application/json" : NULL,
                .on_done = request_done,
                .userdata = l,
                .timeout_s = 5,
                /* While kube_http paces a recovery, the holder's renewal (and its hand-over)
                 * goes ahead of the informers' relists: it has a deadline. */
                .urgent = l->leader || op == OP_RELEASE,
        };
        int k = kube_http_start_json(l->http, &opts, body, &l->request);
        if (k >= 0) {
                l->op = op;
                l->request_usec = now_usec(l);
        }
        return k;
}

static bool deadline_passed(const struct kube_lease *l)
{
        return now_usec(l) - l->renewed_usec >= l->renew_deadline_usec;
}

static void plan(struct kube_lease *l);

/* The holder stops leading: what it has in flight is cancelled (a renewal that lands anyway
 * only delays the others' takeover: they count the lease from when they see it change), the
 * callback is told, and it is a candidate again (the Lease may still name it: then it tries to
 * take it again, with the resourceVersion it last saw, so not over someone who took it). */
static void step_down(struct kube_lease *l)
{
        log_warning("Lease %s/%s: not renewed within the renew deadline (%.3g s); giving up "
                    "leadership",
                    l->namespace_, l->name, (double)l->renew_deadline_usec / 1e6);
        kube_request_cancel(l->request);
        l->request = NULL;
        l->op = OP_NONE;
        l->renew_conflicts = 0;
        set_leader(l, false);
        plan(l);
}

static int deadline_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct kube_lease *l = userdata;
        if (l->leader && !l->stopped)
                step_down(l);
        return 0;
}

/* Arms the step-down for renewed_usec + renew deadline. */
static int arm_deadline(struct kube_lease *l)
{
        uint64_t at = l->renewed_usec + l->renew_deadline_usec;
        int k;
        if (!l->deadline_timer)
                k = sd_event_add_time(kube_http_event(l->http), &l->deadline_timer, CLOCK_MONOTONIC,
                                      at, DEADLINE_ACCURACY_USEC, deadline_cb, l);
        else
                k = sd_event_source_set_time(l->deadline_timer, at);
        if (k >= 0)
                k = sd_event_source_set_enabled(l->deadline_timer, SD_EVENT_ONESHOT);
        if (k < 0)
                log_error_errno(k, "Lease %s/%s: cannot arm the renew deadline", l->namespace_,
                                l->name);
        return k;
}

static json_t *lease_spec(struct kube_lease *l, const char *holder, uint64_t duration_usec,
                          bool new_holder)
{
        char now[64];
        micro_time_now(now);
        json_t *old = json_object_get(l->server, "spec");
        json_int_t transitions = json_integer_value(json_object_get(old, "leaseTransitions"));
        const char *acquired = json_string_value(json_object_get(old, "acquireTime"));
        if (new_holder && l->server)
                transitions++;
        return json_pack("{s:s, s:I, s:s, s:s, s:I}", "holderIdentity", holder,
                         "leaseDurationSeconds", (json_int_t)(duration_usec / 1000000),
                         "acquireTime", new_holder || !acquired ? now : acquired, "renewTime", now,
                         "leaseTransitions", transitions);
}

/* Takes spec_owned (NULL: out of memory). */
static int start_write(struct kube_lease *l, enum lease_op op, json_t *spec_owned)
{
        json_auto_t *spec = spec_owned;
        if (!spec)
                return -ENOMEM;
        if (!l->server) {
                /* "o" steals spec also when json_pack fails. */
                json_auto_t *body =
                    json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion",
                              "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name",
                              l->name, "namespace", l->namespace_, "spec", TAKE_PTR(spec));
                return body ? start(l, OP_CREATE, "POST", l->collection_path, body) : -ENOMEM;
        }
        json_auto_t *body = json_deep_copy(l->server);
        if (!body)
                return -ENOMEM;
        json_object_set_new(body, "spec", TAKE_PTR(spec));
        return start(l, op, "PUT", l->object_path, body);
}

/* Takes note of the Lease as read or watched: the time its spec last changed, on our clock (so
 * clock skew between nodes does not matter). */
static void observe(struct kube_lease *l, json_t *lease)
{
        json_decref(l->server);
        l->server = lease ? json_deep_copy(lease) : NULL;
        json_t *spec = json_object_get(l->server, "spec");
        if (!l->observed_spec || !spec || !json_equal(l->observed_spec, spec)) {
                json_decref(l->observed_spec);
                l->observed_spec = spec ? json_deep_copy(spec) : NULL;
                l->observed_usec = now_usec(l);
        }
}

static void acquire(struct kube_lease *l)
{
        json_t *spec = json_object_get(l->server, "spec");
        const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
        bool ours = holder && strcmp(holder, l->identity) == 0;
        if (!ours && holder && *holder)
                log_info("Lease %s/%s: holder %s has not renewed for %llu s; taking over",
                         l->namespace_, l->name, holder,
                         (unsigned long long)((now_usec(l) - l->observed_usec) / 1000000));
        int k = start_write(l, l->server ? OP_UPDATE : OP_CREATE,
                            lease_spec(l, l->identity, l->duration_usec, !ours));
        if (k < 0) {
                log_warning_errno(k, "Lease %s/%s: cannot start a request", l->namespace_, l->name);
                schedule_retry(l);
        }
}

/* A candidate decides from what it last saw when to try to take the Lease: a free one (absent,
 * holder "", or ours from before) after a short jitter, a held one only once it has not
 * changed for leaseDurationSeconds (plus jitter, so that thousands of candidates do not all
 * write at the same instant; the first write wins and the others see it on the watch). */
/* When the Lease as last seen may be taken (0: it is free: absent, holder "" or us). */
static uint64_t lease_expiry(struct kube_lease *l)
{
        json_t *spec = json_object_get(l->server, "spec");
        const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
        if (!l->server || !holder || !*holder || strcmp(holder, l->identity) == 0)
                return 0;
        json_int_t secs = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
        uint64_t duration = secs > 0 ? (uint64_t)secs * 1000000 : l->duration_usec;
        return l->observed_usec + duration;
}

static void plan(struct kube_lease *l)
{
        if (l->stopped || l->leader || l->request)
                return;
        uint64_t expiry = lease_expiry(l), now = now_usec(l);
        schedule(l, (expiry > now ? expiry - now : 0) + jitter(l->retry_usec));
}

/* The watch: a candidate follows every change; the leader relies on its own writes (a stale
 * event must not make it step down; a write by someone else fails its next renewal with 409). */
static void lease_seen(struct kube_lease *l, json_t *lease)
{
        if (l->leader || l->stopped)
                return;
        observe(l, lease);
        plan(l);
}

static void watch_added(json_t *object, void *userdata)
{
        lease_seen(userdata, object);
}

static void watch_updated(json_t *old_object, json_t *object, void *userdata)
{
        lease_seen(userdata, object);
}

static void watch_deleted(json_t *object, void *userdata)
{
        lease_seen(userdata, NULL);
}

static void watch_synced(struct kube_informer *informer, void *userdata)
{
        struct kube_lease *l = userdata;
        if (l->leader || l->stopped)
                return;
        if (kube_cache_size(kube_informer_cache(informer)) == 0 && l->server)
                observe(l, NULL); /* listed and absent (deleted while we were away) */
        plan(l);
}

/* The leader read the Lease after a 409 to its renewal: it resigns only when the Lease names
 * another holder; while it names us, nobody, or is gone, it writes again, at once the first
 * time, after a retry period when renewals keep conflicting, and never past the renew
 * deadline (timer_cb() and request_done() enforce it as for any failed renewal). */
static void leader_checked(struct kube_lease *l)
{
        const char *holder = json_string_value(
            json_object_get(json_object_get(l->server, "spec"), "holderIdentity"));
        bool ours = holder && strcmp(holder, l->identity) == 0;
        if (holder && *holder && !ours) {
                log_info("Lease %s/%s: %s holds it now", l->namespace_, l->name, holder);
                l->renew_conflicts = 0;
                set_leader(l, false);
                plan(l);
                return;
        }
        if (deadline_passed(l)) {
                step_down(l);
                return;
        }
        log_info("Lease %s/%s: our renewal conflicted but no other holder is recorded; "
                 "renewing again as %s",
                 l->namespace_, l->name, l->identity);
        if (l->renew_conflicts > 1) {
                schedule_retry(l);
                return;
        }
        int k = start_write(l, l->server ? OP_UPDATE : OP_CREATE,
                            lease_spec(l, l->identity, l->duration_usec, !ours));
        if (k < 0) {
                log_warning_errno(k, "Lease %s/%s: cannot start a request", l->namespace_, l->name);
                schedule_retry(l);
        }
}

static void finish_release(struct kube_lease *l)
{
        void (*done)(void *) = l->release_done;
        l->release_done = NULL;
        if (done)
                done(l->release_userdata);
}

static void request_done(struct kube_request *req, int error, long status, const char *body,
                         size_t body_len, void *userdata)
{
        struct kube_lease *l = userdata;
        enum lease_op op = l->op;
        l->request = NULL;
        l->op = OP_NONE;
        /* When the server may first have acted on it: the request may have waited in
         * kube_http's queue since start(). */
        if (kube_request_sent_usec(req) > l->request_usec)
                l->request_usec = kube_request_sent_usec(req);

        if (op == OP_RELEASE) {
                if (error == 0 && status == 200)
                        log_info("Lease %s/%s: released", l->namespace_, l->name);
                else
                        log_warning("Lease %s/%s: release failed (HTTP %ld); the others take "
                                    "over when it expires",
                                    l->namespace_, l->name, status);
                finish_release(l);
                return;
        }
        if (l->stopped)
                return;
        if (error == 0 && (status == 200 || status == 201)) {
                json_auto_t *obj = json_loadb(body, body_len, 0, NULL);
                if (op == OP_GET) {
                        if (json_is_object(obj))
                                observe(l, obj);
                        if (l->leader) {
                                leader_checked(l);
                                return;
                        }
                        plan(l);
                        return;
                }
                if (json_is_object(obj)) {
                        json_decref(l->server);
                        l->server = TAKE_PTR(obj);
                }
                /* Our write went through: we hold the Lease. The others saw it no sooner
                 * than it was sent, so the renew deadline counts from then. */
                json_decref(l->observed_spec);
                l->observed_spec = json_deep_copy(json_object_get(l->server, "spec"));
                l->observed_usec = now_usec(l);
                l->renew_conflicts = 0;
                if (l->observed_usec - l->request_usec >= l->renew_deadline_usec) {
                        /* An answer later than the renew deadline (an overloaded server):
                         * leading on it could outlast what the others wait. The Lease names us
                         * now, so a candidate writes again and leads on a timely answer. */
                        log_warning("Lease %s/%s: the write took %.3g s, longer than the renew "
                                    "deadline; not leading on it",
                                    l->namespace_, l->name,
                                    (double)(l->observed_usec - l->request_usec) / 1e6);
                        if (l->leader)
                                step_down(l);
                        else
                                schedule_retry(l);
                        return;
                }
                l->renewed_usec = l->request_usec;
                if (arm_deadline(l) < 0) {
                        schedule_retry(l); /* cannot bound a leadership: do not lead */
                        return;
                }
                set_leader(l, true);
                schedule(l, l->renew_period_usec);
                return;
        }
        if (error == 0 && status == 404 && op == OP_GET) {
                observe(l, NULL);
                if (l->leader) {
                        leader_checked(l); /* deleted under us: create it again as ours */
                        return;
                }
                plan(l);
                return;
        }
        if (error == 0 && (status == 409 || status == 404)) {
                /* Someone wrote it meanwhile (or it vanished): read it again now. A leader
                 * stays leader until the read names another holder (leader_checked()): a 409
                 * to its own renewal often means only that its resourceVersion was stale. */
                if (l->leader && op == OP_UPDATE)
                        l->renew_conflicts++;
                int k = start(l, OP_GET, "GET", l->object_path, NULL);
                if (k < 0)
                        schedule_retry(l);
                return;
        }
        char desc[256];
        if (error < 0 && status == 0)
                snprintf(desc, sizeof(desc), "%s", strerror(-error));
        else
                kube_status_describe(status, body, body_len, desc, sizeof(desc));
        log_warning("Lease %s/%s: %s failed: %s", l->namespace_, l->name,
                    op == OP_GET ? "read" : "write", desc);
        if (l->leader && deadline_passed(l)) {
                step_down(l); /* the deadline timer is due at this very moment */
                return;
        }
        schedule_retry(l);
}

static int timer_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct kube_lease *l = userdata;
        /* A renewal still outstanding: its completion schedules the next step, and the renew
         * deadline (deadline_cb) does not wait for it. */
        if (l->request || l->stopped)
                return 0;
        if (l->leader && deadline_passed(l)) {
                step_down(l); /* due with this timer: whichever runs first */
                return 0;
        }
        if (l->leader && l->server) {
                /* Renew with the resourceVersion of our last write; a 409 means someone else
                 * wrote it, and we read it again. */
                int k =
                    start_write(l, OP_UPDATE, lease_spec(l, l->identity, l->duration_usec, false));
                if (k < 0) {
                        log_warning_errno(k, "Lease %s/%s: cannot start a request", l->namespace_,
                                          l->name);
                        schedule_retry(l);
                }
                return 0;
        }
        if (lease_expiry(l) > now_usec(l))
                plan(l); /* a retry after a failed attempt, but someone else renewed meanwhile */
        else
                acquire(l);
        return 0;
}

struct timings {
        uint64_t duration, renew_deadline, retry, renew_period;
};

static struct timings timings_of(const struct kube_lease_opts *o)
{
        struct timings t = {
                .duration = o->duration_usec ? o->duration_usec : DEFAULT_DURATION_USEC,
                .renew_deadline =
                    o->renew_deadline_usec ? o->renew_deadline_usec : DEFAULT_RENEW_USEC,
                .retry = o->retry_usec ? o->retry_usec : DEFAULT_RETRY_USEC,
                .renew_period = o->renew_period_usec,
        };
        /* Unset, a renewal every 10 s, but at least two tries within a shorter deadline. */
        if (!t.renew_period)
                t.renew_period = t.renew_deadline / 2 < DEFAULT_PERIOD_USEC ? t.renew_deadline / 2
                                                                            : DEFAULT_PERIOD_USEC;
        return t;
}

int kube_lease_check_timings(const struct kube_lease_opts *o, char *why, size_t why_size)
{
        const struct timings t = timings_of(o);
        const char *dn = o->duration_name ? o->duration_name : "lease duration";
        const char *rn = o->renew_deadline_name ? o->renew_deadline_name : "renew deadline";
        const char *tn = o->retry_name ? o->retry_name : "retry period";
        const char *pn = o->renew_period_name ? o->renew_period_name : "renew period";
        const double d = (double)t.duration / 1e6, r = (double)t.renew_deadline / 1e6;
        const struct {
                const char *name;
                uint64_t usec;
        } all[] = { { dn, t.duration },
                    { rn, t.renew_deadline },
                    { tn, t.retry },
                    { pn, t.renew_period } };
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                if (all[i].usec > MAX_TIMING_USEC) {
                        snprintf(why, why_size, "%s (%g s) must be at most 24 h", all[i].name,
                                 (double)all[i].usec / 1e6);
                        return -EINVAL;
                }
        if (t.duration % 1000000 != 0)
                snprintf(why, why_size,
                         "%s (%g s) must be a whole number of seconds: the Lease records it as "
                         "leaseDurationSeconds",
                         dn, d);
        else if (t.duration <= t.renew_deadline + KUBE_LEASE_SKEW_MARGIN_USEC)
                snprintf(why, why_size,
                         "%s (%g s) must be longer than %s (%g s) plus a %g s clock-skew "
                         "margin: the holder must have stopped leading before another may "
                         "take over",
                         dn, d, rn, r, (double)KUBE_LEASE_SKEW_MARGIN_USEC / 1e6);
        else if (t.renew_deadline * 100 <= t.retry * JITTER_PERCENT)
                snprintf(why, why_size,
                         "%s (%g s) must be longer than 1.2 times %s (%g s): a failed renewal "
                         "must be retried before the deadline",
                         rn, r, tn, (double)t.retry / 1e6);
        else if (t.renew_period >= t.renew_deadline)
                snprintf(why, why_size, "%s (%g s) must be shorter than %s (%g s)", pn,
                         (double)t.renew_period / 1e6, rn, r);
        else {
                if (why_size)
                        why[0] = '\0';
                return 0;
        }
        return -EINVAL;
}

int kube_lease_new(struct kube_http *http, const struct kube_lease_opts *opts,
                   struct kube_lease **ret)
{
        if (!opts->namespace_ || !opts->name || !opts->identity || !*opts->identity)
                return log_error_errno(-EINVAL, "Lease: namespace, name and identity are required");
        char why[256];
        if (kube_lease_check_timings(opts, why, sizeof(why)) < 0)
                return log_error_errno(-EINVAL, "Lease %s/%s: %s", opts->namespace_, opts->name,
                                       why);
        const struct timings t = timings_of(opts);
        _cleanup_(kube_lease_freep) struct kube_lease *l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->http = http;
        l->duration_usec = t.duration;
        l->renew_deadline_usec = t.renew_deadline;
        l->retry_usec = t.retry;
        l->renew_period_usec = t.renew_period;
        l->on_change = opts->on_change;
        l->userdata = opts->userdata;
        l->namespace_ = strdup(opts->namespace_);
        l->name = strdup(opts->name);
        l->identity = strdup(opts->identity);
        if (!l->namespace_ || !l->name || !l->identity ||
            asprintf(&l->collection_path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases",
                     opts->namespace_) < 0 ||
            asprintf(&l->object_path, "%s/%s", l->collection_path, opts->name) < 0 ||
            asprintf(&l->field_selector, "metadata.name=%s", opts->name) < 0)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;
        const struct kube_informer_opts inf_opts = {
                .kind = "Lease",
                .path = l->collection_path,
                .field_selector = l->field_selector,
                .callbacks = { .added = watch_added,
                               .updated = watch_updated,
                               .deleted = watch_deleted,
                               .userdata = l },
                .on_synced = watch_synced,
                .synced_userdata = l,
                .max_total_size = 64 * 1024, /* one small object */
        };
        int k = kube_informer_new(http, &inf_opts, &l->informer);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(l);
        return 0;
}

int kube_lease_start(struct kube_lease *l)
{
        /* The timer is armed once the watch listed the Lease. */
        int k = sd_event_add_time(kube_http_event(l->http), &l->timer, CLOCK_MONOTONIC, UINT64_MAX,
                                  TIMER_ACCURACY_USEC, timer_cb, l);
        if (k < 0)
                return log_error_errno(k, "Lease %s/%s: cannot arm its timer", l->namespace_,
                                       l->name);
        sd_event_source_set_enabled(l->timer, SD_EVENT_OFF);
        return kube_informer_start(l->informer);
}

struct kube_lease *kube_lease_free(struct kube_lease *l)
{
        if (!l)
                return NULL;
        kube_request_cancel(l->request);
        kube_informer_free(l->informer);
        sd_event_source_disable_unref(l->timer);
        sd_event_source_disable_unref(l->deadline_timer);
        json_decref(l->server);
        json_decref(l->observed_spec);
        free(l->namespace_);
        free(l->name);
        free(l->identity);
        free(l->collection_path);
        free(l->object_path);
        free(l->field_selector);
        free(l);
        return NULL;
}

bool kube_lease_is_leader(const struct kube_lease *l)
{
        if (!l || !l->leader)
                return false;
        /* Past the renew deadline it does not lead, even before deadline_cb ran: a process
         * resumed after a stop (SIGSTOP, a frozen VM) finds its timers and I/O due together, and
         * sd-event may dispatch a watch event or a pump before the step-down. */
        return !deadline_passed(l);
}

int kube_lease_release(struct kube_lease *l, void (*done)(void *), void *userdata)
{
        bool was_leader = l->leader;
        l->stopped = true;
        l->informer = kube_informer_free(l->informer);
        if (l->timer)
                sd_event_source_set_enabled(l->timer, SD_EVENT_OFF);
        kube_request_cancel(l->request);
        l->request = NULL;
        l->op = OP_NONE;
        set_leader(l, false);
        if (!was_leader || !l->server) {
                if (done)
                        done(userdata);
                return 1;
        }
        l->release_done = done;
        l->release_userdata = userdata;
        /* client-go's release: no holder, a 1 s duration, the transitions kept. */
        json_t *spec = lease_spec(l, "", 1000000, false);
        int k = start_write(l, OP_RELEASE, spec);
        if (k < 0) {
                finish_release(l);
                return 1;
        }
        return 0;
}
