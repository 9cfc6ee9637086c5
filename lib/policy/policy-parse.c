/* SPDX-License-Identifier: Apache-2.0 */
/* SriovNetworkNodePolicy objects (jansson) and files (YAML/JSON) to struct policy. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/field-errors.h"
#include "policy/policy.h"
#include "util/array.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/yaml-json.h"

/* Collects every shape/type problem of one object so the user sees them all at once. */
struct parse_ctx {
        struct policy *policy;
        struct field_errors errors;
};

static void parse_ctx_done(struct parse_ctx *ctx)
{
        field_errors_done(&ctx->errors);
}

#define add_error(ctx, field, ...) field_errors_add(&(ctx)->errors, field, __VA_ARGS__)

static const char *json_type_name(const json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "a list";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
                return "an integer";
        case JSON_REAL:
                return "a number with a fraction";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        case JSON_NULL:
        default:
                return "null";
        }
}

static void dup_or_oom(struct parse_ctx *ctx, char **dst, const char *s)
{
        *dst = strdup(s);
        if (!*dst)
                ctx->errors.oom = true;
}

/* A null value counts as absent, as the API server treats it. */
static void get_string(struct parse_ctx *ctx, const json_t *obj, const char *key, const char *field,
                       char **dst)
{
        const json_t *v = json_object_get(obj, key);

        if (!v || json_is_null(v))
                return;
        if (!json_is_string(v)) {
                add_error(ctx, field, "expected a string, got %s", json_type_name(v));
                return;
        }
        if (strlen(json_string_value(v)) != json_string_length(v)) {
                add_error(ctx, field, "string contains a NUL character");
                return;
        }
        dup_or_oom(ctx, dst, json_string_value(v));
}

static void get_int(struct parse_ctx *ctx, const json_t *obj, const char *key, const char *field,
                    int *dst, bool *present)
{
        const json_t *v = json_object_get(obj, key);

        if (!v || json_is_null(v))
                return;
        if (!json_is_integer(v)) {
                add_error(ctx, field, "expected an integer, got %s", json_type_name(v));
                return;
        }
        if (json_integer_value(v) < -2147483647 || json_integer_value(v) > 2147483647) {
                add_error(ctx, field, "integer %" JSON_INTEGER_FORMAT " out of range",
                          json_integer_value(v));
                return;
        }
        *dst = (int)json_integer_value(v);
        if (present)
                *present = true;
}

static void get_bool(struct parse_ctx *ctx, const json_t *obj, const char *key, const char *field,
                     bool *dst, bool *present)
{
        const json_t *v = json_object_get(obj, key);

        if (!v || json_is_null(v))
                return;
        if (!json_is_boolean(v)) {
                add_error(ctx, field, "expected a boolean, got %s", json_type_name(v));
                return;
        }
        *dst = json_is_true(v);
        if (present)
                *present = true;
}

static int parse_range_number(const char *s, size_t len, int *ret)
{
        char buf[16];

        if (len == 0 || len >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, s, len);
        buf[len] = '\0';
        if (strspn(buf, "0123456789") != len)
                return -EINVAL;
        return parse_int(buf, ret);
}

/* "name#first-last": exactly one '#', exactly one '-', two non-negative integers. The order
 * check (end >= start, end < numVfs) is validation's job. */
static int parse_pf_name(const char *text, struct pf_name_selector *ret)
{
        const char *hash = strchr(text, '#'), *range, *dash;

        *ret = (struct pf_name_selector){ 0 };
        ret->text = strdup(text);
        ret->name = hash ? strndup(text, (size_t)(hash - text)) : strdup(text);
        if (!ret->text || !ret->name)
                return -ENOMEM;
        if (!hash)
                return 0;
        ret->has_range = true;
        range = hash + 1;
        dash = strchr(range, '-');
        if (strchr(range, '#'))
                ret->range_error = strdup("more than one '#'");
        else if (!dash || strchr(dash + 1, '-'))
                ret->range_error = strdup("VF range must be \"#first-last\" with exactly one '-'");
        else if (parse_range_number(range, (size_t)(dash - range), &ret->vf_start) < 0 ||
                 parse_range_number(dash + 1, strlen(dash + 1), &ret->vf_end) < 0)
                ret->range_error = strdup("VF range bounds must be non-negative integers");
        else
                return 0;
        return ret->range_error ? 0 : -ENOMEM;
}

