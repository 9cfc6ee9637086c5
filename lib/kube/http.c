/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/http.h"

#include <curl/curl.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "kube/curl-loader.h"
#include "util/log.h"
#include "util/macro.h"

#define CONNECT_TIMEOUT_S   10
#define DEFAULT_TIMEOUT_S   30
#define TCP_KEEPIDLE_S      15
#define TCP_KEEPINTVL_S     5
#define TCP_KEEPCNT_N       4
#define TCP_USER_TIMEOUT_MS (40 * 1000)
/* One node agent should never open more than this many connections to the API server (the two
 * watches included); further requests wait inside curl. Over HTTP/2 they share one anyway. */
#define MAX_CONNECTIONS    16
#define MAX_COLLECTED_BODY KUBE_MAX_BODY
/* How late a silent stream's end may come: sd-event may coalesce its timer with others. */
#define IDLE_ACCURACY_USEC (100ULL * 1000)
/* Answers whose buffer grew beyond this are followed by malloc_trim(). */
#define KUBE_TRIM_AFTER_BODY (64u * 1024)
/* While recovering from a lost or overloaded API server, one agent starts at most one request
 * every 1.5 s: N nodes then never send more than N requests in any one second, however their
 * reconnects line up (the half second is headroom for network delay and the odd unpaced
 * request). Recovery lasts until RECOVERY_QUIET passed without trouble or paced request. */
#define PACE_USEC           (1500ULL * 1000)
#define RECOVERY_QUIET_USEC (5ULL * 1000 * 1000)
/* Pacing needs no finer timer than this. */
#define PACE_ACCURACY_USEC (10ULL * 1000)
/* Retry-After holds kept at once (resources with a 429/503 pending): an agent uses about a
 * dozen resources; past this, the hold that ends first is forgotten. */
#define MAX_HOLDS 32

/* A 429/503's Retry-After for one resource: the URL without its query (a collection, or one
 * object), so the list and watch of one collection, or the retries of one write, wait it out
 * and nothing else does. */
struct hold {
        char *key; /* NULL: unused */
        uint64_t until;
};

struct kube_http {
        sd_event *event;
        struct kube_config *config;
        CURLM *multi;
        sd_event_source *timer;
        struct kube_request *requests; /* doubly linked, for cancel-all on free */
        bool in_write_callback;
        sd_event_source *deferred_adds; /* adds requests started inside a curl callback */
        unsigned n_deferred;
        struct kube_http_stats stats;

        /* Recovery pacing (PACE_USEC): requests wait in a queue (FIFO, urgent ones first). */
        sd_event_source *pace_timer;
        unsigned n_paced;
        uint64_t paced_seq;
        uint64_t last_start_usec;  /* when a request was last handed to curl */
        uint64_t recovering_until; /* pacing lasts while now is before this */
        struct hold holds[MAX_HOLDS];
        uint64_t outage_since_usec; /* first trouble of the current outage, 0 = none */
        uint64_t jitter_state;      /* splitmix64 */
};

struct kube_request {
        struct kube_http *http;
        struct kube_request *prev, *next;
        CURL *easy;
        struct curl_slist *headers;
        char *url;
        size_t key_len; /* url up to its query: what a Retry-After holds */
        char *body_copy;
        kube_data_fn on_data;
        kube_done_fn on_done;
        void *userdata;
        char *collected;
        size_t collected_len, collected_alloc;
        int abort_error;  /* set when on_data or the size cap aborted the transfer */
        bool in_callback; /* cancel from inside a callback is deferred to after it */
        bool cancelled;
        bool deferred; /* started inside a curl callback, not yet handed to curl */
        char verb[8];  /* for the request counts */
        bool paced;    /* waiting in the pacing queue, not yet handed to curl */
        bool urgent;
        uint64_t paced_seq;
        uint64_t sent_usec; /* when handed to curl, 0 before */
        /* Streams: ended when on_data has not found them alive for idle_usec (0: no limit);
         * each such call only stamps last_data_usec, the timer catches up when it fires. */
        uint64_t idle_usec, last_data_usec;
        sd_event_source *idle_timer;
        char error_text[CURL_ERROR_SIZE];
};

