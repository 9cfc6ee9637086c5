/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP requests to the API server through libcurl's multi interface, driven by sd-event.
 *
 * One struct kube_http per process binds a curl multi handle to the daemon's sd_event loop:
 * curl's sockets become sd-event I/O sources and its timer an sd-event time source, so no call
 * here ever blocks the loop. Every request carries the current bearer token (re-read from a
 * rotating token file), the kubeconfig's TLS settings, a connect timeout, and either a total
 * timeout (ordinary requests) or an idle timeout (watch streams, which live for minutes: ended
 * when their consumer has seen no whole message for that long).
 *
 * Completion is reported once through on_done, from the event loop, never from inside
 * kube_http_start(). A 200 response with on_data set is streamed to on_data as bytes arrive;
 * every other response body is collected and handed to on_done. After on_done the request is
 * freed. kube_request_cancel() stops a request without calling on_done; it is safe from any
 * callback, including the request's own. kube_http_start() is safe from any callback too
 * (e.g. a cache callback running inside a watch's on_data): such requests are handed to curl
 * on the next loop iteration. Where the server speaks HTTP/2 (ALPN h2) every request is a stream
 * of one connection: requests started together wait for it (CURLOPT_PIPEWAIT) rather than each
 * opening its own. At most 16 connections are opened; more requests queue.
 *
 * Recovery pacing: after trouble with the server (a refused or cut connection, a 5xx, a 429),
 * and for requests started with .paced (an informer restarting its list or watch), requests
 * are handed to curl at most one every 1.5 s, in start order, until 5 s pass without trouble or
 * queued request. .urgent requests (the Lease holder's writes) are not queued by the pacing.
 * A 429/503's Retry-After holds the resource that got it (its URL without the query: one
 * collection's lists and watches, or one object) until it passes, plus up to half again:
 * later requests to that resource wait, urgent ones too; requests to others do not.
 * So after an API server restart N agents send at most N requests in any one second (and the
 * Lease holder one more). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "kube/kubeconfig.h"

struct kube_http;
struct kube_request;

/* Streamed bytes of a 200 response. Returns a negative errno to abort the request (on_done
 * then reports that error), > 0 when the bytes show the stream alive (they completed a
 * message, or moved one far enough along), else 0: only > 0 keeps a stream from its idle
 * limit, so bytes that make no message (a trickle of keep-alive blank lines) do not hold a
 * dead stream open. */
typedef int (*kube_data_fn)(struct kube_request *req, const char *data, size_t len, void *userdata);
/* error: 0 or a negative errno for a transport failure (-ETIMEDOUT, -ECONNREFUSED, ...).
 * status: the HTTP status, 0 if none arrived. body: the collected body of a non-streamed
 * response (NUL-terminated, may be empty), NULL for a streamed one. */
typedef void (*kube_done_fn)(struct kube_request *req, int error, long status, const char *body,
                             size_t body_len, void *userdata);

struct kube_request_opts {
        const char *method; /* "GET" when NULL */
        const char *path;   /* "/api/v1/nodes?watch=1" — appended to the server URL */
        const char *content_type;
        const char *body;
        size_t body_len;
        kube_data_fn on_data; /* set for watch streams */
        kube_done_fn on_done;
        void *userdata;
        unsigned timeout_s; /* whole request; 0 = default (30 s) unless on_data is set */
        /* Streams: end with -ETIMEDOUT when on_data has not returned > 0 for this long,
         * counted from when the request was sent. */
        unsigned idle_timeout_s;
        bool paced; /* always through the pacing queue (a restart after a failure) */
        /* Never paced: only its own resource's Retry-After holds it (the Lease holder's
         * renewal, which has a deadline); first in the queue when held. */
        bool urgent;
};

/* What the client did, for the metrics endpoint: requests by verb ("GET", "PUT", ...,
 * "WATCH" for streams) and status code (0: no answer, a transport error), and watch streams
 * that ended (each is then restarted by its informer). Bounded: at most KUBE_HTTP_MAX_COUNTS
 * verb/code pairs; more are counted under code -1. */
#define KUBE_HTTP_MAX_COUNTS 64
struct kube_http_count {
        char verb[8];
        long code;
        uint64_t n;
};
struct kube_http_stats {
        struct kube_http_count counts[KUBE_HTTP_MAX_COUNTS];
        size_t n_counts;
        uint64_t watch_ends;
};
const struct kube_http_stats *kube_http_stats(const struct kube_http *h);

int kube_http_new(sd_event *event, struct kube_config *config, struct kube_http **ret);
/* Cancels every outstanding request (no callbacks) and frees. */
struct kube_http *kube_http_free(struct kube_http *h);
static inline void kube_http_freep(struct kube_http **h)
{
        kube_http_free(*h);
}

const char *kube_http_server(const struct kube_http *h);
sd_event *kube_http_event(const struct kube_http *h);

int kube_http_start(struct kube_http *h, const struct kube_request_opts *opts,
                    struct kube_request **ret);
/* kube_http_start() with opts->body/body_len replaced by body serialized compactly (no body
 * when body is NULL): the one place the writers (Lease, node state, networks, Events) turn an
 * object into a request. -ENOMEM when body cannot be serialized. */
int kube_http_start_json(struct kube_http *h, const struct kube_request_opts *opts, json_t *body,
                         struct kube_request **ret);
void kube_request_cancel(struct kube_request *req);
/* When the request was handed to curl (CLOCK_MONOTONIC, the event loop's clock; 0 while it
 * waits in the pacing queue): the server cannot have acted on it sooner. */
uint64_t kube_request_sent_usec(const struct kube_request *req);
/* The HTTP status once headers have arrived (0 before). */
long kube_request_status(struct kube_request *req);
/* curl's description of a transport failure ("SSL certificate problem: ...", "Connection
 * refused"); "" when none. Valid inside on_done. */
const char *kube_request_error_text(const struct kube_request *req);

/* The server's Retry-After (429/503 from API Priority and Fairness, in seconds or as a date),
 * in microseconds, capped at KUBE_RETRY_AFTER_MAX_S; 0 when absent. Valid inside on_done. */
#define KUBE_RETRY_AFTER_MAX_S 300
/* A collected (non-streamed) response body larger than this fails with -EFBIG (the error text
 * says so): it bounds what a list, or a hostile server, can make the agent hold. */
#define KUBE_MAX_BODY (16u * 1024 * 1024)
uint64_t kube_request_retry_after_usec(struct kube_request *req);

/* Reconnects after trouble are spread uniformly over a window that grows with the outage (the
 * time since the server last answered): at least 4 s, at most 15 s, so that with the pacing
 * (an agent's dozen restart requests, one every 1.5 s) every watch is back within 60 s. */
#define KUBE_RECONNECT_WINDOW_MIN_USEC (4ULL * 1000 * 1000)
#define KUBE_RECONNECT_WINDOW_MAX_USEC (15ULL * 1000 * 1000)
uint64_t kube_http_reconnect_window_usec(struct kube_http *h);
/* Uniform in [0, max_usec], from this client's own sequence (getrandom()-seeded; a test may
 * seed it to replay a spread). For jitter only. */
uint64_t kube_http_jitter_usec(struct kube_http *h, uint64_t max_usec);
void kube_http_seed_jitter(struct kube_http *h, uint64_t seed);

/* Percent-encodes s for a query parameter value. Caller frees. */
char *kube_http_escape(const char *s);