static void get_string_list(struct parse_ctx *ctx, const json_t *obj, const char *key,
                            const char *field, char ***dst, size_t *n)
{
        const json_t *v = json_object_get(obj, key), *item;
        size_t i;

        if (!v || json_is_null(v))
                return;
        if (!json_is_array(v)) {
                add_error(ctx, field, "expected a list of strings, got %s", json_type_name(v));
                return;
        }
        *dst = calloc(json_array_size(v) + 1, sizeof(char *));
        if (!*dst) {
                ctx->errors.oom = true;
                return;
        }
        json_array_foreach(v, i, item)
        {
                if (!json_is_string(item) ||
                    strlen(json_string_value(item)) != json_string_length(item)) {
                        add_error(ctx, field, "item %zu: expected a string, got %s", i,
                                  json_type_name(item));
                        continue;
                }
                dup_or_oom(ctx, &(*dst)[(*n)++], json_string_value(item));
        }
}

static void parse_nic_selector(struct parse_ctx *ctx, const json_t *spec)
{
        struct nic_selector *nic = &ctx->policy->nic;
        const json_t *sel = json_object_get(spec, "nicSelector");
        char **names = NULL;
        size_t n_names = 0;
        const char *key;
        const json_t *v;

        if (!sel || json_is_null(sel))
                return;
        if (!json_is_object(sel)) {
                add_error(ctx, "spec.nicSelector", "expected an object, got %s",
                          json_type_name(sel));
                return;
        }
        ctx->policy->has_nic_selector = true;
        json_object_foreach((json_t *)sel, key, v)
        {
                static const char *const known[] = { "vendor",  "deviceID",  "rootDevices",
                                                     "pfNames", "netFilter", NULL };
                bool ok = false;
                for (const char *const *k = known; *k; k++)
                        ok = ok || strcmp(*k, key) == 0;
                if (!ok)
                        add_error(ctx, "spec.nicSelector", "unknown field \"%s\"", key);
        }
        get_string(ctx, sel, "vendor", "spec.nicSelector.vendor", &nic->vendor);
        get_string(ctx, sel, "deviceID", "spec.nicSelector.deviceID", &nic->device_id);
        get_string(ctx, sel, "netFilter", "spec.nicSelector.netFilter", &nic->net_filter);
        get_string_list(ctx, sel, "rootDevices", "spec.nicSelector.rootDevices", &nic->root_devices,
                        &nic->n_root_devices);
        get_string_list(ctx, sel, "pfNames", "spec.nicSelector.pfNames", &names, &n_names);
        if (n_names > 0) {
                nic->pf_names = calloc(n_names, sizeof(*nic->pf_names));
                if (!nic->pf_names)
                        ctx->errors.oom = true;
                for (size_t i = 0; nic->pf_names && i < n_names; i++) {
                        if (parse_pf_name(names[i], &nic->pf_names[i]) < 0)
                                ctx->errors.oom = true;
                        nic->n_pf_names++;
                }
        }
        for (size_t i = 0; i < n_names; i++)
                free(names[i]);
        free(names);
}