static uint64_t http_now(const struct kube_http *h)
{
        uint64_t now = 0;
        sd_event_now(h->event, CLOCK_MONOTONIC, &now);
        return now;
}

static void request_free(struct kube_request *r)
{
        struct kube_http *h = r->http;
        if (r->deferred)
                h->n_deferred--;
        if (r->paced)
                h->n_paced--;
        if (r->easy) {
                curl_multi_remove_handle(h->multi, r->easy);
                curl_easy_cleanup(r->easy);
        }
        sd_event_source_disable_unref(r->idle_timer);
        if (r->prev)
                r->prev->next = r->next;
        else
                h->requests = r->next;
        if (r->next)
                r->next->prev = r->prev;
        curl_slist_free_all(r->headers);
        free(r->url);
        free(r->body_copy);
        free(r->collected);
        free(r);
}

void kube_request_cancel(struct kube_request *req)
{
        if (!req)
                return;
        /* Inside curl's callbacks handles must not be removed: defer to the completion path. */
        if (req->in_callback || req->http->in_write_callback) {
                req->cancelled = true;
                return;
        }
        request_free(req);
}

const char *kube_request_error_text(const struct kube_request *req)
{
        return req->error_text;
}

long kube_request_status(struct kube_request *req)
{
        long code = 0;
        curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &code);
        return code;
}

