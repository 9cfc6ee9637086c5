/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC length-prefixed message framing.
 *
 * Every gRPC message on an HTTP/2 stream is a 5-byte prefix (1 byte "compressed" flag, 4 bytes
 * big-endian length) followed by the protobuf bytes. A message may be split across any number
 * of DATA frames and one DATA frame may carry several messages, so the reader reassembles.
 * Compressed messages are refused (we never advertise an encoding), and a message above the
 * reader's cap is refused before it is buffered. Pure: no I/O, no logging. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define GRPC_FRAME_PREFIX_SIZE   5
#define GRPC_MESSAGE_MAX_DEFAULT (4u * 1024u * 1024u)

struct grpc_frame_reader {
        uint8_t *buf;
        size_t size; /* bytes held */
        size_t allocated;
        size_t max_message;
};

void grpc_frame_reader_init(struct grpc_frame_reader *r, size_t max_message);
void grpc_frame_reader_done(struct grpc_frame_reader *r);

/* Appends received bytes. -EMSGSIZE when the message being received is larger than the cap,
 * -EPROTO when it is flagged compressed, -ENOMEM. Once an error was returned the reader is
 * unusable for that stream. */
int grpc_frame_reader_feed(struct grpc_frame_reader *r, const uint8_t *data, size_t len);

/* Takes the next complete message out: 1 with *ret (malloc'd, caller frees; may be NULL for an
 * empty message) and *ret_len, 0 when no complete message is buffered. */
int grpc_frame_reader_next(struct grpc_frame_reader *r, uint8_t **ret, size_t *ret_len);

/* True when bytes of an incomplete message are buffered (a stream that ends now is truncated). */
int grpc_frame_reader_has_partial(const struct grpc_frame_reader *r);

/* Builds prefix + payload into a new buffer. */
int grpc_frame_encode(const uint8_t *payload, size_t len, uint8_t **ret, size_t *ret_len);
