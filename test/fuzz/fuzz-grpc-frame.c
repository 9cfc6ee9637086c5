/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC message framing as an HTTP/2 stream delivers it: arbitrary DATA chunk boundaries.
 *
 * Input layout: byte 0 picks the reader's message cap (small caps reach the -EMSGSIZE path);
 * then repeated [n][n bytes] records, each record one fed chunk. Complete messages are taken out
 * after every chunk and re-encoded, which must give back the same payload. The whole input is
 * also run through the grpc-message percent decoder (a peer's trailer text). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc-frame.h"
#include "grpc/grpc-status.h"
#include "fuzz-common.h"

static void drain(struct grpc_frame_reader *r)
{
        uint8_t *msg;
        size_t len;
        while (grpc_frame_reader_next(r, &msg, &len) == 1) {
                uint8_t *framed = NULL;
                size_t framed_len = 0;
                if (grpc_frame_encode(msg, len, &framed, &framed_len) == 0) {
                        if (framed_len != len + GRPC_FRAME_PREFIX_SIZE ||
                            (len && memcmp(framed + GRPC_FRAME_PREFIX_SIZE, msg, len) != 0))
                                abort();
                        free(framed);
                }
                free(msg);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        static const size_t caps[] = { GRPC_MESSAGE_MAX_DEFAULT, 0, 1, 16, 256, 4096 };
        struct grpc_frame_reader r;
        grpc_frame_reader_init(&r, caps[data[0] % (sizeof(caps) / sizeof(caps[0]))]);

        size_t pos = 1;
        while (pos < size) {
                size_t n = data[pos++];
                if (n > size - pos)
                        n = size - pos;
                if (grpc_frame_reader_feed(&r, data + pos, n) < 0)
                        break;
                pos += n;
                drain(&r);
        }
        (void)grpc_frame_reader_has_partial(&r);
        grpc_frame_reader_done(&r);

        char *decoded = grpc_percent_decode((const char *)data, size);
        if (decoded) {
                free(grpc_percent_encode(decoded));
                free(decoded);
        }
        return 0;
}
