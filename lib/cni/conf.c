/* SPDX-License-Identifier: Apache-2.0 */
#include "cni/conf.h"

#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/names.h"

const char *const cni_supported_versions[] = { "0.1.0", "0.2.0", "0.3.0", "0.3.1",
                                               "0.4.0", "1.0.0", "1.1.0", NULL };

bool cni_version_supported(const char *v)
{
        for (size_t i = 0; v && cni_supported_versions[i]; i++)
                if (strcmp(v, cni_supported_versions[i]) == 0)
                        return true;
        return false;
}

static bool parse_version(const char *s, int out[3])
{
        for (int i = 0; s && i < 3; i++) {
                char *end;
                if (*s < '0' || *s > '9')
                        return false;
                long v = strtol(s, &end, 10);
                if (v > 9999 || *end != (i < 2 ? '.' : '\0'))
                        return false;
                out[i] = (int)v;
                s = end + (i < 2);
        }
        return s != NULL;
}

int cni_version_compare(const char *a, const char *b)
{
        int x[3], y[3];
        bool pa = parse_version(a, x), pb = parse_version(b, y);
        if (!pa || !pb)
                return (int)pa - (int)pb;
        for (int i = 0; i < 3; i++)
                if (x[i] != y[i])
                        return x[i] < y[i] ? -1 : 1;
        return 0;
}

static int hexval(char c)
{
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
}

int cni_parse_mac(const char *s, uint8_t mac[6])
{
        if (!s || strlen(s) != 17)
                return -EINVAL;
        uint8_t m[6];
        for (int i = 0; i < 6; i++) {
                int hi = hexval(s[i * 3]), lo = hexval(s[i * 3 + 1]);
                if (hi < 0 || lo < 0 || (i < 5 && s[i * 3 + 2] != ':'))
                        return -EINVAL;
                m[i] = (uint8_t)(hi << 4 | lo);
        }
        memcpy(mac, m, 6);
        return 0;
}

void cni_format_mac(const uint8_t mac[6], char out[18])
{
        snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
                 mac[5]);
}

void cni_format_hwaddr(const uint8_t *addr, size_t len, char out[static CNI_HWADDR_STR_MAX])
{
        size_t pos = 0;
        out[0] = '\0';
        for (size_t i = 0; i < len && pos + 4 <= CNI_HWADDR_STR_MAX; i++)
                pos += (size_t)snprintf(out + pos, CNI_HWADDR_STR_MAX - pos, i ? ":%02x" : "%02x",
                                        addr[i]);
}

void cni_conf_done(struct cni_conf *c)
{
        if (c && c->root) {
                json_decref(c->root);
                c->root = NULL;
        }
}

/* ---- members found as Go's encoding/json finds them ----
 *
 * Upstream decodes the configuration with encoding/json, which matches an object key to a field
 * case-insensitively (Unicode simple folding: "VLAN", "Vlan" and "vlan" all set vlan) and lets
 * every matching key overwrite the value before it, so the last one in the text wins. jansson
 * keeps one value per exact key, in the position of its first occurrence, so the order of the
 * members is read from the text itself; jansson has validated that text already. */

/* An object's text (the object's own bytes, braces included). */
struct json_text {
        const char *p;
        size_t n;
};

static size_t skip_ws(const struct json_text *t, size_t i)
{
        while (i < t->n &&
               (t->p[i] == ' ' || t->p[i] == '\t' || t->p[i] == '\n' || t->p[i] == '\r'))
                i++;
        return i;
}

/* i at an opening quote: the index after the closing one. */
static size_t skip_string(const struct json_text *t, size_t i)
{
        for (i++; i < t->n && t->p[i] != '"'; i++)
                if (t->p[i] == '\\')
                        i++;
        return i < t->n ? i + 1 : t->n;
}

