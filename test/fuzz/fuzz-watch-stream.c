/* SPDX-License-Identifier: Apache-2.0 */
/* A watch response body as libcurl hands it over: arbitrary chunk boundaries through the line
 * splitter, each complete line through the event decoder.
 *
 * Input layout: byte 0 picks the line cap (small caps reach -EFBIG) and, in its high bit,
 * a callback that stops the stream after its second event; then [n][n bytes] chunk records.
 * After a failure the stream is reset and fed the rest, as the informer does on a relist. */
#include <errno.h>

#include "fuzz-common.h"
#include "kube/watch-stream.h"

struct seen {
        unsigned events;
        bool stop_after_two;
};

static int on_event(enum kube_watch_event_type type, json_t *object, void *userdata)
{
        struct seen *seen = userdata;
        if (!kube_watch_event_type_to_string(type) || !object)
                abort(); /* the decoder hands over only known types, with an object */
        if (++seen->events == 2 && seen->stop_after_two)
                return -ECANCELED;
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        static const size_t caps[] = { KUBE_WATCH_MAX_EVENT, 0, 1, 16, 256, 4096, 64, 2 };
        struct seen seen = { .stop_after_two = data[0] & 0x80 };
        struct kube_watch_stream s;
        kube_watch_stream_init(&s, caps[data[0] % (sizeof(caps) / sizeof(caps[0]))]);

        bool was_reset = false;
        size_t pos = 1;
        while (pos < size) {
                size_t n = data[pos++];
                if (n > size - pos)
                        n = size - pos;
                int r = kube_watch_stream_feed(&s, (const char *)data + pos, n, on_event, &seen);
                pos += n;
                if (r < 0 && !was_reset) {
                        kube_watch_stream_reset(&s);
                        was_reset = true;
                }
        }
        (void)kube_watch_stream_pending(&s);
        kube_watch_stream_done(&s);
        return 0;
}
