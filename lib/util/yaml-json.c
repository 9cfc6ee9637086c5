#include "util/yaml-json.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/fileio.h"
#include "util/macro.h"

struct convert_ctx {
        yaml_document_t *doc;
        unsigned flags;
        size_t nodes_made;
        bool *seen; /* YAML_JSON_NO_ALIASES: a node reached twice is an alias */
        char *error;
};

static int fail(struct convert_ctx *ctx, const yaml_node_t *node, const char *what)
{
        if (!ctx->error &&
            asprintf(&ctx->error, "line %zu: %s", node ? node->start_mark.line + 1 : 0, what) < 0)
                ctx->error = NULL;
        return -EINVAL;
}

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

/* libyaml gives untagged plain scalars the str tag too, so the style decides: quoted, literal
 * and folded scalars are strings, plain ones are typed. */
static json_t *scalar_to_json(const yaml_node_t *node, unsigned flags)
{
        const char *s = (const char *)node->data.scalar.value;

        if (strlen(s) != node->data.scalar.length)
                return NULL; /* embedded NUL: not representable */
        if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
                return json_string(s);
        if (flags & YAML_JSON_TYPED)
                return plain_scalar_to_json(s);
        json_t *v = plain_scalar_to_json(s);
        if (json_is_integer(v) || json_is_real(v)) {
                json_decref(v);
                return json_string(s);
        }
        return v;
}

static int node_to_json(struct convert_ctx *ctx, const yaml_node_t *node, unsigned depth,
                        json_t **ret);

static int sequence_to_json(struct convert_ctx *ctx, const yaml_node_t *node, unsigned depth,
                            json_t **ret)
{
        json_t *arr = json_array();

        if (!arr)
                return -ENOMEM;
        for (yaml_node_item_t *it = node->data.sequence.items.start;
             it < node->data.sequence.items.top; it++) {
                json_t *v;
                int r = node_to_json(ctx, yaml_document_get_node(ctx->doc, *it), depth + 1, &v);
                if (r < 0 || json_array_append_new(arr, v) < 0) {
                        json_decref(arr);
                        return r < 0 ? r : -ENOMEM;
                }
        }
        *ret = arr;
        return 0;
}

static int mapping_to_json(struct convert_ctx *ctx, const yaml_node_t *node, unsigned depth,
                           json_t **ret)
{
        json_t *obj = json_object();

        if (!obj)
                return -ENOMEM;
        for (yaml_node_pair_t *pr = node->data.mapping.pairs.start;
             pr < node->data.mapping.pairs.top; pr++) {
                const yaml_node_t *key = yaml_document_get_node(ctx->doc, pr->key);
                json_t *v;
                int r;

                if (!key || key->type != YAML_SCALAR_NODE) {
                        json_decref(obj);
                        return fail(ctx, key ? key : node, "mapping key is not a scalar");
                }
                if (json_object_get(obj, (const char *)key->data.scalar.value)) {
                        char msg[160];
                        snprintf(msg, sizeof(msg), "duplicate mapping key \"%.100s\"",
                                 (const char *)key->data.scalar.value);
                        json_decref(obj);
                        return fail(ctx, key, msg);
                }
                r = node_to_json(ctx, yaml_document_get_node(ctx->doc, pr->value), depth + 1, &v);
                if (r < 0) {
                        json_decref(obj);
                        return r;
                }
                if (json_object_set_new(obj, (const char *)key->data.scalar.value, v) < 0) {
                        json_decref(obj);
                        return fail(ctx, key, "mapping key is not valid UTF-8");
                }
        }
        *ret = obj;
        return 0;
}

static int node_to_json(struct convert_ctx *ctx, const yaml_node_t *node, unsigned depth,
                        json_t **ret)
{
        if (!node)
                return fail(ctx, NULL, "dangling node reference");
        if (depth > YAML_JSON_MAX_DEPTH)
                return fail(ctx, node, "nesting too deep (recursive alias?)");
        if (++ctx->nodes_made > YAML_JSON_MAX_NODES)
                return fail(ctx, node, "document expands to too many nodes (alias bomb?)");
        if (ctx->seen) {
                size_t i = (size_t)(node - ctx->doc->nodes.start);
                if (ctx->seen[i])
                        return fail(ctx, node, "anchors and aliases are not supported here");
                ctx->seen[i] = true;
        }

        switch (node->type) {
        case YAML_SCALAR_NODE:
                *ret = scalar_to_json(node, ctx->flags);
                return *ret ? 0
                            : fail(ctx, node,
                                   "scalar contains a NUL character or is not valid UTF-8");
        case YAML_SEQUENCE_NODE:
                return sequence_to_json(ctx, node, depth, ret);
        case YAML_MAPPING_NODE:
                return mapping_to_json(ctx, node, depth, ret);
        default:
                return fail(ctx, node, "empty node");
        }
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
        yaml_parser_t parser;
        json_t *docs;
        int r = 0;

        *error = NULL;
        docs = json_array();
        if (!docs)
                return -ENOMEM;
        if (!yaml_parser_initialize(&parser)) {
                json_decref(docs);
                return -ENOMEM;
        }
        yaml_parser_set_input_string(&parser, (const unsigned char *)data, size);

        for (;;) {
                yaml_document_t doc;
                const yaml_node_t *root;
                struct convert_ctx ctx = { .doc = &doc, .flags = flags };
                json_t *v = NULL;

                if (!yaml_parser_load(&parser, &doc)) {
                        r = parser_error(&parser, error);
                        break;
                }
                root = yaml_document_get_root_node(&doc);
                if (!root) { /* end of stream */
                        yaml_document_delete(&doc);
                        break;
                }
                if (flags & YAML_JSON_NO_ALIASES) {
                        ctx.seen = calloc((size_t)(doc.nodes.top - doc.nodes.start) + 1, 1);
                        if (!ctx.seen) {
                                yaml_document_delete(&doc);
                                r = -ENOMEM;
                                break;
                        }
                }
                r = node_to_json(&ctx, root, 0, &v);
                free(ctx.seen);
                yaml_document_delete(&doc);
                if (r < 0) {
                        *error = ctx.error;
                        break;
                }
                free(ctx.error);
                if (json_array_append_new(docs, v) < 0) {
                        r = -ENOMEM;
                        break;
                }
        }
        yaml_parser_delete(&parser);
        if (r < 0) {
                json_decref(docs);
                return r;
        }
        *ret = docs;
        return 0;
}

int yaml_to_json(const char *data, size_t size, unsigned flags, json_t **ret, char **error)
{
        json_t *docs;
        int r = yaml_to_json_documents(data, size, flags, &docs, error);

        if (r < 0)
                return r;
        /* An empty stream reads as null, as YAML readers do; the caller checks the shape. */
        *ret = json_array_size(docs) > 0 ? json_incref(json_array_get(docs, 0)) : json_null();
        json_decref(docs);
        return 0;
}