static void parse_node_selector(struct parse_ctx *ctx, const json_t *spec)
{
        struct policy *p = ctx->policy;
        const json_t *sel = json_object_get(spec, "nodeSelector"), *v;
        const char *key;

        if (!sel || json_is_null(sel))
                return;
        if (!json_is_object(sel)) {
                add_error(ctx, "spec.nodeSelector", "expected a map of strings, got %s",
                          json_type_name(sel));
                return;
        }
        p->has_node_selector = true;
        p->node_selector = calloc(json_object_size(sel) + 1, sizeof(*p->node_selector));
        if (!p->node_selector) {
                ctx->errors.oom = true;
                return;
        }
        json_object_foreach((json_t *)sel, key, v)
        {
                struct string_pair *pair = &p->node_selector[p->n_node_selector];
                if (!json_is_string(v)) {
                        /* Node label values are strings: `highnet-node: true` unquoted is a
                         * YAML boolean, which the API server rejects too. */
                        add_error(ctx, "spec.nodeSelector",
                                  "value of \"%s\": expected a string, "
                                  "got %s (quote it)",
                                  key, json_type_name(v));
                        continue;
                }
                pair->key = strdup(key);
                pair->value = strdup(json_string_value(v));
                if (!pair->key || !pair->value)
                        ctx->errors.oom = true;
                p->n_node_selector++;
        }
}

static void check_unknown_spec_fields(struct parse_ctx *ctx, const json_t *spec)
{
        static const char *const known[] = {
                "resourceName", "nodeSelector",    "priority",          "mtu",
                "numVfs",       "nicSelector",     "deviceType",        "isRdma",
                "needVhostNet", "linkType",        "eSwitchMode",       "vdpaType",
                "bridge",       "excludeTopology", "externallyManaged", NULL,
        };
        const char *key;
        const json_t *v;

        json_object_foreach((json_t *)spec, key, v)
        {
                bool ok = false;
                for (const char *const *k = known; *k; k++)
                        ok = ok || strcmp(*k, key) == 0;
                if (!ok)
                        add_error(ctx, "spec", "unknown field \"%s\"", key);
        }
}

static void parse_spec(struct parse_ctx *ctx, const json_t *spec)
{
        struct policy *p = ctx->policy;
        const json_t *bridge;

        check_unknown_spec_fields(ctx, spec);
        get_string(ctx, spec, "resourceName", "spec.resourceName", &p->resource_name);
        parse_node_selector(ctx, spec);
        get_int(ctx, spec, "priority", "spec.priority", &p->priority, NULL);
        get_int(ctx, spec, "mtu", "spec.mtu", &p->mtu, &p->has_mtu);
        get_int(ctx, spec, "numVfs", "spec.numVfs", &p->num_vfs, &p->has_num_vfs);
        parse_nic_selector(ctx, spec);
        get_string(ctx, spec, "deviceType", "spec.deviceType", &p->device_type);
        get_bool(ctx, spec, "isRdma", "spec.isRdma", &p->is_rdma, NULL);
        get_bool(ctx, spec, "needVhostNet", "spec.needVhostNet", &p->need_vhost_net, NULL);
        get_string(ctx, spec, "linkType", "spec.linkType", &p->link_type);
        get_string(ctx, spec, "eSwitchMode", "spec.eSwitchMode", &p->eswitch_mode);
        get_string(ctx, spec, "vdpaType", "spec.vdpaType", &p->vdpa_type);
        get_bool(ctx, spec, "excludeTopology", "spec.excludeTopology", &p->exclude_topology, NULL);
        get_bool(ctx, spec, "externallyManaged", "spec.externallyManaged", &p->externally_managed,
                 NULL);
        bridge = json_object_get(spec, "bridge");
        if (bridge && !json_is_null(bridge)) {
                const json_t *ovs = json_object_get(bridge, "ovs");
                if (!json_is_object(bridge))
                        add_error(ctx, "spec.bridge", "expected an object, got %s",
                                  json_type_name(bridge));
                /* Upstream's Bridge.IsEmpty(): only spec.bridge.ovs asks for a bridge. Go
                 * clients built on upstream's types always send "bridge": {}. */
                p->has_bridge = !json_is_object(bridge) || (ovs && !json_is_null(ovs));
        }
}

