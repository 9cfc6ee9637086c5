/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for lib/kube/watch (the informer) and lib/kube/http against the fake API server
 * (test/fake-apiserver, started here on 127.0.0.1 with an ephemeral port): paged lists,
 * callbacks, field selectors, relist-and-reconcile after 410 while away, and backoff. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <valgrind/valgrind.h>

#include "kube/http.h"
#include "kube/json-split.h"
#include "kube/kubeconfig.h"
#include "kube/watch.h"
#include "util/log.h"

#include "kube-fake.h"

static void add_line(struct seen *s, const char *what, json_t *o)
{
        const char *name =
            json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
        if (s->n < 64)
                snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s %s", what, name);
        s->n++;
}

static void on_added(json_t *o, void *u)
{
        add_line(u, "added", o);
}

static void on_updated(json_t *old, json_t *o, void *u)
{
        add_line(u, "updated", o);
}

static void on_deleted(json_t *o, void *u)
{
        add_line(u, "deleted", o);
}

static void on_synced(struct kube_informer *inf, void *u)
{
        ((struct seen *)u)->synced++;
}

/* The tests below count requests in a fixed window: the upper bound of the count is the
 * behaviour (a backoff, not a spin), and a slow machine only lowers it. Their lower bound
 * ("it tried again at all") must not depend on the machine's speed: if the window saw too few,
 * wait on for them with a hang deadline. Returns the count above `base`. */
static long wait_for_stat(struct fake *f, const char *name, long base, long want)
{
        const uint64_t deadline = now_usec() + 30 * 1000 * 1000ULL;
        long n = stat_value(f, name) - base;
        while (n < want && now_usec() < deadline) {
                run_until(f, NULL, 0, 200 * 1000);
                n = stat_value(f, name) - base;
        }
        return n;
}

/* A Node informer reporting into s, watches of 30 s; the caller adjusts the rest. */
static struct kube_informer_opts node_informer_opts(struct seen *s)
{
        return (struct kube_informer_opts){
                .kind = "Node",
                .path = "/api/v1/nodes",
                .callbacks = { on_added, on_updated, on_deleted, s },
                .on_synced = on_synced,
                .synced_userdata = s,
                .watch_timeout_s = 30,
        };
}

static struct kube_informer *started_informer(struct fake *f, const struct kube_informer_opts *o)
{
        struct kube_informer *inf;
        assert_int_equal(kube_informer_new(f->agent, o, &inf), 0);
        assert_int_equal(kube_informer_start(inf), 0);
        return inf;
}

static struct kube_informer *node_informer(struct fake *f, struct seen *s, const char *selector,
                                           unsigned page_size)
{
        struct kube_informer_opts o = node_informer_opts(s);
        o.field_selector = selector;
        o.list_page_size = page_size;
        return started_informer(f, &o);
}

/* Labels node `name` with label=value. */
static void label_node(struct fake *f, const char *name, const char *label, const char *value)
{
        char path[64], body[128];
        snprintf(path, sizeof(path), "/api/v1/nodes/%s", name);
        snprintf(body, sizeof(body), "{\"metadata\":{\"labels\":{\"%s\":\"%s\"}}}", label, value);
        assert_int_equal(
            request(f, f->admin, "PATCH", path, "application/merge-patch+json", body, NULL, 0),
            200);
}

