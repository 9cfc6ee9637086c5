/* SPDX-License-Identifier: Apache-2.0 */
/* Protobuf-c messages packed into new buffers, as gRPC calls, replies and stream messages send
 * them; shared by the device plugin and the DRA driver (lib/dra sees this layer). It lives here
 * rather than in lib/grpc because only deviceplugin and dra link protobuf-c: grpc/ moves bytes and
 * knows no message types. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "grpc/grpc-status.h"

/* Packs m into a new buffer (*ret, caller frees; never NULL on success, even for an empty
 * message) of *ret_len bytes. 0 or -ENOMEM (*ret untouched). */
int dp_pack(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_len);

/* The same for a unary handler's reply: packs m into a new buffer (*ret, caller frees; never NULL
 * on success, even for an empty message) of *ret_len bytes. GRPC_STATUS_OK, or
 * GRPC_STATUS_RESOURCE_EXHAUSTED with st set and *ret untouched, so a handler can `return
 * dp_pack_reply(...)`. */
int dp_pack_reply(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_len,
                  struct grpc_status *st);
