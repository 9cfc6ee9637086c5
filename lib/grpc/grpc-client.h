/* SPDX-License-Identifier: Apache-2.0 */
/* Unary gRPC calls over a unix socket, as a client (Register to kubelet.sock, PodResources List).
 *
 * Each call opens its own connection (these calls are rare), sends the HTTP/2 preface, the
 * request headers (:method POST, :scheme http, :path, :authority, content-type
 * application/grpc, te: trailers) and the framed request, reads the response message and the
 * grpc-status/grpc-message trailers, and closes. The asynchronous form runs on the caller's
 * sd-event loop and reports exactly once through `done` (unless cancelled); the synchronous
 * form runs a private loop and is meant for CLI tools and tests. Connection failures are
 * UNAVAILABLE, the deadline DEADLINE_EXCEEDED, a response without one message INTERNAL. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "grpc/grpc-status.h"

struct grpc_client_call;

/* response is only valid during the callback (NULL/0 unless st->code is OK). */
typedef void (*grpc_unary_done_fn)(void *userdata, const struct grpc_status *st,
                                   const uint8_t *response, size_t len);

/* Fails immediately (negative errno) when the socket cannot be connected to (ENOENT,
 * ECONNREFUSED): callers retry with backoff. ret may be NULL when the caller never cancels. */
int grpc_unary_call(sd_event *event, const char *socket_path, const char *method_path,
                    const uint8_t *request, size_t len, uint64_t timeout_usec,
                    grpc_unary_done_fn done, void *userdata, struct grpc_client_call **ret);
/* Abandons the call without invoking done. */
void grpc_client_call_cancel(struct grpc_client_call *call);

/* Blocking form. Returns 0 when a gRPC status was obtained (check st->code; on OK *ret_response
 * holds the malloc'd response, possibly NULL when empty), negative errno if the socket could not
 * be reached. */
int grpc_unary_call_sync(const char *socket_path, const char *method_path, const uint8_t *request,
                         size_t len, uint64_t timeout_usec, struct grpc_status *st,
                         uint8_t **ret_response, size_t *ret_len);
