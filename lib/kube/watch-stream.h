/* SPDX-License-Identifier: Apache-2.0 */
/* Splits a Kubernetes watch stream into events and decodes them.
 *
 * The body of a watch is newline-delimited JSON: {"type":"ADDED","object":{...}} per line
 * (chunk boundaries mean nothing). Bytes are fed as they arrive; each complete line is decoded
 * and handed to the callback. A line longer than max_line (KUBE_WATCH_MAX_EVENT by default),
 * malformed JSON, or a well-formed line that is not a watch event fails the stream: feed
 * returns -EFBIG or -EBADMSG and keeps returning it. The caller ends the stream and relists.
 * Memory stays bounded by max_line. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define KUBE_WATCH_MAX_EVENT (16u * 1024 * 1024)
/* A line buffer grown beyond this for one event is freed once that event is decoded. */
#define KUBE_WATCH_KEEP_BUFFER (64u * 1024)

enum kube_watch_event_type {
        KUBE_WATCH_ADDED,
        KUBE_WATCH_MODIFIED,
        KUBE_WATCH_DELETED,
        KUBE_WATCH_BOOKMARK,
        KUBE_WATCH_ERROR,
        _KUBE_WATCH_EVENT_TYPE_MAX,
};

const char *kube_watch_event_type_to_string(enum kube_watch_event_type t);
int kube_watch_event_type_from_string(const char *s); /* -EINVAL if unknown */

/* object is borrowed for the duration of the call (json_incref to keep it). Returning a
 * negative errno stops the stream with that error. */
typedef int (*kube_watch_event_fn)(enum kube_watch_event_type type, json_t *object, void *userdata);

struct kube_watch_stream {
        char *buf;
        size_t len, alloc;
        size_t max_line;
        int failed;      /* sticky error once the stream is broken */
        char error[160]; /* what was wrong, for the caller's log line */
};

/* max_line 0: KUBE_WATCH_MAX_EVENT; SIZE_MAX (anything above SIZE_MAX / 4): no cap. */
void kube_watch_stream_init(struct kube_watch_stream *s, size_t max_line);
void kube_watch_stream_done(struct kube_watch_stream *s);
/* Forgets buffered bytes and any failure: for a new stream. */
void kube_watch_stream_reset(struct kube_watch_stream *s);
int kube_watch_stream_feed(struct kube_watch_stream *s, const char *data, size_t len,
                           kube_watch_event_fn cb, void *userdata);
/* Bytes of an unfinished last line (a stream that ended mid-event was truncated). */
size_t kube_watch_stream_pending(const struct kube_watch_stream *s);