static int sockopt_cb(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
        if (purpose != CURLSOCKTYPE_IPCXN)
                return CURL_SOCKOPT_OK;
        int cnt = TCP_KEEPCNT_N;
        unsigned user_timeout = TCP_USER_TIMEOUT_MS;
        /* Best effort: on a unix socket or an old kernel these fail harmlessly. */
        (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
        return CURL_SOCKOPT_OK;
}

uint64_t kube_request_retry_after_usec(struct kube_request *req)
{
        curl_off_t secs = 0;
        if (!req || !req->easy ||
            curl_easy_getinfo(req->easy, CURLINFO_RETRY_AFTER, &secs) != CURLE_OK || secs <= 0)
                return 0;
        /* A hostile or confused server must not park us for hours. */
        if (secs > KUBE_RETRY_AFTER_MAX_S)
                secs = KUBE_RETRY_AFTER_MAX_S;
        return (uint64_t)secs * 1000000ULL;
}

static int curl_result_to_errno(CURLcode c)
{
        switch (c) {
        case CURLE_OK:
                return 0;
        case CURLE_OPERATION_TIMEDOUT:
                return -ETIMEDOUT;
        case CURLE_COULDNT_CONNECT:
                return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
                return -EHOSTUNREACH;
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CACERT_BADFILE:
                return -EPERM;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
                return -ECONNRESET;
        default:
                return -EIO;
        }
}

static int collect(struct kube_request *r, const char *data, size_t len)
{
        if (r->collected_len + len + 1 > MAX_COLLECTED_BODY) {
                snprintf(r->error_text, sizeof(r->error_text),
                         "response body larger than the %u MiB limit", KUBE_MAX_BODY >> 20);
                return -EFBIG;
        }
        if (r->collected_len + len + 1 > r->collected_alloc) {
                size_t want = (r->collected_len + len + 1) * 2;
                if (want > MAX_COLLECTED_BODY)
                        want = MAX_COLLECTED_BODY;
                char *p = realloc(r->collected, want);
                if (!p)
                        return -ENOMEM;
                r->collected = p;
                r->collected_alloc = want;
        }
        memcpy(r->collected + r->collected_len, data, len);
        r->collected_len += len;
        r->collected[r->collected_len] = '\0';
        return 0;
}

static size_t write_cb(char *data, size_t size, size_t nmemb, void *userdata)
{
        struct kube_request *r = userdata;
        size_t len = size * nmemb;
        int k;

        if (r->cancelled)
                return 0;
        if (r->on_data && kube_request_status(r) == 200) {
                r->in_callback = true;
                r->http->in_write_callback = true;
                k = r->on_data(r, data, len, r->userdata);
                r->http->in_write_callback = false;
                r->in_callback = false;
                if (r->cancelled)
                        return 0; /* freed by the completion path */
        } else
                k = collect(r, data, len);
        if (k < 0) {
                r->abort_error = k;
                return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
        }
        if (k > 0)
                r->last_data_usec = http_now(r->http); /* the consumer says it is alive */
        return len;
}

static void count_request(struct kube_http_stats *st, const char *verb, long code)
{
        size_t i;
        for (i = 0; i < st->n_counts; i++)
                if (st->counts[i].code == code && strcmp(st->counts[i].verb, verb) == 0)
                        break;
        if (i == st->n_counts) {
                if (st->n_counts == KUBE_HTTP_MAX_COUNTS) {
                        count_request(st, "OTHER", -1);
                        return;
                }
                st->n_counts++;
                snprintf(st->counts[i].verb, sizeof(st->counts[i].verb), "%s", verb);
                st->counts[i].code = code;
        }
        st->counts[i].n++;
}

const struct kube_http_stats *kube_http_stats(const struct kube_http *h)
{
        return &h->stats;
}

static bool same_key(const struct hold *o, const struct kube_request *r)
{
        return o->key && strlen(o->key) == r->key_len && strncmp(o->key, r->url, r->key_len) == 0;
}

/* Until when a Retry-After holds r's resource (0: no hold, or one that passed). */
static uint64_t hold_until(const struct kube_http *h, const struct kube_request *r)
{
        for (size_t i = 0; i < MAX_HOLDS; i++)
                if (same_key(&h->holds[i], r))
                        return h->holds[i].until;
        return 0;
}

static void set_hold(struct kube_http *h, const struct kube_request *r, uint64_t until,
                     uint64_t now)
{
        struct hold *slot = NULL;
        for (size_t i = 0; i < MAX_HOLDS; i++) {
                struct hold *o = &h->holds[i];
                if (same_key(o, r)) {
                        if (o->until < until)
                                o->until = until;
                        return;
                }
                /* A free or passed slot, else the hold that ends first. */
                bool free_ = !o->key || o->until <= now;
                bool slot_free = slot && (!slot->key || slot->until <= now);
                if (!slot || (free_ && !slot_free) || (!slot_free && o->until < slot->until))
                        slot = o;
        }
        char *key = strndup(r->url, r->key_len);
        if (!key) {
                log_warning("cannot note the Retry-After for %s: out of memory", r->url);
                return;
        }
        free(slot->key);
        *slot = (struct hold){ .key = key, .until = until };
}

/* The server answered: an outage (if any) is over. A transport failure (a refused connection,
 * a stream cut by a restarting server), a 5xx or a 429 starts or continues one, and makes the
 * requests that follow go through the pacing queue. */
static void note_outcome(struct kube_http *h, struct kube_request *r, int error, long status)
{
        if (r->abort_error)
                return; /* our own decision (a bad event, a size cap), not the server's health */
        uint64_t now = http_now(h);
        bool trouble = (error < 0 && error != -ECANCELED) || status >= 500 || status == 429;
        if (!trouble) {
                if (status > 0)
                        h->outage_since_usec = 0;
                return;
        }
        if (!h->outage_since_usec)
                h->outage_since_usec = now;
        if (h->recovering_until < now + RECOVERY_QUIET_USEC)
                h->recovering_until = now + RECOVERY_QUIET_USEC;
        uint64_t retry_after =
            (status == 429 || status == 503) ? kube_request_retry_after_usec(r) : 0;
        /* Not sooner than it says, and up to half as late again: every agent of the fleet
         * got the same Retry-After at about the same time. It holds this resource only, as
         * client-go applies it to the request that got it: a 429 to a relist must not stop
         * the Lease holder's renewals. */
        if (retry_after)
                set_hold(h, r, now + retry_after + kube_http_jitter_usec(h, retry_after / 2), now);
}

static void finish_request(struct kube_http *h, CURL *easy, CURLcode result)
{
        struct kube_request *r;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
        if (r->cancelled) {
                request_free(r);
                return;
        }
        int error = r->abort_error ? r->abort_error : curl_result_to_errno(result);
        long status = kube_request_status(r);
        bool streamed = r->on_data && status == 200;
        count_request(&h->stats, r->verb, status);
        if (r->on_data)
                h->stats.watch_ends++;
        note_outcome(h, r, error, status);
        curl_multi_remove_handle(h->multi, r->easy);
        r->in_callback = true;
        if (r->on_done)
                r->on_done(r, error, status, streamed ? NULL : (r->collected ? r->collected : ""),
                           r->collected_len, r->userdata);
        bool large = r->collected_alloc > KUBE_TRIM_AFTER_BODY;
        request_free(r);
        /* A large answer (a list, a NodeState echo with hundreds of VFs) was decoded, used and
         * freed by now: give the heap pages it took back rather than keep them resident. */
        if (large)
                malloc_trim(0);
}

static void drain_messages(struct kube_http *h)
{
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(h->multi, &left)))
                if (msg->msg == CURLMSG_DONE)
                        finish_request(h, msg->easy_handle, msg->data.result);
}

