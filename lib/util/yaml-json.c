/* SPDX-License-Identifier: Apache-2.0 */
#include "util/yaml-json.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/array.h"
#include "util/macro.h"

static bool str_in(const char *s, const char *const *list)
{
        for (; *list; list++)
                if (strcmp(s, *list) == 0)
                        return true;
        return false;
}

/* Integers as YAML 1.2 core schema writes them, plus 0o/0x prefixes. */
static bool parse_yaml_int(const char *s, json_int_t *ret)
{
        const char *p = s;
        int base = 10;
        bool neg = false;
        char *end;

        if (*p == '+' || *p == '-')
                neg = *p++ == '-';
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
                base = 16;
                p += 2;
        } else if (p[0] == '0' && p[1] == 'o') {
                base = 8;
                p += 2;
        }
        if (!*p)
                return false;
        for (const char *q = p; *q; q++) {
                bool ok = base == 16 ? strchr("0123456789abcdefABCDEF", *q) != NULL
                                     : (*q >= '0' && *q <= (base == 8 ? '7' : '9'));
                if (!ok)
                        return false;
        }
        errno = 0;
        unsigned long long v = strtoull(p, &end, base);
        if (errno || *end || v > (unsigned long long)INT64_MAX)
                return false;
        *ret = neg ? -(json_int_t)v : (json_int_t)v;
        return true;
}

static bool parse_yaml_float(const char *s, double *ret)
{
        char *end;

        /* Must look like a number: digits with '.', or an exponent. */
        if (!strpbrk(s, "0123456789") || strspn(s, "+-0123456789.eE") != strlen(s))
                return false;
        errno = 0;
        *ret = strtod(s, &end);
        return errno == 0 && *end == '\0' && end != s;
}

static json_t *plain_scalar_to_json(const char *s)
{
        static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
        static const char *const trues[] = { "true", "True", "TRUE", NULL };
        static const char *const falses[] = { "false", "False", "FALSE", NULL };
        json_int_t i;
        double d;

        if (str_in(s, nulls))
                return json_null();
        if (str_in(s, trues))
                return json_true();
        if (str_in(s, falses))
                return json_false();
        if (parse_yaml_int(s, &i))
                return json_integer(i);
        if (parse_yaml_float(s, &d))
                return json_real(d);
        return json_string(s);
}

/* A plain scalar outside key position: typed with YAML_JSON_TYPED; otherwise only
 * true/false/null are, numbers stay strings. */
static json_t *scalar_to_json(const char *s, unsigned flags)
{
        if (flags & YAML_JSON_TYPED)
                return plain_scalar_to_json(s);
        json_t *v = plain_scalar_to_json(s);
        if (json_is_integer(v) || json_is_real(v)) {
                json_decref(v);
                return json_string(s);
        }
        return v;
}

/* One open sequence or mapping. */
struct frame {
        json_t *value;
        json_t *key;         /* mapping: the key waiting for its value, NULL when none */
        char *anchor;        /* to register once the node is complete, or NULL */
        size_t nodes_before; /* ctx->nodes_made when it opened: its size once closed */
        unsigned height;     /* of its deepest child so far (a scalar child is 0) */
};

/* An anchored node of the current document, for its aliases. */
struct anchor {
        json_t *value;
        size_t nodes;    /* nodes it expands to */
        unsigned height; /* levels below it */
};

/* The document is built from parser events, so the nesting depth and the number of nodes are
 * checked as the text is read: a hostile file 2,000 or 2,000,000 levels deep stops at level
 * YAML_JSON_MAX_DEPTH + 1, before libyaml or we hold anything for the levels below. */
struct convert_ctx {
        unsigned flags;
        size_t nodes_made;
        struct frame frames[YAML_JSON_MAX_DEPTH + 1];
        unsigned depth;       /* open frames */
        json_t *anchor_index; /* name -> index into anchors */
        struct anchor *anchors;
        size_t n_anchors, cap_anchors;
        json_t *root;
        char *error;
};

static int fail_at(struct convert_ctx *ctx, const yaml_mark_t *mark, const char *what)
{
        if (!ctx->error && asprintf(&ctx->error, "line %zu: %s", mark->line + 1, what) < 0)
                ctx->error = NULL;
        return -EINVAL;
}

static void ctx_reset(struct convert_ctx *ctx)
{
        for (unsigned i = 0; i < ctx->depth; i++) {
                json_decref(ctx->frames[i].value);
                json_decref(ctx->frames[i].key);
                free(ctx->frames[i].anchor);
        }
        ctx->depth = 0;
        for (size_t i = 0; i < ctx->n_anchors; i++)
                json_decref(ctx->anchors[i].value);
        free(ctx->anchors);
        ctx->anchors = NULL;
        ctx->n_anchors = ctx->cap_anchors = 0;
        json_decref(ctx->anchor_index);
        ctx->anchor_index = NULL;
        json_decref(ctx->root);
        ctx->root = NULL;
        ctx->nodes_made = 0;
}

