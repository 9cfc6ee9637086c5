/* SPDX-License-Identifier: Apache-2.0 */
#include "nad/render.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/macro.h"

const char *nad_network_kind_name(enum nad_network_kind kind)
{
        return kind == NAD_SRIOV_IB_NETWORK ? "SriovIBNetwork" : "SriovNetwork";
}

static const char *meta_string(json_t *o, const char *key)
{
        return json_string_value(json_object_get(json_object_get(o, "metadata"), key));
}

const char *nad_target_namespace(json_t *network)
{
        const char *ns = json_string_value(
            json_object_get(json_object_get(network, "spec"), "networkNamespace"));
        return ns && *ns ? ns : meta_string(network, "namespace");
}

char *nad_owner_ref(enum nad_network_kind kind, json_t *network)
{
        const char *ns = meta_string(network, "namespace"), *name = meta_string(network, "name");
        char *s = NULL;
        if (!ns || !name ||
            asprintf(&s, "%s." NAD_NETWORK_GROUP "/%s/%s", nad_network_kind_name(kind), ns, name) <
                0)
                return NULL;
        return s;
}

/* Go's json.Indent with prefix "" and indent "    ": insignificant whitespace dropped, every
 * element on its own line, ": " after keys, empty {} and [] kept on one line, strings and
 * numbers copied as written. */
int nad_json_indent(const char *src, char **ret)
{
        json_error_t jerr;
        json_auto_t *check = json_loads(src, JSON_DECODE_ANY, &jerr);
        if (!check)
                return -EINVAL;

        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        int depth = 0;
        bool need_indent = false, in_string = false, escaped = false;
        for (const char *p = src; *p; p++) {
                char c = *p;
                if (in_string) {
                        fputc(c, f);
                        if (escaped)
                                escaped = false;
                        else if (c == '\\')
                                escaped = true;
                        else if (c == '"')
                                in_string = false;
                        continue;
                }
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
                        continue;
                if (need_indent && c != '}' && c != ']') {
                        need_indent = false;
                        depth++;
                        fputc('\n', f);
                        for (int i = 0; i < depth; i++)
                                fputs("    ", f);
                }
                switch (c) {
                case '"':
                        in_string = true;
                        fputc(c, f);
                        break;
                case '{':
                case '[':
                        fputc(c, f);
                        need_indent = true;
                        break;
                case ',':
                        fputc(c, f);
                        fputc('\n', f);
                        for (int i = 0; i < depth; i++)
                                fputs("    ", f);
                        break;
                case ':':
                        fputs(": ", f);
                        break;
                case '}':
                case ']':
                        if (need_indent) {
                                need_indent = false; /* empty: "{}" */
                        } else {
                                depth--;
                                fputc('\n', f);
                                for (int i = 0; i < depth; i++)
                                        fputs("    ", f);
                        }
                        fputc(c, f);
                        break;
                default:
                        fputc(c, f);
                }
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

static int fail(char **error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char **error, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(error, fmt, ap) < 0)
                *error = NULL;
        va_end(ap);
        return -EINVAL;
}

/* spec.<key> as a string: NULL when absent or "", -EINVAL (via *bad) when not a string. */
static const char *spec_string(json_t *spec, const char *key, bool *bad)
{
        json_t *v = json_object_get(spec, key);
        if (!v || json_is_null(v))
                return NULL;
        if (!json_is_string(v)) {
                *bad = true;
                return NULL;
        }
        const char *s = json_string_value(v);
        return *s ? s : NULL;
}

static bool one_of(const char *s, const char *const *allowed)
{
        for (; *allowed; allowed++)
                if (strcmp(s, *allowed) == 0)
                        return true;
        return false;
}

/* Upstream removes every whitespace character, even inside strings
 * (strings.Join(strings.Fields(ipam), "")). ASCII whitespace only here. */
static char *strip_whitespace(const char *s)
{
        char *out = malloc(strlen(s) + 1), *o = out;
        if (!out)
                return NULL;
        for (; *s; s++)
                if (!strchr(" \t\n\v\f\r", *s))
                        *o++ = *s;
        *o = 0;
        return out;
}

/* Writes "key":<string JSON-escaped>, */
static void put_string(FILE *f, const char *key, const char *value)
{
        json_auto_t *s = json_string(value);
        _cleanup_free_ char *text = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
        fprintf(f, "\"%s\":%s,", key, text ? text : "\"\"");
}

struct spec_values {
        const char *resource_name, *capabilities, *link_state, *vlan_proto, *spoof, *trust;
        const char *log_level, *log_file, *meta_plugins;
        char *ipam; /* whitespace removed, "" when unset */
        json_int_t vlan, vlan_qos, min_tx, max_tx;
        bool has_min_tx, has_max_tx;
};

static int integer_field(json_t *spec, const char *key, json_int_t lo, json_int_t hi,
                         json_int_t *out, bool *present, char **error)
{
        json_t *v = json_object_get(spec, key);
        *out = 0;
        if (present)
                *present = false;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_integer(v))
                return fail(error, "spec.%s: must be an integer", key);
        *out = json_integer_value(v);
        if (*out < lo || *out > hi)
                return fail(error, "spec.%s: %lld is out of range %lld..%lld", key, (long long)*out,
                            (long long)lo, (long long)hi);
        if (present)
                *present = true;
        return 0;
}