/* Frees requests whose cancellation had to wait until curl returned. */
static void sweep_cancelled(struct kube_http *h)
{
        for (struct kube_request *r = h->requests, *next; r; r = next) {
                next = r->next;
                if (r->cancelled && !r->in_callback && !r->deferred)
                        request_free(r);
        }
}

static int io_cb(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct kube_http *h = userdata;
        int flags = 0, running;
        if (revents & EPOLLIN)
                flags |= CURL_CSELECT_IN;
        if (revents & EPOLLOUT)
                flags |= CURL_CSELECT_OUT;
        if (revents & (EPOLLERR | EPOLLHUP))
                flags |= CURL_CSELECT_ERR;
        curl_multi_socket_action(h->multi, fd, flags, &running);
        drain_messages(h);
        sweep_cancelled(h);
        return 0;
}

static int timer_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct kube_http *h = userdata;
        int running;
        curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        drain_messages(h);
        sweep_cancelled(h);
        return 0;
}

static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
        struct kube_http *h = userp;
        sd_event_source *source = socketp;

        if (what == CURL_POLL_REMOVE) {
                if (source) {
                        sd_event_source_disable_unref(source);
                        curl_multi_assign(h->multi, fd, NULL);
                }
                return 0;
        }
        uint32_t events = 0;
        if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
                events |= EPOLLIN;
        if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
                events |= EPOLLOUT;
        if (source)
                return sd_event_source_set_io_events(source, events) < 0 ? -1 : 0;
        int k = sd_event_add_io(h->event, &source, fd, events, io_cb, h);
        if (k < 0) {
                log_error_errno(k, "cannot watch the API server connection");
                return -1;
        }
        curl_multi_assign(h->multi, fd, source);
        return 0;
}

static int timerfunc_cb(CURLM *multi, long timeout_ms, void *userp)
{
        struct kube_http *h = userp;
        if (timeout_ms < 0)
                return sd_event_source_set_enabled(h->timer, SD_EVENT_OFF) < 0 ? -1 : 0;
        uint64_t now;
        sd_event_now(h->event, CLOCK_MONOTONIC, &now);
        /* timeout 0 means "call me soon"; an immediate timer keeps us out of curl re-entry. */
        if (sd_event_source_set_time(h->timer, now + (uint64_t)timeout_ms * 1000) < 0 ||
            sd_event_source_set_enabled(h->timer, SD_EVENT_ONESHOT) < 0)
                return -1;
        return 0;
}

/* A stream not found alive for its idle limit: a dead path TCP has not noticed, a stuck
 * server, or one trickling bytes that never make a message (a blank line a minute would hold
 * a byte-stamped stream open for ever). Ended here, at the limit after its last sign, not
 * by libcurl's low-speed check, which averages over 5 s (a stream ended up to 5 s before or
 * after the limit) and, while a stream is below the speed, wakes the process every second for
 * each: a settled agent's four quiet watches woke it 119 times in 30 s, 3 times with this
 * timer (bench 3c). Ends it as a timeout, like any transport failure. */
static int idle_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct kube_request *r = userdata;
        uint64_t due = r->last_data_usec + r->idle_usec;
        if (usec < due) {
                if (sd_event_source_set_time(s, due) >= 0 &&
                    sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) >= 0)
                        return 0;
                /* cannot wait on: end it now rather than never */
        }
        snprintf(r->error_text, sizeof(r->error_text), "no progress for %llu s",
                 (unsigned long long)(r->idle_usec / (1000 * 1000)));
        struct kube_http *h = r->http;
        finish_request(h, r->easy, CURLE_OPERATION_TIMEDOUT);
        sweep_cancelled(h);
        return 0;
}