static int add_anchor(struct convert_ctx *ctx, const char *name, json_t *value, size_t nodes,
                      unsigned height)
{
        if (!ctx->anchor_index && !(ctx->anchor_index = json_object()))
                return -ENOMEM;
        if (GROW_ARRAY(ctx->anchors, ctx->cap_anchors, ctx->n_anchors + 1) < 0)
                return -ENOMEM;
        /* A redefined anchor: later aliases mean the new node, as in YAML. */
        if (json_object_set_new(ctx->anchor_index, name, json_integer((json_int_t)ctx->n_anchors)) <
            0)
                return -ENOMEM;
        ctx->anchors[ctx->n_anchors++] =
            (struct anchor){ .value = json_incref(value), .nodes = nodes, .height = height };
        return 0;
}

/* Places a complete node (a reference is taken) into the open container, or as the root. */
static int place(struct convert_ctx *ctx, json_t *v, unsigned height, const yaml_mark_t *mark)
{
        if (ctx->depth == 0) {
                json_decref(ctx->root);
                ctx->root = v;
                return 0;
        }
        struct frame *f = &ctx->frames[ctx->depth - 1];
        if (height + 1 > f->height)
                f->height = height + 1;
        if (json_is_array(f->value))
                return json_array_append_new(f->value, v) < 0 ? -ENOMEM : 0;
        if (!f->key) {
                if (!json_is_string(v)) {
                        json_decref(v);
                        return fail_at(ctx, mark, "mapping key is not a scalar");
                }
                if (json_object_get(f->value, json_string_value(v))) {
                        char msg[160];
                        snprintf(msg, sizeof(msg), "duplicate mapping key \"%.100s\"",
                                 json_string_value(v));
                        json_decref(v);
                        return fail_at(ctx, mark, msg);
                }
                f->key = v;
                return 0;
        }
        int r = json_object_set_new(f->value, json_string_value(f->key), v);
        json_decref(f->key);
        f->key = NULL;
        return r < 0 ? fail_at(ctx, mark, "mapping key is not valid UTF-8") : 0;
}

static bool in_key_position(const struct convert_ctx *ctx)
{
        const struct frame *f = ctx->depth ? &ctx->frames[ctx->depth - 1] : NULL;
        return f && json_is_object(f->value) && !f->key;
}

static int count_node(struct convert_ctx *ctx, size_t n, const yaml_mark_t *mark)
{
        ctx->nodes_made += n;
        if (ctx->nodes_made > YAML_JSON_MAX_NODES)
                return fail_at(ctx, mark, "document expands to too many nodes (alias bomb?)");
        return 0;
}

static int on_scalar(struct convert_ctx *ctx, const yaml_event_t *e)
{
        const char *s = (const char *)e->data.scalar.value;
        json_t *v;
        int r;

        if (ctx->depth > YAML_JSON_MAX_DEPTH)
                return fail_at(ctx, &e->start_mark, "nesting too deep");
        if ((r = count_node(ctx, 1, &e->start_mark)) < 0)
                return r;
        if (strlen(s) != e->data.scalar.length)
                v = NULL; /* embedded NUL: not representable */
        else if (in_key_position(ctx) || e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
                 (e->data.scalar.tag &&
                  strcmp((const char *)e->data.scalar.tag, YAML_STR_TAG) == 0))
                v = json_string(s); /* keys are text whatever they look like */
        else
                v = scalar_to_json(s, ctx->flags);
        if (!v)
                return fail_at(ctx, &e->start_mark,
                               "scalar contains a NUL character or is not valid UTF-8");
        if (e->data.scalar.anchor &&
            (r = add_anchor(ctx, (const char *)e->data.scalar.anchor, v, 1, 0)) < 0) {
                json_decref(v);
                return r;
        }
        return place(ctx, v, 0, &e->start_mark);
}

static int on_alias(struct convert_ctx *ctx, const yaml_event_t *e)
{
        const json_t *idx;
        int r;

        if (ctx->flags & YAML_JSON_NO_ALIASES)
                return fail_at(ctx, &e->start_mark, "anchors and aliases are not supported here");
        idx = ctx->anchor_index
                  ? json_object_get(ctx->anchor_index, (const char *)e->data.alias.anchor)
                  : NULL;
        if (!idx) /* also an alias inside its own anchor: that node is not complete yet */
                return fail_at(ctx, &e->start_mark, "alias to an unknown or enclosing anchor");
        const struct anchor *an = &ctx->anchors[json_integer_value(idx)];
        if (ctx->depth + an->height > YAML_JSON_MAX_DEPTH)
                return fail_at(ctx, &e->start_mark, "nesting too deep (through an alias)");
        if ((r = count_node(ctx, an->nodes, &e->start_mark)) < 0)
                return r;
        /* A copy: the document is a tree, and a consumer may change one place of it. */
        json_t *v = json_deep_copy(an->value);
        if (!v)
                return -ENOMEM;
        return place(ctx, v, an->height, &e->start_mark);
}