static void test_paged_list_and_updates(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        long lists = stat_value(f, "lists");
        struct kube_informer *inf = node_informer(f, &s, NULL, 2);
        assert_true(run_until(f, &s.synced, 1, 10 * 1000 * 1000));
        assert_int_equal(s.n, 3);
        assert_string_equal(s.lines[0], "added n1");
        assert_string_equal(s.lines[2], "added n3");
        assert_int_equal(kube_cache_size(kube_informer_cache(inf)), 3);
        /* The first list comes from the watch cache (resourceVersion=0), which ignores limit. */
        assert_int_equal(stat_value(f, "lists") - lists, 1);
        assert_int_equal(stat_value(f, "lists_cached"), 1);
        assert_int_equal(stat_value(f, "lists_consistent"), 0);

        /* After a 410 the relist is "not older than" the resourceVersion we had, answered
         * from the watch cache like the first (client-go's reflector does the same). */
        fault(f, "{\"expire_watches\":1}");
        fault(f, "{\"close_watches\":true}");
        assert_true(run_until(f, &s.synced, 2, 15 * 1000 * 1000));
        assert_int_equal(stat_value(f, "lists_consistent"), 0);
        assert_int_equal(stat_value(f, "lists_cached"), 2);

        /* When the server cannot answer that either (no watch cache, history compacted), the
         * list is a consistent read, paged: 3 nodes in pages of 2. */
        fault(f, "{\"expire_watches\":1, \"expire_lists\":1}");
        fault(f, "{\"close_watches\":true}");
        assert_true(run_until(f, &s.synced, 3, 30 * 1000 * 1000));
        assert_int_equal(stat_value(f, "lists_consistent"), 2);
        assert_int_equal(stat_value(f, "lists_cached"), 2);
        int after_relist = s.n;
        assert_true(kube_informer_has_synced(inf));
        assert_true(strlen(kube_informer_resource_version(inf)) > 0);

        label_node(f, "n2", "highnet-node", "true");
        assert_true(run_until(f, &s.n, after_relist + 1, 10 * 1000 * 1000));
        assert_string_equal(s.lines[after_relist], "updated n2");
        json_t *n2 = kube_cache_get(kube_informer_cache(inf), NULL, "n2");
        assert_string_equal(
            json_string_value(json_object_get(
                json_object_get(json_object_get(n2, "metadata"), "labels"), "highnet-node")),
            "true");
        kube_informer_free(inf);
}

static void test_field_selector(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        struct kube_informer *inf = node_informer(f, &s, "metadata.name=n1", 0);
        assert_true(run_until(f, &s.synced, 1, 10 * 1000 * 1000));
        assert_int_equal(s.n, 1);
        assert_string_equal(s.lines[0], "added n1");
        label_node(f, "n3", "x", "1");
        label_node(f, "n1", "x", "1");
        assert_true(run_until(f, &s.n, 2, 10 * 1000 * 1000));
        assert_string_equal(s.lines[1], "updated n1");
        run_until(f, NULL, 0, 300 * 1000);
        assert_int_equal(s.n, 2); /* n3 never shows up */
        kube_informer_free(inf);
}

static void test_deleted_while_away(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        struct kube_informer *inf = node_informer(f, &s, NULL, 0);
        assert_true(run_until(f, &s.synced, 1, 10 * 1000 * 1000));
        int before = s.n;

        /* Shut the agent out, delete a node, forget the history, let the agent back in. */
        fault(f, "{\"reject_token\":true}");
        fault(f, "{\"close_watches\":true}");
        run_until(f, NULL, 0, 300 * 1000);
        assert_int_equal(request(f, f->admin, "DELETE", "/api/v1/nodes/n3", NULL, NULL, NULL, 0),
                         200);
        fault(f, "{\"compact\":true}");
        fault(f, "{\"reject_token\":false}");
        assert_true(run_until(f, &s.n, before + 1, 40 * 1000 * 1000));
        assert_string_equal(s.lines[before], "deleted n3");
        assert_int_equal(s.synced, 2); /* the 410 made it list again */
        assert_int_equal(kube_cache_size(kube_informer_cache(inf)), 2);
        kube_informer_free(inf);
}