static int add_to_multi(struct kube_request *r)
{
        struct kube_http *h = r->http;
        uint64_t now = http_now(h);
        if (r->idle_usec) {
                r->last_data_usec = now;
                int k = sd_event_add_time(h->event, &r->idle_timer, CLOCK_MONOTONIC,
                                          now + r->idle_usec, IDLE_ACCURACY_USEC, idle_cb, r);
                if (k < 0)
                        return log_error_errno(k, "cannot time the stream %s", r->url);
        }
        if (curl_multi_add_handle(h->multi, r->easy) != CURLM_OK)
                return log_error_errno(-ENOMEM, "cannot queue a request to %s", r->url);
        r->sent_usec = now;
        return 0;
}

uint64_t kube_request_sent_usec(const struct kube_request *req)
{
        return req->sent_usec;
}

/* Whether a queued request could go now but for the pacing (one held by its resource's
 * Retry-After waits on its own, without making the others queue). */
static bool queue_ready(const struct kube_http *h, uint64_t now)
{
        if (h->n_paced == 0)
                return false;
        for (const struct kube_request *r = h->requests; r; r = r->next)
                if (r->paced && !r->cancelled && hold_until(h, r) <= now)
                        return true;
        return false;
}

static bool pacing(const struct kube_http *h, uint64_t now)
{
        return now < h->recovering_until || queue_ready(h, now);
}

/* When the next queued request may go: a pacing slot after the last start, and not before the
 * earliest end of the queued requests' holds. */
static uint64_t next_slot(const struct kube_http *h)
{
        uint64_t slot = h->last_start_usec ? h->last_start_usec + PACE_USEC : 0;
        uint64_t earliest = UINT64_MAX;
        for (const struct kube_request *r = h->requests; r; r = r->next)
                if (r->paced && !r->cancelled) {
                        uint64_t until = hold_until(h, r);
                        earliest = until < earliest ? until : earliest;
                }
        return slot > earliest ? slot : earliest;
}

static void arm_pace_timer(struct kube_http *h)
{
        if (h->n_paced == 0) {
                sd_event_source_set_enabled(h->pace_timer, SD_EVENT_OFF);
                return;
        }
        sd_event_source_set_time(h->pace_timer, next_slot(h));
        sd_event_source_set_enabled(h->pace_timer, SD_EVENT_ONESHOT);
}

/* Hands the next queued request whose resource is not held to curl: urgent ones first,
 * otherwise in start order. */
static int pace_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct kube_http *h = userdata;
        uint64_t now = http_now(h);
        struct kube_request *pick = NULL;
        if (h->last_start_usec == 0 || now >= h->last_start_usec + PACE_USEC)
                for (struct kube_request *r = h->requests; r; r = r->next) {
                        if (!r->paced || r->cancelled || hold_until(h, r) > now)
                                continue;
                        if (!pick || (r->urgent && !pick->urgent) ||
                            (r->urgent == pick->urgent && r->paced_seq < pick->paced_seq))
                                pick = r;
                }
        if (pick) {
                pick->paced = false;
                h->n_paced--;
                h->last_start_usec = now;
                /* Still recovering while the queue drains, and a while after. */
                if (h->recovering_until < now + RECOVERY_QUIET_USEC)
                        h->recovering_until = now + RECOVERY_QUIET_USEC;
                if (add_to_multi(pick) < 0) {
                        pick->in_callback = true;
                        if (pick->on_done)
                                pick->on_done(pick, -ENOMEM, 0, "", 0, pick->userdata);
                        request_free(pick);
                }
        }
        arm_pace_timer(h);
        return 0;
}

static int deferred_adds_cb(sd_event_source *s, void *userdata)
{
        struct kube_http *h = userdata;
        for (struct kube_request *r = h->requests, *next; r; r = next) {
                next = r->next;
                if (!r->deferred)
                        continue;
                if (r->cancelled) {
                        request_free(r);
                        continue;
                }
                r->deferred = false;
                h->n_deferred--;
                if (add_to_multi(r) < 0) {
                        /* Report it like any transport failure, from the loop. */
                        r->in_callback = true;
                        if (r->on_done)
                                r->on_done(r, -ENOMEM, 0, "", 0, r->userdata);
                        request_free(r);
                }
        }
        return 0;
}