/* The mutating webhook's defaults, so the rest of the engine sees what the API server stores. */
static void apply_defaults(struct parse_ctx *ctx)
{
        struct policy *p = ctx->policy;

        if (!p->device_type)
                dup_or_oom(ctx, &p->device_type, "netdevice");
        if (p->link_type && strcasecmp(p->link_type, "ib") == 0 &&
            strcmp(p->device_type ? p->device_type : "", "vfio-pci") != 0)
                p->is_rdma = true;
}

int policy_from_json(const json_t *obj, const char *origin, struct policy *ret)
{
        _cleanup_(parse_ctx_done) struct parse_ctx ctx = { .policy = ret };
        const json_t *meta, *spec;
        int r = 0;

        *ret = (struct policy){ .priority = POLICY_DEFAULT_PRIORITY };
        dup_or_oom(&ctx, &ret->origin, origin ? origin : "API");

        if (!json_is_object(obj)) {
                add_error(&ctx, "(object)", "expected an object, got %s", json_type_name(obj));
                goto finish;
        }
        meta = json_object_get(obj, "metadata");
        if (meta && !json_is_object(meta))
                add_error(&ctx, "metadata", "expected an object, got %s", json_type_name(meta));
        else if (meta) {
                get_string(&ctx, meta, "name", "metadata.name", &ret->name);
                get_string(&ctx, meta, "namespace", "metadata.namespace", &ret->namespace);
        }
        spec = json_object_get(obj, "spec");
        if (!spec || json_is_null(spec))
                add_error(&ctx, "spec", "missing");
        else if (!json_is_object(spec))
                add_error(&ctx, "spec", "expected an object, got %s", json_type_name(spec));
        else
                parse_spec(&ctx, spec);
        apply_defaults(&ctx);

finish:
        if (ctx.errors.oom) {
                policy_done(ret);
                return -ENOMEM;
        }
        if (ctx.errors.text) {
                r = asprintf(&ret->error, "%s: policy %s: %s", ret->origin,
                             policy_display_name(ret), ctx.errors.text);
                if (r < 0) {
                        ret->error = NULL;
                        policy_done(ret);
                        return -ENOMEM;
                }
        }
        return 0;
}

static int list_append_policy(struct policy_list *list, struct policy *p)
{
        if (GROW_ARRAY(list->items, list->cap_items, list->n_items + 1) < 0)
                return -ENOMEM;
        list->items[list->n_items++] = *p;
        *p = (struct policy){ 0 };
        return 0;
}

static int list_append_note(struct policy_list *list, char *note)
{
        if (GROW_ARRAY(list->notes, list->cap_notes, list->n_notes + 1) < 0) {
                free(note);
                return -ENOMEM;
        }
        list->notes[list->n_notes++] = note;
        return 0;
}

static int list_append_invalid(struct policy_list *list, const char *origin, const char *reason)
{
        struct policy p = { .priority = POLICY_DEFAULT_PRIORITY };
        int r;

        p.origin = strdup(origin);
        if (!p.origin || asprintf(&p.error, "%s: %s", origin, reason) < 0) {
                free(p.origin);
                return -ENOMEM;
        }
        r = list_append_policy(list, &p);
        if (r < 0)
                policy_done(&p);
        return r;
}

static bool is_list_kind(const char *kind)
{
        size_t n = strlen(kind);
        return n >= 4 && strcmp(kind + n - 4, "List") == 0;
}

