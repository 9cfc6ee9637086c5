/* SPDX-License-Identifier: Apache-2.0 */
#include "grpc/grpc-frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void grpc_frame_reader_init(struct grpc_frame_reader *r, size_t max_message)
{
        *r = (struct grpc_frame_reader){ .max_message = max_message ?: GRPC_MESSAGE_MAX_DEFAULT };
}

void grpc_frame_reader_done(struct grpc_frame_reader *r)
{
        free(r->buf);
        r->buf = NULL;
        r->size = r->allocated = 0;
}

static uint32_t read_be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Checks the prefix of the first buffered message as soon as it is complete, so an oversized
 * message is refused before its body is accumulated. */
static int check_head(const struct grpc_frame_reader *r)
{
        if (r->size < GRPC_FRAME_PREFIX_SIZE)
                return 0;
        if (r->buf[0] != 0)
                return r->buf[0] == 1 ? -EPROTO : -EBADMSG;
        if (read_be32(r->buf + 1) > r->max_message)
                return -EMSGSIZE;
        return 0;
}

int grpc_frame_reader_feed(struct grpc_frame_reader *r, const uint8_t *data, size_t len)
{
        int k = check_head(r);
        if (k < 0)
                return k;
        if (len == 0)
                return 0;
        /* The whole buffer, not just one message, is bounded: a peer streaming many small
         * messages without ending the stream cannot make us hold more than one maximal one. */
        if (r->size + len > r->max_message + GRPC_FRAME_PREFIX_SIZE)
                return -EMSGSIZE;
        if (r->size + len > r->allocated) {
                /* Once the first message's length is known its whole size is taken at once
                 * (what a memory budget must reserve anyway), else the buffer doubles. */
                size_t n = r->allocated ? r->allocated : 256;
                while (n < r->size + len)
                        n *= 2;
                if (r->size + len >= GRPC_FRAME_PREFIX_SIZE) {
                        uint8_t head[GRPC_FRAME_PREFIX_SIZE];
                        size_t have = r->size < sizeof(head) ? r->size : sizeof(head);
                        if (have) /* r->buf is still NULL before the first allocation */
                                memcpy(head, r->buf, have);
                        memcpy(head + have, data, sizeof(head) - have);
                        size_t whole = GRPC_FRAME_PREFIX_SIZE + read_be32(head + 1);
                        if (whole > r->max_message + GRPC_FRAME_PREFIX_SIZE)
                                whole = r->max_message + GRPC_FRAME_PREFIX_SIZE;
                        n = r->size + len > whole ? n : whole;
                }
                uint8_t *b = realloc(r->buf, n);
                if (!b)
                        return -ENOMEM;
                r->buf = b;
                r->allocated = n;
        }
        memcpy(r->buf + r->size, data, len);
        r->size += len;
        return check_head(r);
}

int grpc_frame_reader_next(struct grpc_frame_reader *r, uint8_t **ret, size_t *ret_len)
{
        int k = check_head(r);
        if (k < 0)
                return k;
        if (r->size < GRPC_FRAME_PREFIX_SIZE)
                return 0;
        size_t len = read_be32(r->buf + 1);
        if (r->size < GRPC_FRAME_PREFIX_SIZE + len)
                return 0;
        uint8_t *msg = NULL;
        if (len > 0) {
                msg = malloc(len);
                if (!msg)
                        return -ENOMEM;
                memcpy(msg, r->buf + GRPC_FRAME_PREFIX_SIZE, len);
        }
        size_t used = GRPC_FRAME_PREFIX_SIZE + len;
        memmove(r->buf, r->buf + used, r->size - used);
        r->size -= used;
        *ret = msg;
        *ret_len = len;
        return 1;
}

int grpc_frame_reader_has_partial(const struct grpc_frame_reader *r)
{
        return r->size > 0;
}

int grpc_frame_encode(const uint8_t *payload, size_t len, uint8_t **ret, size_t *ret_len)
{
        if (len > UINT32_MAX)
                return -EMSGSIZE;
        uint8_t *b = malloc(GRPC_FRAME_PREFIX_SIZE + len);
        if (!b)
                return -ENOMEM;
        b[0] = 0;
        b[1] = (uint8_t)(len >> 24);
        b[2] = (uint8_t)(len >> 16);
        b[3] = (uint8_t)(len >> 8);
        b[4] = (uint8_t)len;
        if (len > 0)
                memcpy(b + GRPC_FRAME_PREFIX_SIZE, payload, len);
        *ret = b;
        *ret_len = GRPC_FRAME_PREFIX_SIZE + len;
        return 0;
}