int kube_http_new(sd_event *event, struct kube_config *config, struct kube_http **ret)
{
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                const char *why = curl_loader_error(); /* libcurl is dlopen()ed, may be absent */
                return log_error_errno(-EIO, "cannot initialise libcurl%s%s", why ? ": " : "",
                                       why ? why : "");
        }

        /* From here kube_http_free() (which also undoes curl_global_init()) cleans up. */
        _cleanup_(kube_http_freep) struct kube_http *h = calloc(1, sizeof(*h));
        if (!h) {
                curl_global_cleanup();
                return -ENOMEM;
        }
        h->event = sd_event_ref(event);
        h->config = config;
        h->multi = curl_multi_init();
        if (!h->multi)
                /* cppcheck-suppress memleak ; _cleanup_ frees it */
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;
        /* curl's own timeouts (connect, low speed, HTTP/2 upkeep) want millisecond precision. */
        int k = sd_event_add_time(event, &h->timer, CLOCK_MONOTONIC, UINT64_MAX, 1000, timer_cb, h);
        if (k < 0)
                return log_error_errno(k, "cannot create the HTTP timer");
        sd_event_source_set_enabled(h->timer, SD_EVENT_OFF);
        k = sd_event_add_defer(event, &h->deferred_adds, deferred_adds_cb, h);
        if (k < 0)
                return log_error_errno(k, "cannot create the HTTP dispatcher");
        sd_event_source_set_enabled(h->deferred_adds, SD_EVENT_OFF);
        k = sd_event_add_time(event, &h->pace_timer, CLOCK_MONOTONIC, UINT64_MAX,
                              PACE_ACCURACY_USEC, pace_cb, h);
        if (k < 0)
                return log_error_errno(k, "cannot create the HTTP pacing timer");
        sd_event_source_set_enabled(h->pace_timer, SD_EVENT_OFF);
        if (getrandom(&h->jitter_state, sizeof(h->jitter_state), GRND_NONBLOCK) !=
            sizeof(h->jitter_state))
                h->jitter_state = (uint64_t)(uintptr_t)h ^ http_now(h);
        curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
        curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
        curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timerfunc_cb);
        curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
        curl_multi_setopt(h->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)MAX_CONNECTIONS);
        /* Every request and watch as a stream of one HTTP/2 connection where the server speaks
         * h2 (libcurl's default since 7.62, stated here because it is the design); with
         * CURLOPT_PIPEWAIT on each request. */
        if (curl_multi_setopt(h->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX) != CURLM_OK)
                log_warning("libcurl refuses HTTP/2 multiplexing: every request will open its "
                            "own connection to the API server");
        *ret = TAKE_PTR(h);
        return 0;
}

struct kube_http *kube_http_free(struct kube_http *h)
{
        if (!h)
                return NULL;
        while (h->requests)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): the list head has no prev */
                request_free(h->requests);
        if (h->multi)
                curl_multi_cleanup(h->multi); /* removes the remaining socket sources */
        sd_event_source_disable_unref(h->timer);
        sd_event_source_disable_unref(h->deferred_adds);
        sd_event_source_disable_unref(h->pace_timer);
        for (size_t i = 0; i < MAX_HOLDS; i++)
                free(h->holds[i].key);
        sd_event_unref(h->event);
        free(h);
        curl_global_cleanup();
        return NULL;
}

const char *kube_http_server(const struct kube_http *h)
{
        return h->config->server;
}

sd_event *kube_http_event(const struct kube_http *h)
{
        return h->event;
}

char *kube_http_escape(const char *s)
{
        char *e = curl_easy_escape(NULL, s, 0);
        if (!e)
                return NULL;
        char *copy = strdup(e);
        curl_free(e);
        return copy;
}

