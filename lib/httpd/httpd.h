/* SPDX-License-Identifier: Apache-2.0 */
/* A small HTTP/1.1 server for one GET path (the metrics endpoint), on the caller's sd-event
 * loop: libmicrohttpd in its external epoll mode, its epoll fd watched by sd-event, so the
 * server costs no thread and no wake-up while nobody connects.
 *
 * Bounded by construction: at most max_connections at once (and half of them per client
 * address; a client address over its half gets 503 and is closed, clients beyond the total
 * wait in the listen queue and are accepted the moment a connection closes), max_request_bytes for
 * the request line and headers (more: 431), timeout_s for a client that stalls or does not read,
 * and for a whole request, so one that sends a byte now and then (slowloris) cannot keep its slot.
 * GET on the path calls the handler; other paths answer 404, other methods on the path 405 (with
 * Allow: GET).
 *
 * The handler may answer at once or later from the loop (it waits for the kubelet): the
 * connection is suspended meanwhile and costs nothing. */
#pragma once

#include <stddef.h>
#include <systemd/sd-event.h>

#include "util/macro.h"

struct httpd;
struct httpd_request;

typedef void (*httpd_handler_fn)(struct httpd_request *req, void *userdata);

struct httpd_options {
        const char *listen;       /* "HOST:PORT", "[V6]:PORT" or ":PORT" (every address) */
        const char *path;         /* the one path served, "/metrics" */
        unsigned max_connections; /* 0 = HTTPD_MAX_CONNECTIONS */
        size_t max_request_bytes; /* request line + headers; 0 = HTTPD_MAX_REQUEST_BYTES */
        unsigned timeout_s;       /* a connection idle this long is closed; 0 = 10 */
        httpd_handler_fn handler;
        void *userdata;
};

#define HTTPD_MAX_CONNECTIONS   16
#define HTTPD_MAX_REQUEST_BYTES (16 * 1024)

/* -EINVAL for an address that does not parse (logged, naming it), or the bind/listen error. */
int httpd_new(sd_event *event, const struct httpd_options *opts, struct httpd **ret);
/* Pending requests get their abort callback, then 503; then every connection is closed. */
struct httpd *httpd_free(struct httpd *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct httpd *, httpd_free);
/* The port listened on (useful with port 0). */
int httpd_port(const struct httpd *h);

/* Answers the request with body (taken: free()d by the server, also on error). Once per
 * request; from the handler or later from the loop. */
void httpd_respond(struct httpd_request *req, unsigned status, const char *content_type, char *body,
                   size_t len);
/* A request header's value (name case-insensitive), NULL when absent; valid until answered. */
const char *httpd_request_header(const struct httpd_request *req, const char *name);
/* For an answer that comes later: abort(data) runs if the server is freed first (the
 * request is then answered 503 by the server; do not answer it). */
void httpd_request_on_abort(struct httpd_request *req, void (*abort)(void *data), void *data);

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" (host "" = every address). Exposed for tests. */
int httpd_parse_listen(const char *address, char *host, size_t host_size, unsigned *port);