static void test_backoff(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        /* No CRDs on the fake: every list is a 404. Retries are spread over the reconnect
         * window (4 s at least, the backoff doubling beyond it) and paced to one every 1.5 s,
         * so within 8 s there are a few attempts, not dozens. */
        const struct kube_informer_opts o = {
                .kind = "SriovNetworkNodePolicy",
                .path = "/apis/sriovnetwork.openshift.io/v1/namespaces/x/sriovnetworknodepolicies",
                .callbacks = { on_added, on_updated, on_deleted, &s },
        };
        long lists = stat_value(f, "requests");
        struct kube_informer *inf;
        assert_int_equal(kube_informer_new(f->agent, &o, &inf), 0);
        assert_int_equal(kube_informer_start(inf), 0);
        run_until(f, NULL, 0, 8000 * 1000);
        long attempts = stat_value(f, "requests") - lists; /* /_fake/ requests do not count */
        long later = attempts < 2 ? wait_for_stat(f, "requests", lists, 2) : attempts;
        bool synced = kube_informer_has_synced(inf);
        kube_informer_free(inf);
        assert_false(synced);
        if (attempts > 6)
                fail_msg("%ld list attempts in 8 s", attempts);
        if (later < 2) /* a retry at all, however slow the machine */
                fail_msg("%ld list attempts: no retry", later);
}

/* An ERROR 500 in every watch stream: no relist at all (the resourceVersion is still good),
 * and the watches back off (0.8 s doubling) instead of spinning. */
static void test_watch_error_backs_off(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        fault(f, "{\"watch_errors\":-1,\"watch_error_code\":500}");
        struct kube_informer *inf = node_informer(f, &s, NULL, 0);
        run_until(f, NULL, 0, 5 * 1000 * 1000);
        long lists = stat_value(f, "lists"), watches = stat_value(f, "watches");
        long later = watches < 2 ? wait_for_stat(f, "watches", 0, 2) : watches;
        long lists_later = stat_value(f, "lists");
        kube_informer_free(inf);
        assert_int_equal(s.synced, 1);
        if (lists != 1 || watches > 5)
                fail_msg("%ld lists, %ld watches in 5 s with an ERROR 500 in every watch", lists,
                         watches);
        if (later < 2 || lists_later != 1) /* a retry at all, however slow the machine */
                fail_msg("%ld lists, %ld watches with an ERROR 500 in every watch", lists_later,
                         later);
}

/* A 410 storm (every watch expired): relists spread over the reconnect window, paced, then
 * the backoff: a handful in 12 s, not one per watch round trip. */
static void test_expired_storm_bounded(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        struct kube_informer *inf = node_informer(f, &s, NULL, 0);
        assert_true(run_until(f, &s.synced, 1, 10 * 1000 * 1000));
        fault(f, "{\"watch_errors\":-1,\"watch_error_code\":410}");
        fault(f, "{\"close_watches\":true}");
        run_until(f, NULL, 0, 12 * 1000 * 1000);
        long lists = stat_value(f, "lists");
        long later = lists < 2 ? wait_for_stat(f, "lists", 0, 2) : lists;
        kube_informer_free(inf);
        if (lists > 6) /* the first list included */
                fail_msg("%ld lists in 12 s of 410 on every watch", lists);
        if (later < 2) /* a relist at all, however slow the machine */
                fail_msg("%ld lists with 410 on every watch: no relist", later);
}

/* How late a silent stream may end: the loop's turns of up to 100 ms and a loaded machine. */
static double silent_stream_slack_s(void)
{
        return RUNNING_ON_VALGRIND ? 3.0 : 1.5;
}

/* Waits until the agent ends one more watch stream (at most 30 s); seconds since `start`. */
static double seconds_until_watch_ends(struct fake *f, uint64_t ends, uint64_t start)
{
        while (kube_http_stats(f->agent)->watch_ends == ends &&
               now_usec() - start < 30 * 1000 * 1000)
                sd_event_run(f->event, 100 * 1000);
        return (double)(now_usec() - start) / 1e6;
}