static int set_tls(CURL *easy, const struct kube_config *c)
{
        if (c->insecure_skip_tls_verify) {
                curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
                curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        /* A kubeconfig's CA is the only one trusted, as client-go does: libcurl would otherwise
         * also load its built-in bundle and directory (/etc/ssl/certs), and any public or
         * site CA there could vouch for a man in the middle. */
        if (c->ca_data) {
                struct curl_blob blob = { .data = c->ca_data,
                                          .len = c->ca_data_len,
                                          .flags = CURL_BLOB_COPY };
                if (curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &blob) != CURLE_OK ||
                    curl_easy_setopt(easy, CURLOPT_CAINFO, NULL) != CURLE_OK ||
                    curl_easy_setopt(easy, CURLOPT_CAPATH, NULL) != CURLE_OK)
                        return -EOPNOTSUPP;
        } else if (c->ca_file) {
                if (curl_easy_setopt(easy, CURLOPT_CAINFO, c->ca_file) != CURLE_OK ||
                    curl_easy_setopt(easy, CURLOPT_CAPATH, NULL) != CURLE_OK)
                        return -EOPNOTSUPP;
        }
        if (c->client_cert_data) {
                struct curl_blob cert = { .data = c->client_cert_data,
                                          .len = c->client_cert_data_len,
                                          .flags = CURL_BLOB_COPY };
                struct curl_blob key = { .data = c->client_key_data,
                                         .len = c->client_key_data_len,
                                         .flags = CURL_BLOB_COPY };
                if (curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &cert) != CURLE_OK ||
                    curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &key) != CURLE_OK)
                        return -EOPNOTSUPP;
                curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
                curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
        } else if (c->client_cert_file) {
                curl_easy_setopt(easy, CURLOPT_SSLCERT, c->client_cert_file);
                curl_easy_setopt(easy, CURLOPT_SSLKEY, c->client_key_file);
        }
        return 0;
}

static int add_header(struct curl_slist **list, const char *name, const char *value)
{
        _cleanup_free_ char *line = NULL;
        /* "Name:" with nothing after it tells curl to drop a header it would add itself. */
        if (asprintf(&line, "%s:%s%s", name, *value ? " " : "", value) < 0)
                return -ENOMEM;
        struct curl_slist *n = curl_slist_append(*list, line);
        if (!n)
                return -ENOMEM;
        *list = n;
        return 0;
}

static int request_setup(struct kube_request *r, const struct kube_request_opts *o)
{
        struct kube_http *h = r->http;
        const char *token;
        int k = kube_config_current_token(h->config, &token);
        if (k < 0)
                return log_error_errno(k, "cannot read the API token file %s",
                                       h->config->token_file);

        if (asprintf(&r->url, "%s%s", h->config->server, o->path) < 0)
                return -ENOMEM;
        r->key_len = strcspn(r->url, "?");
        r->easy = curl_easy_init();
        if (!r->easy)
                return -ENOMEM;

        if ((k = add_header(&r->headers, "Accept", "application/json")) < 0)
                return k;
        if (token) {
                _cleanup_free_ char *bearer = NULL;
                if (asprintf(&bearer, "Bearer %s", token) < 0)
                        return -ENOMEM;
                if ((k = add_header(&r->headers, "Authorization", bearer)) < 0)
                        return k;
        }
        if (o->content_type && (k = add_header(&r->headers, "Content-Type", o->content_type)) < 0)
                return k;
        /* curl would otherwise wait a second for "100 Continue" on bodies > 1 KiB. */
        if ((k = add_header(&r->headers, "Expect", "")) < 0)
                return k;

        CURL *e = r->easy;
        curl_easy_setopt(e, CURLOPT_URL, r->url);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
        curl_easy_setopt(e, CURLOPT_PRIVATE, r);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->error_text);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_USERAGENT, "sriov-agent/" SRIOV_AGENT_VERSION);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_TIMEOUT_S);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        /* The requests an agent starts together (its informers' lists and watches) wait for
         * the one connection being set up to tell whether it multiplexes (ALPN h2) instead of
         * each opening its own TLS connection. */
        curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
        /* A dead network path (a load balancer that failed over, a black hole) is noticed
         * within ~40 s, not after the kernel's 2 h: keepalive probes after 15 s idle, every 5 s,
         * 4 unanswered end it (TCP_KEEPCNT in sockopt_cb), as does data unacknowledged for 40 s
         * (TCP_USER_TIMEOUT). */
        curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, (long)TCP_KEEPIDLE_S);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, (long)TCP_KEEPINTVL_S);
        curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, sockopt_cb);
        if (o->on_data) {
                if (o->timeout_s)
                        curl_easy_setopt(e, CURLOPT_TIMEOUT, (long)o->timeout_s);
                r->idle_usec = (uint64_t)o->idle_timeout_s * 1000 * 1000; /* idle_cb */
        } else
                curl_easy_setopt(e, CURLOPT_TIMEOUT,
                                 (long)(o->timeout_s ? o->timeout_s : DEFAULT_TIMEOUT_S));

        const char *method = o->method ? o->method : "GET";
        snprintf(r->verb, sizeof(r->verb), "%s", o->on_data ? "WATCH" : method);
        if (strcmp(method, "GET") != 0)
                curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        if (o->body) {
                r->body_copy = malloc(o->body_len + 1);
                if (!r->body_copy)
                        return -ENOMEM;
                memcpy(r->body_copy, o->body, o->body_len);
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body_copy);
                curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->body_len);
        }
        return set_tls(e, h->config);
}