/* i at a value: the index after it. */
static size_t skip_value(const struct json_text *t, size_t i)
{
        if (i < t->n && t->p[i] == '"')
                return skip_string(t, i);
        size_t depth = 0;
        for (; i < t->n; i++) {
                const char c = t->p[i];
                if (c == '"') {
                        i = skip_string(t, i) - 1;
                } else if (c == '{' || c == '[') {
                        depth++;
                } else if (c == '}' || c == ']') {
                        if (depth == 0)
                                return i;
                        if (--depth == 0)
                                return i + 1;
                } else if (depth == 0 &&
                           (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
                        return i;
                }
        }
        return i;
}

/* One byte of an ASCII field name against the key at *k: ASCII letters in either case, and the
 * two non-ASCII runes whose simple case folding reaches an ASCII letter (U+017F long s, U+212A
 * Kelvin sign), as Go's bytes.EqualFold. Advances *k past what matched. */
static bool fold_char(const unsigned char **k, const unsigned char *end, char f)
{
        const unsigned char *p = *k;
        const char lf = (char)(f >= 'A' && f <= 'Z' ? f + 32 : f);
        if (p < end && *p < 0x80) {
                const char c = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
                *k = p + 1;
                return c == lf;
        }
        if (lf == 's' && end - p >= 2 && p[0] == 0xc5 && p[1] == 0xbf) {
                *k = p + 2;
                return true;
        }
        if (lf == 'k' && end - p >= 3 && p[0] == 0xe2 && p[1] == 0x84 && p[2] == 0xaa) {
                *k = p + 3;
                return true;
        }
        return false;
}

static bool key_matches(const char *key, size_t len, const char *field)
{
        const unsigned char *k = (const unsigned char *)key, *end = k + len;
        for (; *field; field++)
                if (!fold_char(&k, end, *field))
                        return false;
        return k == end;
}

/* Whether the quoted key at t->p[i..j) names field; escapes are decoded first (Go matches
 * "\u0076lan" to vlan). */
static bool quoted_key_matches(const struct json_text *t, size_t i, size_t j, const char *field)
{
        if (j - i < 2)
                return false;
        if (!memchr(t->p + i, '\\', j - i))
                return key_matches(t->p + i + 1, j - i - 2, field);
        json_auto_t *k = json_loadb(t->p + i, j - i, JSON_DECODE_ANY, NULL);
        return json_is_string(k) && key_matches(json_string_value(k), json_string_length(k), field);
}

/* The text of the last member of object o that Go would decode into field; false when none. */
static bool find_member(const struct json_text *o, const char *field, struct json_text *ret)
{
        bool found = false;
        size_t i = skip_ws(o, 0);
        if (i >= o->n || o->p[i] != '{')
                return false;
        for (i = skip_ws(o, i + 1); i < o->n && o->p[i] == '"';) {
                const size_t key_end = skip_string(o, i);
                const size_t v = skip_ws(o, skip_ws(o, key_end) + 1);
                const size_t v_end = skip_value(o, v);
                if (quoted_key_matches(o, i, key_end, field)) {
                        *ret = (struct json_text){ .p = o->p + v, .n = v_end - v };
                        found = true;
                }
                i = skip_ws(o, v_end);
                if (i < o->n && o->p[i] == ',')
                        i = skip_ws(o, i + 1);
        }
        return found;
}

/* A present, non-null member (a new reference); type-checked by the caller. */
static json_t *member_text(const struct json_text *o, const char *key, struct json_text *text)
{
        struct json_text v;
        if (!find_member(o, key, &v))
                return NULL;
        json_t *j = json_loadb(v.p, v.n, JSON_DECODE_ANY, NULL);
        if (json_is_null(j)) {
                json_decref(j);
                return NULL;
        }
        if (text)
                *text = v;
        return j;
}

static json_t *member(const struct json_text *o, const char *key)
{
        return member_text(o, key, NULL);
}

static int get_string(const struct json_text *o, const char *key, char *buf, size_t size,
                      struct cni_error *e)
{
        json_auto_t *v = member(o, key);
        if (!v) {
                buf[0] = '\0';
                return 0;
        }
        if (!json_is_string(v))
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL, "field \"%s\" must be a string",
                                key);
        if (json_string_length(v) >= size)
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL, "field \"%s\" is too long",
                                key);
        strcpy(buf, json_string_value(v));
        return 0;
}

