/* SPDX-License-Identifier: Apache-2.0 */
/* A gRPC server on a unix socket, driven by the caller's sd-event loop (no threads).
 *
 * Methods are a table of full paths ("/v1beta1.DevicePlugin/Allocate") with either a unary
 * handler or a server-streaming handler; both receive the single request message. Responses go
 * out as `:status 200`, `content-type: application/grpc`, DATA, then `grpc-status` and a
 * percent-encoded `grpc-message` trailer; an error before any message is a trailers-only
 * response. A streaming call stays open and belongs to its handler: the handler sends messages
 * with grpc_call_send() whenever it likes and learns that the client went away (cancel,
 * disconnect, server shutdown) through the closed handler, after which the call is freed.
 * Peers that send garbage, oversized messages (> 4 MiB → RESOURCE_EXHAUSTED), cancel or vanish
 * cost only their call or connection. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "grpc/grpc-status.h"
#include "util/macro.h"

struct grpc_server;
struct grpc_call;

/* Returns a gRPC status code. On GRPC_STATUS_OK *ret_response and *ret_len hold the packed response
 * (malloc'd, may be NULL/0 for an empty message); otherwise st->message says why. */
typedef int (*grpc_unary_handler)(void *userdata, const uint8_t *request, size_t len,
                                  uint8_t **ret_response, size_t *ret_len, struct grpc_status *st);
/* Returns GRPC_STATUS_OK to keep the call (it then belongs to the handler), or an error code
 * with st->message, which is sent to the client. */
typedef int (*grpc_stream_handler)(void *userdata, struct grpc_call *call, const uint8_t *request,
                                   size_t len, struct grpc_status *st);
typedef void (*grpc_call_closed_handler)(struct grpc_call *call, void *userdata);

struct grpc_method {
        const char *path;
        grpc_unary_handler unary; /* exactly one of unary/stream */
        grpc_stream_handler stream;
};

/* Creates the socket (replacing a stale file at that path) and starts accepting. The method
 * table and userdata must outlive the server. */
int grpc_server_new(sd_event *event, const char *socket_path, const struct grpc_method *methods,
                    size_t n_methods, void *userdata, struct grpc_server **ret);
/* Finishes every open call with OK, sends GOAWAY, writes what is queued, closes everything and
 * removes the socket file if it is still ours. NULL-safe; returns NULL. */
struct grpc_server *grpc_server_free(struct grpc_server *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct grpc_server *, grpc_server_free);

/* A graceful stop in three steps, so that no call the client already sent is lost (the kubelet
 * closes a device plugin's connection as soon as its ListAndWatch stream ends, cancelling any
 * call still on it):
 *
 *   grpc_server_quiesce(s);                         // take in and answer what was sent
 *   grpc_server_finish_calls(s, pick, ud, code, m); // the owner ends its streams
 *   grpc_server_drain(s, grace, goaway_now, done, ud); // serve on until the peers close
 *
 * quiesce stops accepting (connections already queued are accepted first), removes the socket
 * file if it is still ours, and reads every request already on each connection: unary calls
 * are answered before it returns, streaming calls are handed to their handlers. */
void grpc_server_quiesce(struct grpc_server *s);
typedef bool (*grpc_call_pick_fn)(const struct grpc_call *call, void *userdata);
/* Ends every call whose request was handled and that is still open, where pick (NULL: any)
 * agrees, with code and message; a connection's frames go out together. */
void grpc_server_finish_calls(struct grpc_server *s, grpc_call_pick_fn pick, void *userdata,
                              int code, const char *message);
typedef void (*grpc_server_drained_fn)(struct grpc_server *s, void *userdata);
/* Keeps serving every connection until its peer closes it, or until grace_usec passed (then
 * reads once more, ends what is open with UNAVAILABLE, sends GOAWAY and closes); done runs
 * once no connection is left, from a deferred event, and may free the server. With goaway_now
 * a GOAWAY naming the last call read goes out at once: the client starts no call here any
 * more and closes the connection when its calls are answered (for peers that, unlike the
 * kubelet's device manager, would keep the connection). -EALREADY if already draining. */
int grpc_server_drain(struct grpc_server *s, uint64_t grace_usec, bool goaway_now,
                      grpc_server_drained_fn done, void *userdata);
const char *grpc_call_path(const struct grpc_call *call);

/* Number of open connections (for tests and diagnostics). */
size_t grpc_server_n_connections(const struct grpc_server *s);

int grpc_call_send(struct grpc_call *call, const uint8_t *msg, size_t len);
int grpc_call_finish(struct grpc_call *call, int code, const char *message);
void grpc_call_set_closed_handler(struct grpc_call *call, grpc_call_closed_handler fn,
                                  void *userdata);
