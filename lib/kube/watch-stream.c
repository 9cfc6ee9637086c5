/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/watch-stream.h"

#include "kube/json-split.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const event_type_table[_KUBE_WATCH_EVENT_TYPE_MAX] = {
        [KUBE_WATCH_ADDED] = "ADDED",     [KUBE_WATCH_MODIFIED] = "MODIFIED",
        [KUBE_WATCH_DELETED] = "DELETED", [KUBE_WATCH_BOOKMARK] = "BOOKMARK",
        [KUBE_WATCH_ERROR] = "ERROR",
};

const char *kube_watch_event_type_to_string(enum kube_watch_event_type t)
{
        return (unsigned)t < _KUBE_WATCH_EVENT_TYPE_MAX ? event_type_table[t] : NULL;
}

int kube_watch_event_type_from_string(const char *s)
{
        for (int i = 0; i < _KUBE_WATCH_EVENT_TYPE_MAX; i++)
                if (s && strcmp(s, event_type_table[i]) == 0)
                        return i;
        return -EINVAL;
}

void kube_watch_stream_init(struct kube_watch_stream *s, size_t max_line)
{
        /* A larger cap means none; bounded so that the buffer size (cap + 1, doubled while
         * growing) cannot wrap around to a buffer smaller than the line. */
        if (max_line > SIZE_MAX / 4)
                max_line = SIZE_MAX / 4;
        *s = (struct kube_watch_stream){ .max_line = max_line ? max_line : KUBE_WATCH_MAX_EVENT };
}

void kube_watch_stream_done(struct kube_watch_stream *s)
{
        free(s->buf);
        s->buf = NULL;
        s->len = s->alloc = 0;
}

void kube_watch_stream_reset(struct kube_watch_stream *s)
{
        s->len = 0;
        s->failed = 0;
        s->error[0] = '\0';
        /* Do not keep a 16 MiB buffer around after one huge event. */
        if (s->alloc > 1024 * 1024) {
                free(s->buf);
                s->buf = NULL;
                s->alloc = 0;
        }
}

size_t kube_watch_stream_pending(const struct kube_watch_stream *s)
{
        return s->len;
}

static int stream_fail(struct kube_watch_stream *s, int error, const char *what)
{
        /* Truncating a log phrase is fine; strnlen + memcpy say so without a warning. */
        size_t n = strnlen(what, sizeof(s->error) - 1);
        memcpy(s->error, what, n);
        s->error[n] = '\0';
        s->failed = error;
        s->len = 0;
        return error;
}

/* Room for {"type":"MODIFIED","object":...} around an object. */
#define EVENT_ENVELOPE 64

struct event_parts {
        json_t *type, *object;
};

static int event_member(const char *key, size_t key_len, const char *value, size_t value_len,
                        void *userdata)
{
        struct event_parts *p = userdata;
        char reason[256];
        if (key_len == 4 && memcmp(key, "type", 4) == 0 && value_len < 64) {
                json_decref(p->type);
                p->type = json_loadb(value, value_len, JSON_DECODE_ANY, NULL);
        } else if (key_len == 6 && memcmp(key, "object", 6) == 0) {
                json_decref(p->object);
                p->object = kube_json_decode_object(value, value_len, 0, reason, sizeof(reason));
        }
        return 0;
}

/* The event with its object replaced by a stub (json-split.h), or NULL. */
static json_t *decode_event_stub(const char *line, size_t len)
{
        struct event_parts p = {};
        json_t *ev = NULL;
        /* Only an object that is itself undecodable is isolated: when it decodes on its own,
         * the envelope was the problem (duplicate keys...) and the stream is not trusted. */
        if (kube_json_object_members(line, len, event_member, &p) == 0 && json_is_string(p.type) &&
            p.object && kube_object_undecodable(p.object))
                ev = json_pack("{s:O, s:O}", "type", p.type, "object", p.object);
        json_decref(p.type);
        json_decref(p.object);
        return ev;
}

static int decode_line(struct kube_watch_stream *s, const char *line, size_t len,
                       kube_watch_event_fn cb, void *userdata)
{
        while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
                len--;
        if (len == 0)
                return 0; /* blank keep-alive line */

        json_error_t jerr;
        json_auto_t *ev = len <= KUBE_MAX_OBJECT_SIZE + EVENT_ENVELOPE
                              ? json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr)
                              : NULL;
        if (!ev)
                /* One object that cannot be decoded (too deep, a too big integer, too large)
                 * must not end the stream for the others: deliver it as a named stub. */
                ev = decode_event_stub(line, len);
        if (!ev) {
                char what[sizeof(jerr.text) + 64];
                if (len > KUBE_MAX_OBJECT_SIZE + EVENT_ENVELOPE)
                        snprintf(what, sizeof(what),
                                 "watch event of %zu bytes without a "
                                 "readable type and object name",
                                 len);
                else
                        snprintf(what, sizeof(what),
                                 "malformed JSON in watch event at column %d: %.*s", jerr.column,
                                 80, jerr.text);
                return stream_fail(s, -EBADMSG, what);
        }
        const char *type = json_string_value(json_object_get(ev, "type"));
        json_t *object = json_object_get(ev, "object");
        int t = kube_watch_event_type_from_string(type);
        int k;
        if (t < 0)
                k = stream_fail(s, -EBADMSG, "watch event without a known \"type\"");
        else if (!json_is_object(object))
                k = stream_fail(s, -EBADMSG, "watch event without an \"object\"");
        else {
                k = cb((enum kube_watch_event_type)t, object, userdata);
                if (k < 0)
                        s->failed = k;
        }
        return k;
}

int kube_watch_stream_feed(struct kube_watch_stream *s, const char *data, size_t len,
                           kube_watch_event_fn cb, void *userdata)
{
        if (s->failed)
                return s->failed;
        while (len > 0) {
                const char *nl = memchr(data, '\n', len);
                size_t take = nl ? (size_t)(nl - data) : len;

                if (s->len + take > s->max_line) {
                        char what[160];
                        snprintf(what, sizeof(what),
                                 "watch event larger than %zu bytes; dropping the stream",
                                 s->max_line);
                        return stream_fail(s, -EFBIG, what);
                }
                if (nl && s->len == 0) {
                        /* Whole line in this buffer: decode in place, no copy. */
                        int k = decode_line(s, data, take, cb, userdata);
                        if (k < 0)
                                return k;
                } else {
                        if (!s->buf || s->len + take + 1 > s->alloc) { /* !buf: for the analyzer */
                                size_t want = s->alloc ? s->alloc : 4096;
                                while (want < s->len + take + 1)
                                        want *= 2;
                                if (want > s->max_line + 1)
                                        want = s->max_line + 1;
                                char *p = realloc(s->buf, want);
                                if (!p)
                                        return stream_fail(s, -ENOMEM, "out of memory");
                                s->buf = p;
                                s->alloc = want;
                        }
                        memcpy(s->buf + s->len, data, take);
                        s->len += take;
                        if (nl) {
                                size_t line_len = s->len;
                                s->len = 0;
                                int k = decode_line(s, s->buf, line_len, cb, userdata);
                                /* An event this large is rare (a NodeState with hundreds of
                                 * VFs): do not keep its buffer resident until the next, nor
                                 * the heap pages its decoded tree (freed already) took. */
                                if (s->alloc > KUBE_WATCH_KEEP_BUFFER) {
                                        kube_watch_stream_done(s);
                                        malloc_trim(0);
                                }
                                if (k < 0)
                                        return k;
                        }
                }
                if (!nl)
                        break;
                data = nl + 1;
                len -= take + 1;
        }
        return 0;
}