/* An integer field in [lo, hi]; *present tells whether it was there. */
static int get_int(const struct json_text *o, const char *key, long lo, long hi, bool *present,
                   long *ret, struct cni_error *e)
{
        json_auto_t *v = member(o, key);
        *present = v != NULL;
        if (!v)
                return 0;
        if (!json_is_integer(v))
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                                "field \"%s\" must be an integer", key);
        json_int_t n = json_integer_value(v);
        if (n < lo || n > hi)
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -ERANGE,
                                "field \"%s\" is %lld: value must be in the range %ld-%ld", key,
                                (long long)n, lo, hi);
        *ret = (long)n;
        return 0;
}

static int get_onoff(const struct json_text *o, const char *key, int *ret, struct cni_error *e)
{
        char buf[8] = "";
        int r = get_string(o, key, buf, sizeof(buf), e);
        if (r < 0)
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                                "field \"%s\" must be \"on\" or \"off\"", key);
        *ret = buf[0] == '\0' ? -1 : strcmp(buf, "on") == 0 ? 1 : strcmp(buf, "off") == 0 ? 0 : -2;
        if (*ret == -2)
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                                "field \"%s\" is \"%s\": must be \"on\" or \"off\"", key, buf);
        return 0;
}

/* CNI_ARGS: "K=V;K=V", read by libcni's rule (pkg/types LoadArgs): every pair is exactly one
 * key and one value; keys are case-sensitive; a key the plugin does not know is an error unless
 * IgnoreUnknown (1/true/0/false, any case) is true anywhere in the list. The keys upstream's
 * plugin knows are MAC and IgnoreUnknown, so runtimes' K8S_POD_* need IgnoreUnknown=1 here as
 * there (the runtimes pass it with them). */
static int parse_cni_args(const char *args, char *mac, size_t size, struct cni_error *e)
{
        mac[0] = '\0';
        if (!args || !*args)
                return 0;
        bool ignore_unknown = false;
        const char *unknown = NULL;
        size_t unknown_len = 0;
        for (const char *p = args;;) {
                const char *end = strchr(p, ';');
                const size_t len = end ? (size_t)(end - p) : strlen(p);
                const char *eq = memchr(p, '=', len);
                if (!eq || memchr(eq + 1, '=', len - (size_t)(eq - p) - 1))
                        return cni_fail(e, CNI_ERR_INVALID_ENV, -EINVAL,
                                        "CNI_ARGS: invalid pair \"%.*s\" (want KEY=VALUE)",
                                        (int)len, p);
                const size_t klen = (size_t)(eq - p), vlen = len - klen - 1;
                const char *v = eq + 1;
                if (klen == 3 && strncmp(p, "MAC", 3) == 0) {
                        if (vlen >= size)
                                return cni_fail(e, CNI_ERR_INVALID_ENV, -EINVAL,
                                                "CNI_ARGS: MAC value is too long");
                        memcpy(mac, v, vlen);
                        mac[vlen] = '\0';
                } else if (klen == 4 && strncmp(p, "GUID", 4) == 0) {
                        /* the InfiniBand GUID of type ib-sriov (cni/conf-ib.h) */
                } else if (klen == 13 && strncmp(p, "IgnoreUnknown", 13) == 0) {
                        if ((vlen == 1 && *v == '1') ||
                            (vlen == 4 && strncasecmp(v, "true", 4) == 0))
                                ignore_unknown = true;
                        else if ((vlen == 1 && *v == '0') ||
                                 (vlen == 5 && strncasecmp(v, "false", 5) == 0))
                                ignore_unknown = false;
                        else
                                return cni_fail(e, CNI_ERR_INVALID_ENV, -EINVAL,
                                                "CNI_ARGS: IgnoreUnknown is \"%.*s\": must be 1, "
                                                "true, 0 or false",
                                                (int)vlen, v);
                } else if (!unknown) {
                        unknown = p;
                        unknown_len = len;
                }
                if (!end)
                        break;
                p = end + 1;
        }
        if (unknown && !ignore_unknown)
                return cni_fail(
                    e, CNI_ERR_INVALID_ENV, -EINVAL,
                    "CNI_ARGS: unknown argument \"%.*s\" (the plugin reads MAC and GUID; add "
                    "IgnoreUnknown=1 to pass others)",
                    (int)unknown_len, unknown);
        return 0;
}

/* libcni's skel refuses a network name that does not match ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$
 * (pkg/utils ValidateNetworkName) before the plugin runs. */
