/* SPDX-License-Identifier: Apache-2.0 */
#include "cni/conf-ib.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "util/macro.h"
#include "util/parse.h"

int cni_guid_parse(const char *s, uint64_t *ret)
{
        uint64_t v = 0;
        if (!s || strlen(s) != 23)
                return -EINVAL;
        for (int i = 0; i < 8; i++) {
                const char *p = s + i * 3;
                int hi = hex_digit_value(p[0]), lo = hex_digit_value(p[1]);
                if (hi < 0 || lo < 0 || (i < 7 && p[2] != ':'))
                        return -EINVAL;
                v = v << 8 | (uint64_t)(hi << 4 | lo);
        }
        *ret = v;
        return 0;
}

void cni_guid_format(uint64_t guid, char out[static CNI_GUID_STR_MAX])
{
        snprintf(out, CNI_GUID_STR_MAX, "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x",
                 (unsigned)(guid >> 56) & 0xff, (unsigned)(guid >> 48) & 0xff,
                 (unsigned)(guid >> 40) & 0xff, (unsigned)(guid >> 32) & 0xff,
                 (unsigned)(guid >> 24) & 0xff, (unsigned)(guid >> 16) & 0xff,
                 (unsigned)(guid >> 8) & 0xff, (unsigned)guid & 0xff);
}

static int get_bool(json_t *o, const char *key, bool *ret, struct cni_error *e)
{
        json_t *v = json_object_get(o, key);
        *ret = false;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_boolean(v))
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL,
                                "field \"%s\" must be true or false", key);
        *ret = json_is_true(v);
        return 0;
}

/* A string member (NULL when absent or null); -EINVAL for another type. */
static int get_str(json_t *o, const char *key, const char *shown, const char **ret,
                   struct cni_error *e)
{
        json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EINVAL, "field \"%s\" must be a string",
                                shown);
        *ret = json_string_value(v);
        return 0;
}

/* CNI_ARGS GUID= (the pairs are checked by cni_conf_parse()); "" when none. */
static void args_guid(const char *args, char *buf, size_t size)
{
        buf[0] = '\0';
        for (const char *p = args; p && *p;) {
                const char *end = strchr(p, ';');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                if (len > 5 && strncmp(p, "GUID=", 5) == 0 && len - 5 < size) {
                        memcpy(buf, p + 5, len - 5);
                        buf[len - 5] = '\0';
                }
                if (!end)
                        break;
                p = end + 1;
        }
}

int cni_ib_conf_parse(const char *data, size_t len, const char *args, struct cni_ib_conf *ret,
                      struct cni_error *e)
{
        struct cni_ib_conf c = { .has_guid = false };
        json_error_t jerr;
        json_auto_t *o = json_loadb(data ? data : "", data ? len : 0, 0, &jerr);
        if (!json_is_object(o))
                return cni_fail(e, CNI_ERR_DECODE, -EBADMSG,
                                "network configuration is not a JSON object");
        int r;
        const char *pkey, *rt_guid, *arg_guid = NULL, *app = NULL;
        if ((r = get_bool(o, "rdmaIsolation", &c.rdma_isolation, e)) < 0 ||
            (r = get_bool(o, "ibKubernetesEnabled", &c.ib_kubernetes_enabled, e)) < 0 ||
            (r = get_bool(o, "vfioPciMode", &c.vfio_pci_mode, e)) < 0 ||
            (r = get_str(o, "pkey", "pkey", &pkey, e)) < 0)
                return r;
        json_t *rt = json_object_get(o, "runtimeConfig");
        if ((r = get_str(rt, "infinibandGUID", "runtimeConfig.infinibandGUID", &rt_guid, e)) < 0)
                return r;
        json_t *cargs = json_object_get(o, "args");
        json_t *cni = json_is_object(cargs) ? json_object_get(cargs, "cni") : NULL;
        if ((r = get_str(cni, "guid", "args.cni.guid", &arg_guid, e)) < 0 ||
            (r = get_str(cni, "mellanox.infiniband.app", "args.cni.mellanox.infiniband.app", &app,
                         e)) < 0)
                return r;
        c.ib_configured = app && strcmp(app, "configured") == 0;
        char env_guid[64];
        args_guid(args, env_guid, sizeof(env_guid));
        const char *guid = NULL;
        if (rt_guid && rt_guid[0]) {
                guid = rt_guid;
                snprintf(c.guid_from, sizeof(c.guid_from), "runtimeConfig.infinibandGUID");
        } else if (arg_guid && arg_guid[0]) {
                guid = arg_guid;
                snprintf(c.guid_from, sizeof(c.guid_from), "args.cni.guid");
        } else if (env_guid[0]) {
                guid = env_guid;
                snprintf(c.guid_from, sizeof(c.guid_from), "CNI_ARGS GUID");
        }
        if (guid) {
                int code = strcmp(c.guid_from, "CNI_ARGS GUID") == 0 ? CNI_ERR_INVALID_ENV
                                                                     : CNI_ERR_INVALID_CONFIG;
                if (cni_guid_parse(guid, &c.guid) < 0)
                        return cni_fail(e, code, -EINVAL,
                                        "%s is \"%.64s\": not a GUID like 02:00:00:00:00:00:00:01",
                                        c.guid_from, guid);
                if (c.guid == 0)
                        return cni_fail(e, code, -EINVAL,
                                        "%s is \"%s\": the all-zero GUID is not a valid GUID",
                                        c.guid_from, guid);
                c.has_guid = true;
        }
        *ret = c;
        return 0;
}