/* A Node informer with the given idle limit and 60 s watches, started and synced. */
static struct kube_informer *synced_informer(struct fake *f, struct seen *s, unsigned idle_s)
{
        struct kube_informer_opts o = node_informer_opts(s);
        o.watch_timeout_s = 60;
        o.watch_idle_timeout_s = idle_s;
        struct kube_informer *inf = started_informer(f, &o);
        assert_true(run_until(f, &s->synced, 1, 10 * 1000 * 1000));
        return inf;
}

/* Makes the open watch stream dead by `fault` (a fake API server switch) right after an event,
 * changes a node meanwhile, and checks that the stream ended at the idle limit after that event
 * (to within the slack) and that the informer resumed from its resourceVersion: the change
 * arrives, nothing is relisted. `what` names the dead stream in messages. */
static void check_dead_stream_resumed(struct fake *f, const char *fault_json, const char *what)
{
        struct seen s = {};
        const unsigned idle_s = 8;
        struct kube_informer *inf = synced_informer(f, &s, idle_s);
        /* the stream's last event, then the fault at once */
        label_node(f, "n1", "before", "dead");
        assert_true(run_until(f, &s.n, 4, 10 * 1000 * 1000));
        uint64_t ends = kube_http_stats(f->agent)->watch_ends;
        uint64_t start = now_usec();
        fault(f, fault_json);
        label_node(f, "n2", "after", "dead");
        double ended_s = seconds_until_watch_ends(f, ends, start);
        print_message("%s ended %.1f s after its last event (idle limit %u s)\n", what, ended_s,
                      idle_s);
        assert_int_equal(s.n, 4); /* the dead stream did not carry the change */
        if (ended_s < idle_s - 0.5 || ended_s > idle_s + silent_stream_slack_s())
                fail_msg("%s ended %.1f s after its last event, not %u s", what, ended_s, idle_s);
        /* Within a hang deadline that still ends well before the 60 s watch timeout: the
         * idle limit, not the timeout, ended the stream. */
        assert_true(run_until(f, &s.n, 5, 30 * 1000 * 1000));
        assert_string_equal(s.lines[4], "updated n2");
        assert_int_equal(s.synced, 1); /* resumed, not relisted */
        kube_informer_free(inf);
}

/* A watch stream that goes silent without closing (a dead path TCP has not noticed) is
 * dropped once the idle limit has passed since its last event, neither sooner (the API server's
 * bookmarks come once a minute) nor later (libcurl's low-speed check, used before, averaged
 * over 5 s: 14.0 s for a limit of 8 s, then 9.0 s with the limit less 5 s given to it), and
 * resumed from the last resourceVersion: nothing is missed. */
static void test_silent_watch_resumed(void **state)
{
        check_dead_stream_resumed(*state, "{\"silence_watches\":true}", "a silent stream");
}

/* A stream that still carries bytes but no event or bookmark (a proxy's keep-alive blank line
 * every second, the server behind it gone) is as dead as a silent one: dropped at the idle
 * limit after its last event and resumed. Stamped per byte, the limit never came (the stream
 * lived until the server's timeoutSeconds; a blank line a minute would have held it for ever). */
static void test_trickled_watch_ends_at_limit(void **state)
{
        check_dead_stream_resumed(*state, "{\"trickle_watches\":1}",
                                  "a stream carrying only blank lines");
}

/* A large event over a slow link (40 KiB at 4 KiB/s: 10 s, past the 8 s idle limit) is not a
 * dead stream: it keeps growing, so it is delivered on the stream it started on. Timed by whole
 * lines only, the stream was ended 8 s in, and every new one again: the change never came. */