static bool network_name_is_valid(const char *name)
{
        for (const char *p = name; *p; p++) {
                const bool alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                   (*p >= '0' && *p <= '9');
                if (!alnum && (p == name || (*p != '_' && *p != '.' && *p != '-')))
                        return false;
        }
        return name[0] != '\0';
}

int cni_conf_parse(const char *data, size_t len, const char *args, struct cni_conf *ret,
                   struct cni_error *e)
{
        struct cni_conf c = { .spoofchk = -1, .trust = -1, .link_state = -1 };
        json_error_t jerr;
        /* duplicate keys are allowed: the last one counts (find_member), as upstream */
        c.root = json_loadb(data ? data : "", data ? len : 0, 0, &jerr);
        if (!c.root)
                return cni_fail(e, CNI_ERR_DECODE, -EBADMSG,
                                "network configuration is not JSON: %s (line %d)", jerr.text,
                                jerr.line);
        int r;
        if (!json_is_object(c.root)) {
                r = cni_fail(e, CNI_ERR_DECODE, -EBADMSG,
                             "network configuration is not a JSON object");
                goto fail;
        }
        const struct json_text top = { .p = data ? data : "", .n = data ? len : 0 };
        char type[64] = "";
        if ((r = get_string(&top, "cniVersion", c.cni_version, sizeof(c.cni_version), e)) < 0 ||
            (r = get_string(&top, "name", c.name, sizeof(c.name), e)) < 0 ||
            (r = get_string(&top, "type", type, sizeof(type), e)) < 0 ||
            (r = get_string(&top, "deviceID", c.device_id, sizeof(c.device_id), e)) < 0)
                goto fail;
        /* libcni's version decoder (create.DecodeVersion) takes none for 0.1.0 */
        if (!c.cni_version[0])
                strcpy(c.cni_version, "0.1.0");
        if (!c.name[0]) {
                r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                             "field \"name\" (the network's name) is required");
                goto fail;
        }
        if (!network_name_is_valid(c.name)) {
                r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                             "field \"name\" is \"%s\": invalid characters found in network "
                             "name (letters, digits, '_', '.', '-', not starting with one of "
                             "the last three)",
                             c.name);
                goto fail;
        }
        if (!c.device_id[0]) {
                r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                             "field \"deviceID\" (the VF's PCI address) is required");
                goto fail;
        }
        if (!pci_address_is_valid(c.device_id)) {
                r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                             "field \"deviceID\" is \"%s\": not a PCI address like 0000:3b:02.1",
                             c.device_id);
                goto fail;
        }

        bool has_qos = false, has_min = false, has_max = false;
        long vlan = 0, qos = 0, min = 0, max = 0;
        char proto[16] = "";
        if ((r = get_int(&top, "vlan", 0, 4094, &c.has_vlan, &vlan, e)) < 0 ||
            (r = get_int(&top, "vlanQoS", 0, 7, &has_qos, &qos, e)) < 0 ||
            (r = get_string(&top, "vlanProto", proto, sizeof(proto), e)) < 0 ||
            (r = get_int(&top, "min_tx_rate", 0, UINT32_MAX, &has_min, &min, e)) < 0 ||
            (r = get_int(&top, "max_tx_rate", 0, UINT32_MAX, &has_max, &max, e)) < 0)
                goto fail;
        if (!c.has_vlan && (has_qos || proto[0])) {
                r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                             "field \"%s\" needs \"vlan\" to be set",
                             has_qos ? "vlanQoS" : "vlanProto");
                goto fail;
        }
        if (c.has_vlan) {
                if (qos != 0 && vlan == 0) {
                        r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                                     "field \"vlanQoS\" is %ld: a non-zero QoS needs a non-zero "
                                     "vlan",
                                     qos);
                        goto fail;
                }
                if (!proto[0] || strcasecmp(proto, "802.1q") == 0)
                        c.vlan_proto = ETH_P_8021Q;
                else if (strcasecmp(proto, "802.1ad") == 0)
                        c.vlan_proto = ETH_P_8021AD;
                else {
                        r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                                     "field \"vlanProto\" is \"%s\": must be \"802.1q\" or "
                                     "\"802.1ad\"",
                                     proto);
                        goto fail;
                }
                if (c.vlan_proto == ETH_P_8021AD && vlan == 0) {
                        r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                                     "field \"vlanProto\" 802.1ad needs a non-zero vlan");
                        goto fail;
                }
                c.vlan = (int)vlan;
                c.qos = (int)qos;
        }
        c.has_min_tx = has_min;
        c.has_max_tx = has_max;
        c.min_tx_rate = (uint32_t)min;
        c.max_tx_rate = (uint32_t)max;

        if ((r = get_onoff(&top, "spoofchk", &c.spoofchk, e)) < 0 ||
            (r = get_onoff(&top, "trust", &c.trust, e)) < 0)
                goto fail;
        char ls[16] = "";
        if ((r = get_string(&top, "link_state", ls, sizeof(ls), e)) < 0)
                goto fail;
        if (ls[0]) {
                c.link_state = strcmp(ls, "auto") == 0      ? IFLA_VF_LINK_STATE_AUTO
                               : strcmp(ls, "enable") == 0  ? IFLA_VF_LINK_STATE_ENABLE
                               : strcmp(ls, "disable") == 0 ? IFLA_VF_LINK_STATE_DISABLE
                                                            : -1;
                if (c.link_state < 0) {
                        r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                                     "field \"link_state\" is \"%s\": must be auto, enable or "
                                     "disable",
                                     ls);
                        goto fail;
                }
        }

        /* MAC precedence as upstream's cmdAdd: runtimeConfig.mac > CNI_ARGS MAC= > mac */
        char mac_conf[32] = "", mac_args[32] = "", mac_rt[32] = "";
        if ((r = get_string(&top, "mac", mac_conf, sizeof(mac_conf), e)) < 0 ||
            (r = parse_cni_args(args, mac_args, sizeof(mac_args), e)) < 0)
                goto fail;
        struct json_text rt_text, ipam_text;
        json_t *rt_value = member_text(&top, "runtimeConfig", &rt_text);
        const bool rt = rt_value != NULL, rt_is_object = json_is_object(rt_value);
        json_decref(rt_value);
        if (rt && !rt_is_object) {
                r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                             "field \"runtimeConfig\" must be an object");
                goto fail;
        }
        if (rt && (r = get_string(&rt_text, "mac", mac_rt, sizeof(mac_rt), e)) < 0) {
                snprintf(e->msg, sizeof(e->msg), "field \"runtimeConfig.mac\" must be a string");
                goto fail;
        }
        const char *mac = mac_rt[0] ? mac_rt : mac_args[0] ? mac_args : mac_conf;
        const char *mac_field = mac_rt[0]     ? "runtimeConfig.mac"
                                : mac_args[0] ? "CNI_ARGS MAC"
                                              : "mac";
        if (mac[0]) {
                if (cni_parse_mac(mac, c.mac) < 0) {
                        r = cni_fail(e,
                                     mac_args[0] && !mac_rt[0] ? CNI_ERR_INVALID_ENV
                                                               : CNI_ERR_INVALID_CONFIG,
                                     -EINVAL,
                                     "%s is \"%s\": not a MAC address like "
                                     "aa:bb:cc:dd:ee:ff",
                                     mac_field, mac);
                        goto fail;
                }
                c.has_mac = true;
                cni_format_mac(c.mac, c.mac_str);
        }

        json_t *ipam_value = member_text(&top, "ipam", &ipam_text);
        const bool ipam = ipam_value != NULL, ipam_is_object = json_is_object(ipam_value);
        json_decref(ipam_value);
        if (ipam && !ipam_is_object) {
                r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                             "field \"ipam\" must be an object");
                goto fail;
        }
        if (ipam && (r = get_string(&ipam_text, "type", c.ipam_type, sizeof(c.ipam_type), e)) < 0)
                goto fail;
        if (c.ipam_type[0] && !filename_is_valid(c.ipam_type)) {
                r = cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                             "field \"ipam.type\" is \"%s\": not a plugin name", c.ipam_type);
                goto fail;
        }
        /* accepted and not used here: logLevel, logFile, dns, capabilities, args */
        *ret = c;
        return 0;
fail:
        cni_conf_done(&c);
        return r;
}