static int parse_spec(enum nad_network_kind kind, json_t *spec, struct spec_values *v, char **error)
{
        static const char *const str_keys[] = { "resourceName", "capabilities", "linkState",
                                                "ipam",         "metaPlugins",  "networkNamespace",
                                                "vlanProto",    "spoofChk",     "trust",
                                                "logLevel",     "logFile",      NULL };
        bool bad = false;
        for (const char *const *k = str_keys; *k; k++) {
                spec_string(spec, *k, &bad);
                if (bad)
                        return fail(error, "spec.%s: must be a string", *k);
        }
        v->resource_name = spec_string(spec, "resourceName", &bad);
        if (!v->resource_name)
                return fail(error, "spec.resourceName: required");
        v->capabilities = spec_string(spec, "capabilities", &bad);
        if (v->capabilities) {
                json_error_t jerr;
                json_auto_t *c = json_loads(v->capabilities, 0, &jerr);
                bool ok = json_is_object(c);
                if (!ok)
                        return fail(error, "spec.capabilities: not a JSON object: %s",
                                    c ? "another JSON value" : jerr.text);
        }
        static const char *const link_states[] = { "auto", "enable", "disable", NULL };
        v->link_state = spec_string(spec, "linkState", &bad);
        if (v->link_state && !one_of(v->link_state, link_states))
                return fail(error, "spec.linkState: \"%s\" is not one of auto, enable, disable",
                            v->link_state);
        const char *ipam = spec_string(spec, "ipam", &bad);
        v->ipam = strip_whitespace(ipam ? ipam : "");
        if (!v->ipam)
                return -ENOMEM;
        if (*v->ipam) {
                json_error_t jerr;
                json_auto_t *i = json_loads(v->ipam, 0, &jerr);
                bool ok = json_is_object(i);
                if (!ok)
                        return fail(error, "spec.ipam: not a JSON object: %s",
                                    i ? "another JSON value" : jerr.text);
        }
        v->meta_plugins = spec_string(spec, "metaPlugins", &bad);
        if (v->meta_plugins) {
                /* A comma-separated list of plugin objects, inserted as written. */
                _cleanup_free_ char *list = NULL;
                if (asprintf(&list, "[%s]", v->meta_plugins) < 0)
                        return -ENOMEM;
                json_error_t jerr;
                json_auto_t *l = json_loads(list, 0, &jerr);
                bool ok = json_is_array(l) && json_array_size(l) > 0;
                size_t i;
                json_t *item;
                json_array_foreach(l, i, item) ok = ok && json_is_object(item);
                if (!ok)
                        return fail(error,
                                    "spec.metaPlugins: not a comma-separated list of JSON "
                                    "objects%s%s",
                                    l ? "" : ": ", l ? "" : jerr.text);
        }
        if (kind == NAD_SRIOV_IB_NETWORK)
                return 0;

        int k;
        if ((k = integer_field(spec, "vlan", 0, 4094, &v->vlan, NULL, error)) < 0 ||
            (k = integer_field(spec, "vlanQoS", 0, 7, &v->vlan_qos, NULL, error)) < 0 ||
            (k = integer_field(spec, "minTxRate", INT32_MIN, INT32_MAX, &v->min_tx, &v->has_min_tx,
                               error)) < 0 ||
            (k = integer_field(spec, "maxTxRate", INT32_MIN, INT32_MAX, &v->max_tx, &v->has_max_tx,
                               error)) < 0)
                return k;
        /* Upstream renders only rates >= 0 (the CRD's minimum makes that the only case). */
        v->has_min_tx = v->has_min_tx && v->min_tx >= 0;
        v->has_max_tx = v->has_max_tx && v->max_tx >= 0;
        if (v->vlan_qos != 0 && v->vlan == 0)
                return fail(error,
                            "spec.vlanQoS: %lld needs spec.vlan (a QoS without a VLAN "
                            "is refused by sriov-cni)",
                            (long long)v->vlan_qos);
        static const char *const protos[] = { "802.1q", "802.1Q", "802.1ad", "802.1AD", NULL };
        v->vlan_proto = spec_string(spec, "vlanProto", &bad);
        if (v->vlan_proto && !one_of(v->vlan_proto, protos))
                return fail(error, "spec.vlanProto: \"%s\" is not one of 802.1q, 802.1ad",
                            v->vlan_proto);
        static const char *const on_off[] = { "on", "off", NULL };
        v->spoof = spec_string(spec, "spoofChk", &bad);
        if (v->spoof && !one_of(v->spoof, on_off))
                return fail(error, "spec.spoofChk: \"%s\" is not one of on, off", v->spoof);
        v->trust = spec_string(spec, "trust", &bad);
        if (v->trust && !one_of(v->trust, on_off))
                return fail(error, "spec.trust: \"%s\" is not one of on, off", v->trust);
        static const char *const levels[] = { "panic", "error", "warning", "info", "debug", NULL };
        v->log_level = spec_string(spec, "logLevel", &bad);
        if (v->log_level && !one_of(v->log_level, levels))
                return fail(error,
                            "spec.logLevel: \"%s\" is not one of panic, error, warning, info, "
                            "debug",
                            v->log_level);
        v->log_file = spec_string(spec, "logFile", &bad);
        return 0;
}

