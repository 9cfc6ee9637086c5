/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/json-split.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/macro.h"

static size_t skip_ws(const char *s, size_t len, size_t i)
{
        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
                i++;
        return i;
}

/* End of the string starting at s[i] == '"' (index after the closing quote), 0 if none. */
static size_t skip_string(const char *s, size_t len, size_t i)
{
        for (i++; i < len; i++) {
                if (s[i] == '\\')
                        i++;
                else if (s[i] == '"')
                        return i + 1;
        }
        return 0;
}

/* End of the value starting at s[i] (after whitespace), 0 if malformed. Containers are
 * skipped by counting brackets, so any depth costs no stack. */
static size_t skip_value(const char *s, size_t len, size_t i)
{
        if (i >= len)
                return 0;
        if (s[i] == '"')
                return skip_string(s, len, i);
        if (s[i] != '{' && s[i] != '[') {
                size_t start = i;
                while (i < len && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' &&
                       s[i] != '\n' && s[i] != '\r' && s[i] != '\t')
                        i++;
                return i > start ? i : 0;
        }
        size_t depth = 0;
        for (; i < len; i++) {
                char c = s[i];
                if (c == '"') {
                        size_t e = skip_string(s, len, i);
                        if (!e)
                                return 0;
                        i = e - 1;
                } else if (c == '{' || c == '[')
                        depth++;
                else if (c == '}' || c == ']') {
                        if (--depth == 0)
                                return i + 1;
                }
        }
        return 0;
}

int kube_json_object_members(const char *s, size_t len, kube_json_member_fn cb, void *userdata)
{
        size_t i = skip_ws(s, len, 0);
        if (i >= len || s[i] != '{')
                return -EBADMSG;
        i = skip_ws(s, len, i + 1);
        if (i < len && s[i] == '}')
                return 0;
        for (;;) {
                if (i >= len || s[i] != '"')
                        return -EBADMSG;
                size_t kend = skip_string(s, len, i);
                if (!kend)
                        return -EBADMSG;
                size_t v = skip_ws(s, len, kend);
                if (v >= len || s[v] != ':')
                        return -EBADMSG;
                v = skip_ws(s, len, v + 1);
                size_t vend = skip_value(s, len, v);
                if (!vend)
                        return -EBADMSG;
                int k = cb(s + i + 1, kend - i - 2, s + v, vend - v, userdata);
                if (k < 0)
                        return k;
                i = skip_ws(s, len, vend);
                if (i < len && s[i] == ',') {
                        i = skip_ws(s, len, i + 1);
                        continue;
                }
                return i < len && s[i] == '}' ? 0 : -EBADMSG;
        }
}

int kube_json_array_elements(const char *s, size_t len, kube_json_element_fn cb, void *userdata)
{
        size_t i = skip_ws(s, len, 0);
        if (i >= len || s[i] != '[')
                return -EBADMSG;
        i = skip_ws(s, len, i + 1);
        if (i < len && s[i] == ']')
                return 0;
        for (;;) {
                size_t vend = skip_value(s, len, i);
                if (!vend)
                        return -EBADMSG;
                int k = cb(s + i, vend - i, userdata);
                if (k < 0)
                        return k;
                i = skip_ws(s, len, vend);
                if (i < len && s[i] == ',') {
                        i = skip_ws(s, len, i + 1);
                        continue;
                }
                return i < len && s[i] == ']' ? 0 : -EBADMSG;
        }
}

struct stub_parts {
        json_t *stub;
};

static bool key_is(const char *key, size_t key_len, const char *want)
{
        return key_len == strlen(want) && memcmp(key, want, key_len) == 0;
}

static int stub_member(const char *key, size_t key_len, const char *value, size_t value_len,
                       void *userdata)
{
        struct stub_parts *p = userdata;
        const char *name = key_is(key, key_len, "kind")         ? "kind"
                           : key_is(key, key_len, "apiVersion") ? "apiVersion"
                           : key_is(key, key_len, "metadata")   ? "metadata"
                                                                : NULL;
        if (!name || value_len > KUBE_MAX_OBJECT_SIZE)
                return 0;
        json_t *v = json_loadb(value, value_len, JSON_DECODE_ANY, NULL);
        if (v)
                json_object_set_new(p->stub, name, v);
        return 0;
}

json_t *kube_json_decode_object(const char *text, size_t len, size_t max_size, char *reason,
                                size_t reason_size)
{
        if (!max_size)
                max_size = KUBE_MAX_OBJECT_SIZE;
        json_error_t jerr;
        if (len <= max_size) {
                json_auto_t *obj = json_loadb(text, len, 0, &jerr);
                if (json_is_object(obj))
                        return TAKE_PTR(obj);
                if (obj) {
                        snprintf(reason, reason_size, "not a JSON object");
                        return NULL;
                }
                snprintf(reason, reason_size, "cannot be decoded: %s (at byte %d)", jerr.text,
                         jerr.position);
        } else
                snprintf(reason, reason_size, "is %zu bytes, over the %zu-byte limit", len,
                         max_size);

        json_auto_t *stub = json_object();
        if (!stub)
                return NULL;
        struct stub_parts p = { .stub = stub };
        (void)kube_json_object_members(text, len, stub_member, &p);
        json_t *meta = json_object_get(stub, "metadata");
        if (!json_is_object(meta) || !json_is_string(json_object_get(meta, "name")))
                return NULL;
        json_t *ann = json_object_get(meta, "annotations");
        if (!json_is_object(ann)) {
                ann = json_object();
                json_object_set_new(meta, "annotations", ann);
        }
        /* Only the marker: other annotations (last-applied-configuration...) may be large. */
        json_object_clear(ann);
        json_object_set_new(ann, KUBE_UNDECODABLE_ANNOTATION, json_string(reason));
        json_object_del(meta, "managedFields");
        return TAKE_PTR(stub);
}

json_t *kube_object_stub(json_t *obj, const char *reason)
{
        json_auto_t *meta = json_deep_copy(json_object_get(obj, "metadata"));
        if (!json_is_object(meta) || !json_is_string(json_object_get(meta, "name")))
                return NULL;
        json_object_del(meta, "managedFields");
        json_object_set_new(meta, "annotations",
                            json_pack("{s:s}", KUBE_UNDECODABLE_ANNOTATION, reason));
        /* "o" steals meta also when json_pack fails. */
        json_t *stub = json_pack("{s:o}", "metadata", TAKE_PTR(meta));
        json_t *v;
        if (stub && (v = json_object_get(obj, "kind")))
                json_object_set(stub, "kind", v);
        if (stub && (v = json_object_get(obj, "apiVersion")))
                json_object_set(stub, "apiVersion", v);
        return stub;
}

const char *kube_object_undecodable(json_t *obj)
{
        return json_string_value(
            json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"),
                            KUBE_UNDECODABLE_ANNOTATION));
}