static int add_json_value(struct policy_list *list, const json_t *value, const char *origin,
                          unsigned depth)
{
        const char *kind = json_string_value(json_object_get(value, "kind"));
        const char *api = json_string_value(json_object_get(value, "apiVersion"));
        char *note;
        int r;

        if (json_is_null(value))
                return 0; /* an empty YAML document */
        if (!json_is_object(value))
                return list_append_invalid(list, origin,
                                           "not an object (expected a Kubernetes "
                                           "object with apiVersion and kind)");
        if (!kind)
                return list_append_invalid(list, origin, "field kind: missing or not a string");

        if (is_list_kind(kind) && depth == 0) {
                const json_t *items = json_object_get(value, "items"), *item;
                size_t i;
                if (!json_is_array(items))
                        return list_append_invalid(list, origin, "List without an items list");
                json_array_foreach(items, i, item)
                {
                        _cleanup_free_ char *sub = NULL;
                        if (asprintf(&sub, "%s item %zu", origin, i + 1) < 0)
                                return -ENOMEM;
                        r = add_json_value(list, item, sub, depth + 1);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        if (strcmp(kind, POLICY_KIND) != 0) {
                if (asprintf(&note, "%s: kind %.64s skipped (not a %s)", origin, kind,
                             POLICY_KIND) < 0)
                        return -ENOMEM;
                return list_append_note(list, note);
        }
        if (!api || strcmp(api, POLICY_API_VERSION) != 0) {
                if (asprintf(&note, "%s: %s with apiVersion %.64s skipped (expected %s)", origin,
                             kind, api ? api : "(none)", POLICY_API_VERSION) < 0)
                        return -ENOMEM;
                return list_append_note(list, note);
        }

        _cleanup_(policy_done) struct policy p = { 0 };
        r = policy_from_json(value, origin, &p);
        if (r < 0)
                return r;
        return list_append_policy(list, &p);
}

int policy_list_add_json(struct policy_list *list, const json_t *value, const char *origin)
{
        return add_json_value(list, value, origin ? origin : "API", 0);
}

int policy_list_add_buffer(struct policy_list *list, const char *file, const char *data,
                           size_t size)
{
        _cleanup_free_ char *error = NULL;
        json_auto_t *docs = NULL;
        json_t *doc;
        size_t i;
        int r;

        if (memchr(data, '\0', size))
                return list_append_invalid(list, file, "file contains NUL bytes (binary?)");
        r = yaml_to_json_documents(data, size, YAML_JSON_TYPED, &docs, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                _cleanup_free_ char *reason = NULL;
                if (asprintf(&reason, "not valid YAML/JSON: %s", error) < 0)
                        return -ENOMEM;
                return list_append_invalid(list, file, reason);
        }
        json_array_foreach(docs, i, doc)
        {
                _cleanup_free_ char *origin = NULL;
                if (json_array_size(docs) == 1)
                        origin = strdup(file);
                else if (asprintf(&origin, "%s document %zu", file, i + 1) < 0)
                        origin = NULL;
                if (!origin) {
                        r = -ENOMEM;
                        break;
                }
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                r = add_json_value(list, doc, origin, 0);
                if (r < 0)
                        break;
        }
        return r;
}

const char *policy_display_name(const struct policy *p)
{
        return p->name ? p->name : "(unnamed)";
}

static void pf_name_selector_done(struct pf_name_selector *s)
{
        free(s->text);
        free(s->name);
        free(s->range_error);
}

void policy_done(struct policy *p)
{
        free(p->name);
        free(p->namespace);
        free(p->origin);
        free(p->error);
        free(p->resource_name);
        for (size_t i = 0; i < p->n_node_selector; i++) {
                free(p->node_selector[i].key);
                free(p->node_selector[i].value);
        }
        free(p->node_selector);
        free(p->nic.vendor);
        free(p->nic.device_id);
        free(p->nic.net_filter);
        for (size_t i = 0; i < p->nic.n_root_devices; i++)
                free(p->nic.root_devices[i]);
        free(p->nic.root_devices);
        for (size_t i = 0; i < p->nic.n_pf_names; i++)
                pf_name_selector_done(&p->nic.pf_names[i]);
        free(p->nic.pf_names);
        free(p->device_type);
        free(p->link_type);
        free(p->eswitch_mode);
        free(p->vdpa_type);
        *p = (struct policy){ 0 };
}

void policy_list_done(struct policy_list *list)
{
        for (size_t i = 0; i < list->n_items; i++)
                policy_done(&list->items[i]);
        free(list->items);
        for (size_t i = 0; i < list->n_notes; i++)
                free(list->notes[i]);
        free(list->notes);
        *list = (struct policy_list){ 0 };
}