/* The CNI config in upstream's template order, before re-indenting. */
static char *build_config(enum nad_network_kind kind, const char *name, const struct spec_values *v)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        fputs("{\"cniVersion\":\"1.0.0\",", f);
        put_string(f, "name", name);
        if (v->meta_plugins)
                fputs("\"plugins\":[{", f);
        if (kind == NAD_SRIOV_NETWORK) {
                fputs("\"type\":\"sriov\",", f);
                fprintf(f, "\"vlan\":%lld,", (long long)v->vlan);
                if (v->spoof)
                        put_string(f, "spoofchk", v->spoof);
                if (v->trust)
                        put_string(f, "trust", v->trust);
                fprintf(f, "\"vlanQoS\":%lld,", (long long)v->vlan_qos);
                if (v->vlan_proto)
                        put_string(f, "vlanProto", v->vlan_proto);
                if (v->has_min_tx)
                        fprintf(f, "\"min_tx_rate\":%lld,", (long long)v->min_tx);
                if (v->has_max_tx)
                        fprintf(f, "\"max_tx_rate\":%lld,", (long long)v->max_tx);
        } else {
                fputs("\"type\":\"ib-sriov\",", f);
        }
        if (v->capabilities)
                fprintf(f, "\"capabilities\":%s,", v->capabilities);
        if (v->link_state)
                put_string(f, "link_state", v->link_state);
        if (v->log_level)
                put_string(f, "logLevel", v->log_level);
        if (v->log_file)
                put_string(f, "logFile", v->log_file);
        fprintf(f, "\"ipam\":%s}", v->ipam && *v->ipam ? v->ipam : "{}");
        if (v->meta_plugins)
                fprintf(f, ",%s]}", v->meta_plugins);
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

int nad_render(enum nad_network_kind kind, json_t *network, const char *resource_prefix,
               json_t **ret, char **error)
{
        *error = NULL;
        const char *name = meta_string(network, "name"), *ns = meta_string(network, "namespace");
        if (!name || !*name || !ns || !*ns)
                return fail(error, "metadata.name and metadata.namespace are required");
        json_t *spec = json_object_get(network, "spec");
        if (!json_is_object(spec))
                return fail(error, "spec: required");
        if (!resource_prefix || !*resource_prefix)
                return fail(error, "no resource prefix configured");

        struct spec_values v = { 0 };
        int k = parse_spec(kind, spec, &v, error);
        _cleanup_free_ _unused_ char *ipam = v.ipam;
        if (k < 0)
                return k;
        const char *target = nad_target_namespace(network);

        _cleanup_free_ char *compact = build_config(kind, name, &v);
        _cleanup_free_ char *config = NULL, *owner = nad_owner_ref(kind, network), *resource = NULL;
        if (!compact || !owner ||
            asprintf(&resource, "%s/%s", resource_prefix, v.resource_name) < 0)
                return -ENOMEM;
        if ((k = nad_json_indent(compact, &config)) < 0)
                return k == -EINVAL ? fail(error, "spec: the rendered CNI config is not JSON") : k;

        json_auto_t *nad =
            json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, s:{s:s}}", "apiVersion",
                      NAD_API_VERSION, "kind", NAD_KIND, "metadata", "name", name, "namespace",
                      target, "annotations", NAD_ANNOTATION_RESOURCE, resource,
                      NAD_ANNOTATION_OWNER, owner, "spec", "config", config);
        if (!nad)
                return -ENOMEM;
        const char *uid = meta_string(network, "uid");
        if (strcmp(target, ns) == 0 && uid) {
                /* Same namespace only: ownerReferences cannot cross namespaces. */
                json_t *refs =
                    json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", NAD_NETWORK_GROUP "/v1",
                              "kind", nad_network_kind_name(kind), "name", name, "uid", uid);
                if (!refs || json_object_set_new(json_object_get(nad, "metadata"),
                                                 "ownerReferences", refs) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(nad);
        return 0;
}
