#include "kube/yaml-json.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/macro.h"

/* Nesting deeper than this is not a kubeconfig; refusing it bounds our recursion. */
#define YAML_MAX_DEPTH 64

struct yaml_reader {
        yaml_parser_t parser;
        char **error;
        unsigned flags;
};

static int reader_fail(struct yaml_reader *r, const yaml_mark_t *mark, const char *what)
{
        if (asprintf(r->error, "line %zu column %zu: %s", mark->line + 1, mark->column + 1, what) <
            0)
                *r->error = NULL;
        return -EINVAL;
}

static int reader_parser_fail(struct yaml_reader *r)
{
        const char *problem = r->parser.problem ? r->parser.problem : "malformed YAML";
        return reader_fail(r, &r->parser.problem_mark, problem);
}

static int read_node(struct yaml_reader *r, yaml_event_t *first, unsigned depth, json_t **ret);

/* A plain scalar that is a number in the YAML 1.2 core schema, or NULL. */
static json_t *plain_number(const char *value)
{
        if (!*value)
                return NULL;
        char *end;
        errno = 0;
        long long i = strtoll(value, &end, 10);
        if (*end == '\0' && errno == 0 && strspn(value, "+-0123456789") == strlen(value))
                return json_integer(i);
        if (strspn(value, "+-0123456789.eE") != strlen(value) || !strpbrk(value, "0123456789"))
                return NULL;
        errno = 0;
        double d = strtod(value, &end);
        if (*end == '\0' && errno == 0)
                return json_real(d);
        return NULL;
}

static json_t *scalar_to_json(const struct yaml_reader *r, const yaml_event_t *ev)
{
        const char *value = (const char *)ev->data.scalar.value;
        if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
                json_t *number = (r->flags & YAML_JSON_TYPED) ? plain_number(value) : NULL;
                if (number)
                        return number;
                if (strcmp(value, "true") == 0)
                        return json_true();
                if (strcmp(value, "false") == 0)
                        return json_false();
                if (strcmp(value, "null") == 0 || strcmp(value, "~") == 0 || value[0] == '\0')
                        return json_null();
        }
        return json_stringn(value, ev->data.scalar.length);
}

static int next_event(struct yaml_reader *r, yaml_event_t *ev)
{
        if (!yaml_parser_parse(&r->parser, ev))
                return reader_parser_fail(r);
        return 0;
}

/* Reads one "key: value" pair of a mapping, given the key's event. */
static int read_mapping_entry(struct yaml_reader *r, yaml_event_t *key_ev, unsigned depth,
                              json_t *out)
{
        if (key_ev->type != YAML_SCALAR_EVENT) {
                int k = reader_fail(r, &key_ev->start_mark, "mapping keys must be plain strings");
                yaml_event_delete(key_ev);
                return k;
        }
        _cleanup_free_ char *key = strdup((const char *)key_ev->data.scalar.value);
        yaml_event_delete(key_ev);
        if (!key)
                return -ENOMEM;
        yaml_event_t value_ev;
        int k = next_event(r, &value_ev);
        if (k < 0)
                return k;
        json_t *value;
        k = read_node(r, &value_ev, depth + 1, &value);
        if (k < 0)
                return k;
        json_object_set_new(out, key, value);
        return 0;
}

static int read_collection(struct yaml_reader *r, bool mapping, unsigned depth, json_t **ret)
{
        json_t *out = mapping ? json_object() : json_array();
        if (!out)
                return -ENOMEM;
        for (;;) {
                yaml_event_t ev;
                int k = next_event(r, &ev);
                if (k < 0) {
                        json_decref(out);
                        return k;
                }
                if (ev.type == (mapping ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT)) {
                        yaml_event_delete(&ev);
                        *ret = out;
                        return 0;
                }
                if (mapping)
                        k = read_mapping_entry(r, &ev, depth, out);
                else {
                        json_t *item;
                        k = read_node(r, &ev, depth + 1, &item);
                        if (k >= 0)
                                json_array_append_new(out, item);
                }
                if (k < 0) {
                        json_decref(out);
                        return k;
                }
        }
}

/* Consumes `first` (and the events of its children). */
static int read_node(struct yaml_reader *r, yaml_event_t *first, unsigned depth, json_t **ret)
{
        int k;
        if (depth > YAML_MAX_DEPTH) {
                k = reader_fail(r, &first->start_mark, "nested too deeply");
                yaml_event_delete(first);
                return k;
        }
        switch (first->type) {
        case YAML_SCALAR_EVENT:
                *ret = scalar_to_json(r, first);
                yaml_event_delete(first);
                return *ret ? 0 : -ENOMEM;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
                bool mapping = first->type == YAML_MAPPING_START_EVENT;
                yaml_event_delete(first);
                return read_collection(r, mapping, depth, ret);
        }
        case YAML_ALIAS_EVENT:
                k = reader_fail(r, &first->start_mark, "aliases are not supported");
                break;
        default:
                k = reader_fail(r, &first->start_mark, "unexpected YAML event");
                break;
        }
        yaml_event_delete(first);
        return k;
}

int yaml_to_json(const char *text, size_t len, unsigned flags, json_t **ret, char **ret_error)
{
        struct yaml_reader r = { .error = ret_error, .flags = flags };
        *ret_error = NULL;
        if (!yaml_parser_initialize(&r.parser))
                return -ENOMEM;
        yaml_parser_set_input_string(&r.parser, (const unsigned char *)text, len);

        int k;
        json_t *root = NULL;
        for (;;) {
                yaml_event_t ev;
                k = next_event(&r, &ev);
                if (k < 0)
                        break;
                if (ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_START_EVENT) {
                        yaml_event_delete(&ev);
                        continue;
                }
                if (ev.type == YAML_STREAM_END_EVENT) { /* empty file */
                        yaml_event_delete(&ev);
                        root = json_null();
                        k = 0;
                        break;
                }
                k = read_node(&r, &ev, 0, &root);
                break;
        }
        yaml_parser_delete(&r.parser);
        if (k < 0)
                return k;
        *ret = root;
        return 0;
}