int kube_http_start(struct kube_http *h, const struct kube_request_opts *opts,
                    struct kube_request **ret)
{
        struct kube_request *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        *r = (struct kube_request){
                .http = h,
                .on_data = opts->on_data,
                .on_done = opts->on_done,
                .userdata = opts->userdata,
                .next = h->requests,
        };
        if (h->requests)
                h->requests->prev = r;
        h->requests = r;

        int k = request_setup(r, opts);
        if (k < 0) {
                if (r->easy) {
                        curl_easy_cleanup(r->easy);
                        r->easy = NULL;
                }
                request_free(r);
                return k;
        }
        uint64_t now = http_now(h);
        /* A restart after trouble, or anything while recovering, waits for a slot; the
         * Lease holder's writes (urgent) only for their own resource's Retry-After. */
        if (hold_until(h, r) > now || (!opts->urgent && (opts->paced || pacing(h, now)))) {
                r->paced = true;
                r->urgent = opts->urgent;
                r->paced_seq = ++h->paced_seq;
                h->n_paced++;
                arm_pace_timer(h);
        } else if (h->in_write_callback) {
                h->last_start_usec = now;
                /* curl refuses multi calls from inside its callbacks, and a cache callback
                 * that reacts to a watch event by posting an Event runs there. */
                r->deferred = true;
                h->n_deferred++;
                k = sd_event_source_set_enabled(h->deferred_adds, SD_EVENT_ONESHOT);
                if (k < 0) {
                        request_free(r);
                        return k;
                }
        } else if ((k = add_to_multi(r)) < 0) {
                request_free(r);
                return k;
        } else
                h->last_start_usec = now;
        if (ret)
                *ret = r;
        return 0;
}

uint64_t kube_http_jitter_usec(struct kube_http *h, uint64_t max_usec)
{
        /* splitmix64: a per-client sequence, seedable so tests replay the same spread. */
        uint64_t z = (h->jitter_state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        return max_usec ? z % (max_usec + 1) : 0;
}

void kube_http_seed_jitter(struct kube_http *h, uint64_t seed)
{
        h->jitter_state = seed;
}

uint64_t kube_http_reconnect_window_usec(struct kube_http *h)
{
        uint64_t window = KUBE_RECONNECT_WINDOW_MIN_USEC;
        if (h->outage_since_usec) {
                uint64_t outage = http_now(h) - h->outage_since_usec;
                if (outage > window)
                        window = outage;
        }
        return window < KUBE_RECONNECT_WINDOW_MAX_USEC ? window : KUBE_RECONNECT_WINDOW_MAX_USEC;
}

int kube_http_start_json(struct kube_http *h, const struct kube_request_opts *opts, json_t *body,
                         struct kube_request **ret)
{
        _cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (body && !text)
                return -ENOMEM;
        struct kube_request_opts o = *opts;
        o.body = text;
        o.body_len = text ? strlen(text) : 0;
        return kube_http_start(h, &o, ret);
}