static void test_slow_large_event_delivered(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        struct kube_informer *inf = synced_informer(f, &s, 8);
        uint64_t ends = kube_http_stats(f->agent)->watch_ends;
        fault(f, "{\"slow_events_bps\":4096}");
        size_t pad = 40 * 1024;
        char *body = malloc(pad + 128);
        assert_non_null(body);
        int n = snprintf(body, 128, "{\"metadata\":{\"annotations\":{\"big\":\"");
        memset(body + n, 'x', pad);
        strcpy(body + n + pad, "\"}}}");
        assert_int_equal(request(f, f->admin, "PATCH", "/api/v1/nodes/n2",
                                 "application/merge-patch+json", body, NULL, 0),
                         200);
        free(body);
        uint64_t start = now_usec();
        assert_true(run_until(f, &s.n, 4, 30 * 1000 * 1000));
        print_message("a 40 KiB event at 4 KiB/s delivered after %.1f s (idle limit 8 s)\n",
                      (double)(now_usec() - start) / 1e6);
        assert_string_equal(s.lines[3], "updated n2");
        assert_int_equal(kube_http_stats(f->agent)->watch_ends, ends); /* on the same stream */
        fault(f, "{\"slow_events_bps\":0}");
        kube_informer_free(inf);
}

/* A watch stream that never carries a byte after its headers (the server stuck from the
 * start) ends at the idle limit after it was sent, not sooner: libcurl's check, used before,
 * ended it 5 s early. */
static void test_never_fed_watch_ends_at_limit(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        const unsigned idle_s = 8;
        struct kube_informer *inf = synced_informer(f, &s, idle_s);
        uint64_t sent = now_usec(); /* about when the watch went: it follows the list at once */
        while (stat_value(f, "watching") < 1 && now_usec() - sent < 10 * 1000 * 1000)
                run_until(f, NULL, 0, 50 * 1000);
        assert_int_equal(stat_value(f, "watching"), 1);
        uint64_t ends = kube_http_stats(f->agent)->watch_ends;
        fault(f, "{\"silence_watches\":true}");
        double ended_s = seconds_until_watch_ends(f, ends, sent);
        print_message("a stream never fed ended %.1f s after it was sent (idle limit %u s)\n",
                      ended_s, idle_s);
        if (ended_s < idle_s - 0.5 || ended_s > idle_s + silent_stream_slack_s())
                fail_msg("a stream that never carried an event ended after %.1f s, not %u s",
                         ended_s, idle_s);
        /* the next watch is served: a change made now arrives */
        label_node(f, "n2", "after", "silence");
        assert_true(run_until(f, &s.n, 4, 10 * 1000 * 1000));
        assert_string_equal(s.lines[3], "updated n2");
        assert_int_equal(s.synced, 1);
        kube_informer_free(inf);
}

/* A namespace whose whole list exceeds the 16 MiB body limit (the watch cache answers it in
 * one piece): the informer says so and lists again from etcd in small pages. */
static void test_oversized_list_paged(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        size_t pad = 400 * 1024;
        char *body = malloc(pad + 256);
        for (int i = 0; i < 45; i++) {
                int n = snprintf(
                    body, 256, "{\"metadata\":{\"name\":\"big%02d\",\"annotations\":{\"p\":\"", i);
                memset(body + n, 'x', pad);
                strcpy(body + n + pad, "\"}}}");
                assert_int_equal(request(f, f->admin, "POST", "/api/v1/nodes", "application/json",
                                         body, NULL, 0),
                                 201);
        }
        free(body);
        struct kube_informer *inf = node_informer(f, &s, NULL, 0);
        /* ~18 MiB through the fake, refused, then listed again in pages: ~5 s natively, about
         * 20 s under valgrind (scripts/memcheck), where a second CPU-bound test beside it made
         * it miss a 20 s wait */
        const uint64_t wait_usec = (RUNNING_ON_VALGRIND ? 120 : 20) * 1000 * 1000ULL;
        assert_true(run_until(f, &s.synced, 1, wait_usec));
        assert_int_equal(kube_cache_size(kube_informer_cache(inf)), 48);
        assert_int_equal(stat_value(f, "lists_cached"), 1);  /* refused: too big */
        assert_true(stat_value(f, "lists_consistent") >= 3); /* 48 in pages of 20 */
        kube_informer_free(inf);
}