static int on_start(struct convert_ctx *ctx, const yaml_event_t *e, bool mapping)
{
        const yaml_char_t *anchor =
            mapping ? e->data.mapping_start.anchor : e->data.sequence_start.anchor;
        int r;

        if (ctx->depth >= YAML_JSON_MAX_DEPTH)
                return fail_at(ctx, &e->start_mark, "nesting too deep");
        if (in_key_position(ctx))
                return fail_at(ctx, &e->start_mark, "mapping key is not a scalar");
        if ((r = count_node(ctx, 1, &e->start_mark)) < 0)
                return r;
        struct frame f = { .value = mapping ? json_object() : json_array(),
                           .nodes_before = ctx->nodes_made - 1 };
        if (!f.value)
                return -ENOMEM;
        if (anchor && !(f.anchor = strdup((const char *)anchor))) {
                json_decref(f.value);
                return -ENOMEM;
        }
        ctx->frames[ctx->depth++] = f;
        return 0;
}

static int on_end(struct convert_ctx *ctx, const yaml_event_t *e)
{
        struct frame f;
        int r = 0;

        if (ctx->depth == 0)
                return fail_at(ctx, &e->start_mark, "unbalanced end of a collection");
        f = ctx->frames[--ctx->depth];
        json_decref(f.key); /* libyaml always gives a value, so this is NULL */
        if (f.anchor)
                r = add_anchor(ctx, f.anchor, f.value, ctx->nodes_made - f.nodes_before, f.height);
        free(f.anchor);
        if (r < 0) {
                json_decref(f.value);
                return r;
        }
        return place(ctx, f.value, f.height, &e->start_mark);
}

static int parser_error(const yaml_parser_t *parser, char **error)
{
        if (parser->error == YAML_MEMORY_ERROR)
                return -ENOMEM;
        if (asprintf(error, "line %zu column %zu: %s%s%s", parser->problem_mark.line + 1,
                     parser->problem_mark.column + 1,
                     parser->problem ? parser->problem : "syntax error", parser->context ? " " : "",
                     parser->context ? parser->context : "") < 0)
                return -ENOMEM;
        return -EINVAL;
}

int yaml_to_json_documents(const char *data, size_t size, unsigned flags, json_t **ret,
                           char **error)
{
        struct convert_ctx ctx = { .flags = flags };
        yaml_parser_t parser;
        bool done = false;
        int r = 0;

        *error = NULL;
        json_auto_t *docs = json_array();
        if (!docs)
                return -ENOMEM;
        if (!yaml_parser_initialize(&parser))
                return -ENOMEM;
        yaml_parser_set_input_string(&parser, (const unsigned char *)data, size);

        while (r >= 0 && !done) {
                yaml_event_t e;

                if (!yaml_parser_parse(&parser, &e)) {
                        r = parser_error(&parser, error);
                        break;
                }
                switch (e.type) {
                case YAML_STREAM_END_EVENT:
                        done = true;
                        break;
                case YAML_DOCUMENT_START_EVENT:
                        ctx_reset(&ctx); /* anchors do not cross documents */
                        break;
                case YAML_DOCUMENT_END_EVENT:
                        r = json_array_append_new(docs, ctx.root ? ctx.root : json_null()) < 0
                                ? -ENOMEM
                                : 0;
                        ctx.root = NULL;
                        break;
                case YAML_SCALAR_EVENT:
                        r = on_scalar(&ctx, &e);
                        break;
                case YAML_ALIAS_EVENT:
                        r = on_alias(&ctx, &e);
                        break;
                case YAML_SEQUENCE_START_EVENT:
                case YAML_MAPPING_START_EVENT:
                        r = on_start(&ctx, &e, e.type == YAML_MAPPING_START_EVENT);
                        break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                        r = on_end(&ctx, &e);
                        break;
                default:
                        break;
                }
                yaml_event_delete(&e);
        }
        yaml_parser_delete(&parser);
        if (r < 0 && !*error) {
                *error = ctx.error;
                ctx.error = NULL;
        }
        free(ctx.error);
        ctx_reset(&ctx);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(docs);
        return 0;
}

int yaml_to_json(const char *data, size_t size, unsigned flags, json_t **ret, char **error)
{
        json_auto_t *docs = NULL;
        int r = yaml_to_json_documents(data, size, flags, &docs, error);

        if (r < 0)
                return r;
        /* An empty stream reads as null, as YAML readers do; the caller checks the shape. */
        *ret = json_array_size(docs) > 0 ? json_incref(json_array_get(docs, 0)) : json_null();
        return 0;
}