/* Objects beyond the informer's memory budget are kept as named stubs (reported as invalid),
 * never decoded in full: memory is bounded whatever the collection holds. */
static void test_memory_budget(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        json_t *n1 = get_json(f, "/api/v1/nodes/n1");
        size_t one = json_dumpb(n1, NULL, 0, JSON_COMPACT);
        json_decref(n1);
        const struct kube_informer_opts o = {
                .kind = "Node",
                .path = "/api/v1/nodes",
                .callbacks = { on_added, on_updated, on_deleted, &s },
                .on_synced = on_synced,
                .synced_userdata = &s,
                .max_total_size = one * 2 + one / 2, /* two nodes fit, not three */
        };
        struct kube_informer *inf;
        assert_int_equal(kube_informer_new(f->agent, &o, &inf), 0);
        assert_int_equal(kube_informer_start(inf), 0);
        assert_true(run_until(f, &s.synced, 1, 10 * 1000 * 1000));
        struct kube_cache *c = kube_informer_cache(inf);
        assert_int_equal(kube_cache_size(c), 3);
        assert_null(kube_object_undecodable(kube_cache_get(c, NULL, "n1")));
        assert_null(kube_object_undecodable(kube_cache_get(c, NULL, "n2")));
        const char *why = kube_object_undecodable(kube_cache_get(c, NULL, "n3"));
        assert_non_null(why);
        assert_non_null(strstr(why, "memory budget"));
        /* The stub keeps the labels (all the agent reads from a Node). */
        assert_string_equal(
            json_string_value(json_object_get(
                json_object_get(json_object_get(kube_cache_get(c, NULL, "n3"), "metadata"),
                                "labels"),
                "kubernetes.io/hostname")),
            "n3");
        kube_informer_free(inf);
}

/* Objects the server holds but jansson cannot decode (nesting beyond 2,048, an integer beyond
 * 64 bits) fail neither the list (restart) nor the watch: each becomes a named stub. */
static void test_undecodable_isolated(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        assert_int_equal(request(f, f->admin, "POST", "/api/v1/namespaces", "application/json",
                                 "{\"metadata\":{\"name\":\"x\"}}", NULL, 0),
                         201);
        size_t depth = 2100, n = depth * 6 + 256;
        char *deep = malloc(n);
        int off = snprintf(deep, n, "{\"metadata\":{\"name\":\"deep\"},\"data\":");
        for (size_t i = 0; i < depth; i++)
                off += snprintf(deep + off, n - off, "{\"x\":");
        off += snprintf(deep + off, n - off, "{}");
        for (size_t i = 0; i < depth; i++)
                deep[off++] = '}';
        snprintf(deep + off, n - off, "}");
        const char *path = "/api/v1/namespaces/x/configmaps";
        assert_int_equal(request(f, f->admin, "POST", path, "application/json", deep, NULL, 0),
                         201);
        assert_int_equal(request(f, f->admin, "POST", path, "application/json",
                                 "{\"metadata\":{\"name\":\"big\"},\"data\":{\"n\":"
                                 "100000000000000000000}}",
                                 NULL, 0),
                         201);
        assert_int_equal(request(f, f->admin, "POST", path, "application/json",
                                 "{\"metadata\":{\"name\":\"good\"},\"data\":{\"a\":\"b\"}}", NULL,
                                 0),
                         201);
        const struct kube_informer_opts o = {
                .kind = "ConfigMap",
                .path = path,
                .callbacks = { on_added, on_updated, on_deleted, &s },
                .on_synced = on_synced,
                .synced_userdata = &s,
        };
        struct kube_informer *inf;
        assert_int_equal(kube_informer_new(f->agent, &o, &inf), 0);
        assert_int_equal(kube_informer_start(inf), 0);
        assert_true(run_until(f, &s.synced, 1, 10 * 1000 * 1000));
        struct kube_cache *c = kube_informer_cache(inf);
        assert_int_equal(kube_cache_size(c), 3);
        assert_non_null(kube_object_undecodable(kube_cache_get(c, "x", "deep")));
        assert_non_null(kube_object_undecodable(kube_cache_get(c, "x", "big")));
        assert_null(kube_object_undecodable(kube_cache_get(c, "x", "good")));
        /* Through the watch: a new undecodable object arrives as a stub, the stream goes on. */
        strstr(deep, "deep")[3] = '2'; /* a second one, named dee2 */
        assert_int_equal(request(f, f->admin, "POST", path, "application/json", deep, NULL, 0),
                         201);
        assert_int_equal(request(f, f->admin, "POST", path, "application/json",
                                 "{\"metadata\":{\"name\":\"after\"}}", NULL, 0),
                         201);
        assert_true(run_until(f, &s.n, 5, 10 * 1000 * 1000));
        assert_non_null(kube_object_undecodable(kube_cache_get(c, "x", "dee2")));
        assert_non_null(kube_cache_get(c, "x", "after"));
        assert_int_equal(s.synced, 1); /* no relist */
        free(deep);
        kube_informer_free(inf);
}

/* A hostile server whose continue tokens never end: the list is abandoned after the page
 * limit and retried after a backoff, not paged forever. */
static void test_endless_continue_bounded(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        fault(f, "{\"endless_continue\":true}");
        const struct kube_informer_opts o = {
                .kind = "Node",
                .path = "/api/v1/nodes",
                .callbacks = { on_added, on_updated, on_deleted, &s },
                .on_synced = on_synced,
                .synced_userdata = &s,
                .max_list_pages = 20,
        };
        struct kube_informer *inf;
        assert_int_equal(kube_informer_new(f->agent, &o, &inf), 0);
        assert_int_equal(kube_informer_start(inf), 0);
        run_until(f, NULL, 0, 3 * 1000 * 1000);
        long lists = stat_value(f, "lists");
        long later = lists < 20 ? wait_for_stat(f, "lists", 0, 20) : lists;
        bool synced = kube_informer_has_synced(inf);
        kube_informer_free(inf);
        assert_false(synced);
        /* 20 pages per attempt; the backoff (0.4 s, 0.8 s, ...) allows 2 or 3 attempts. */
        if (lists > 80)
                fail_msg("%ld list pages in 3 s", lists);
        if (later < 20) /* one whole attempt at least, however slow the machine */
                fail_msg("%ld list pages: not one whole attempt", later);
}

/* 429 with Retry-After: 2 (API Priority and Fairness): the list waits 2 s, no sooner. */
static void test_retry_after(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        fault(f, "{\"throttle\":1,\"retry_after_s\":2}");
        uint64_t start = now_usec();
        struct kube_informer *inf = node_informer(f, &s, NULL, 0);
        assert_true(run_until(f, &s.synced, 1, 20 * 1000 * 1000)); /* a hang deadline */
        uint64_t took = now_usec() - start;
        kube_informer_free(inf);
        assert_int_equal(stat_value(f, "throttled"), 1);
        /* no sooner (the rule); how much later depends on the machine, so it is not bounded */
        print_message("synced after %.2f s with Retry-After: 2\n", (double)took / 1e6);
        if (took < 1900 * 1000)
                fail_msg("synced after %.2f s with Retry-After: 2", (double)took / 1e6);
}

int main(void)
{
        log_setup(LOG_TARGET_STDERR, LOG_NOTICE);
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_paged_list_and_updates, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_field_selector, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_deleted_while_away, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_backoff, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_watch_error_backs_off, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_expired_storm_bounded, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_retry_after, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_silent_watch_resumed, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_trickled_watch_ends_at_limit, start_fake,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_never_fed_watch_ends_at_limit, start_fake,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_slow_large_event_delivered, start_fake,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_oversized_list_paged, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_memory_budget, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_undecodable_isolated, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_endless_continue_bounded, start_fake,
                                                stop_fake),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
