#include "deviceplugin/rdma-shared-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"

#define CONFIG_FILE_MAX (1024 * 1024)

static void selectors_done(struct rdma_shared_selectors *s)
{
        strv_free_n(s->vendors, s->n_vendors);
        strv_free_n(s->device_ids, s->n_device_ids);
        strv_free_n(s->drivers, s->n_drivers);
        strv_free_n(s->if_names, s->n_if_names);
        strv_free_n(s->link_types, s->n_link_types);
        *s = (struct rdma_shared_selectors){ 0 };
}

void rdma_shared_config_done(struct rdma_shared_config *c)
{
        for (size_t i = 0; i < c->n_resources; i++)
                selectors_done(&c->resources[i].selectors);
        free(c->resources);
        *c = (struct rdma_shared_config){ 0 };
}

static bool is_hex_id(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 6)
                return false;
        if (strncasecmp(s, "0x", 2) == 0)
                s += 2;
        if (*s == 0)
                return false;
        for (; *s; s++)
                if (!strchr("0123456789abcdefABCDEF", *s))
                        return false;
        return true;
}

static bool is_resource_name(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n >= RESOURCE_NAME_MAX)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9') || *s == '_'))
                        return false;
        return true;
}

enum selector_kind { SEL_HEX, SEL_DRIVER, SEL_IFNAME, SEL_LINK_TYPE };

static const char *selector_value_error(enum selector_kind kind, const char *v)
{
        switch (kind) {
        case SEL_HEX:
                return is_hex_id(v) ? NULL : "is not a hexadecimal PCI ID";
        case SEL_DRIVER:
                return v[0] && strlen(v) < DRIVER_MAX && !strchr(v, '/') ? NULL
                                                                         : "is not a driver name";
        case SEL_IFNAME:
                return v[0] && strlen(v) < IFNAME_MAX && !strchr(v, '/')
                           ? NULL
                           : "is not an interface name";
        case SEL_LINK_TYPE:
                return strcasecmp(v, "ether") == 0 || strcasecmp(v, "infiniband") == 0 ||
                               strcasecmp(v, "eth") == 0 || strcasecmp(v, "ib") == 0
                           ? NULL
                           : "is not a link type (ether or infiniband)";
        }
        return "is invalid";
}

static int parse_string_list(json_t *arr, const char *origin, size_t item, const char *field,
                             enum selector_kind kind, char ***list, size_t *n)
{
        if (!json_is_array(arr))
                return log_error_errno(EINVAL, "%s: configList[%zu].%s: must be a list of strings",
                                       origin, item, field);
        size_t i;
        json_t *v;
        json_array_foreach(arr, i, v)
        {
                if (!json_is_string(v))
                        return log_error_errno(EINVAL, "%s: configList[%zu].%s[%zu]: not a string",
                                               origin, item, field, i);
                const char *why = selector_value_error(kind, json_string_value(v));
                if (why)
                        return log_error_errno(EINVAL, "%s: configList[%zu].%s[%zu]: \"%s\" %s",
                                               origin, item, field, i, json_string_value(v), why);
                int r = strv_push_dup(list, n, json_string_value(v));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_selectors(json_t *obj, const char *origin, size_t item,
                           struct rdma_shared_selectors *s)
{
        if (!json_is_object(obj))
                return log_error_errno(EINVAL, "%s: configList[%zu].selectors: must be an object",
                                       origin, item);
        const char *key;
        json_t *v;
        json_object_foreach(obj, key, v)
        {
                int r;
                if (strcmp(key, "vendors") == 0)
                        r = parse_string_list(v, origin, item, "selectors.vendors", SEL_HEX,
                                              &s->vendors, &s->n_vendors);
                else if (strcmp(key, "deviceIDs") == 0)
                        r = parse_string_list(v, origin, item, "selectors.deviceIDs", SEL_HEX,
                                              &s->device_ids, &s->n_device_ids);
                else if (strcmp(key, "drivers") == 0)
                        r = parse_string_list(v, origin, item, "selectors.drivers", SEL_DRIVER,
                                              &s->drivers, &s->n_drivers);
                else if (strcmp(key, "ifNames") == 0)
                        r = parse_string_list(v, origin, item, "selectors.ifNames", SEL_IFNAME,
                                              &s->if_names, &s->n_if_names);
                else if (strcmp(key, "linkTypes") == 0)
                        r = parse_string_list(v, origin, item, "selectors.linkTypes", SEL_LINK_TYPE,
                                              &s->link_types, &s->n_link_types);
                else
                        r = log_error_errno(EINVAL,
                                            "%s: configList[%zu].selectors: unknown selector "
                                            "\"%s\" (vendors, deviceIDs, drivers, ifNames, "
                                            "linkTypes)",
                                            origin, item, key);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_resource(json_t *obj, const char *origin, size_t item,
                          struct rdma_shared_resource *res)
{
        if (!json_is_object(obj))
                return log_error_errno(EINVAL, "%s: configList[%zu]: must be an object", origin,
                                       item);
        json_t *name = json_object_get(obj, "resourceName");
        if (!json_is_string(name))
                return log_error_errno(EINVAL, "%s: configList[%zu].resourceName: required string",
                                       origin, item);
        if (!is_resource_name(json_string_value(name)))
                return log_error_errno(EINVAL,
                                       "%s: configList[%zu].resourceName: \"%s\" must match "
                                       "^[a-zA-Z0-9_]+$ (at most %d characters)",
                                       origin, item, json_string_value(name),
                                       RESOURCE_NAME_MAX - 1);
        json_t *prefix = json_object_get(obj, "resourcePrefix");
        if (prefix && !json_is_string(prefix))
                return log_error_errno(EINVAL, "%s: configList[%zu].resourcePrefix: not a string",
                                       origin, item);
        const char *prefix_s = prefix ? json_string_value(prefix) : RDMA_SHARED_PREFIX_DEFAULT;
        struct dp_pool probe = { 0 };
        if (dp_pool_set_names(&probe, prefix_s, json_string_value(name)) < 0)
                return log_error_errno(EINVAL,
                                       "%s: configList[%zu].resourcePrefix: \"%s\" is not a valid "
                                       "resource prefix",
                                       origin, item, prefix_s);
        snprintf(res->name, sizeof(res->name), "%s", json_string_value(name));
        snprintf(res->prefix, sizeof(res->prefix), "%s", prefix_s);

        json_t *max = json_object_get(obj, "rdmaHcaMax");
        if (max && !json_is_integer(max))
                return log_error_errno(EINVAL, "%s: configList[%zu].rdmaHcaMax: not an integer",
                                       origin, item);
        json_int_t m = max ? json_integer_value(max) : 0;
        if (m < 0 || m > RDMA_SHARED_HCA_MAX_LIMIT)
                return log_error_errno(EINVAL,
                                       "%s: configList[%zu].rdmaHcaMax: %lld out of range 0..%d",
                                       origin, item, (long long)m, RDMA_SHARED_HCA_MAX_LIMIT);
        res->hca_max = (int)m;

        json_t *sel = json_object_get(obj, "selectors");
        json_t *devices = json_object_get(obj, "devices");
        if ((sel != NULL) == (devices != NULL))
                return log_error_errno(EINVAL,
                                       "%s: configList[%zu] (%s): exactly one of \"selectors\" and "
                                       "the deprecated \"devices\" must be given",
                                       origin, item, res->name);
        if (devices)
                return parse_string_list(devices, origin, item, "devices", SEL_IFNAME,
                                         &res->selectors.if_names, &res->selectors.n_if_names);
        return parse_selectors(sel, origin, item, &res->selectors);
}

int rdma_shared_config_parse(const char *text, const char *origin, struct rdma_shared_config *ret)
{
        json_error_t jerr;
        json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
                return log_error_errno(EINVAL, "%s:%d:%d: not valid JSON: %s", origin, jerr.line,
                                       jerr.column, jerr.text);
        struct rdma_shared_config c = { .periodic_update_sec = RDMA_SHARED_UPDATE_DEFAULT };
        int r = 0;
        if (!json_is_object(root)) {
                r = log_error_errno(EINVAL, "%s: top level must be an object", origin);
                goto out;
        }
        json_t *interval = json_object_get(root, "periodicUpdateInterval");
        if (interval) {
                if (!json_is_integer(interval) || json_integer_value(interval) < 0 ||
                    json_integer_value(interval) > 86400 * 365) {
                        r = log_error_errno(EINVAL,
                                            "%s: periodicUpdateInterval: must be an integer >= 0 "
                                            "(seconds; 0 disables periodic updates)",
                                            origin);
                        goto out;
                }
                c.periodic_update_sec = (int)json_integer_value(interval);
        }
        json_t *list = json_object_get(root, "configList");
        if (!json_is_array(list) || json_array_size(list) == 0) {
                r = log_error_errno(EINVAL, "%s: configList: required non-empty list", origin);
                goto out;
        }
        c.resources = calloc(json_array_size(list), sizeof(*c.resources));
        if (!c.resources) {
                r = -ENOMEM;
                goto out;
        }
        size_t i;
        json_t *item;
        json_array_foreach(list, i, item)
        {
                c.n_resources = i + 1;
                r = parse_resource(item, origin, i, &c.resources[i]);
                if (r < 0)
                        goto out;
                for (size_t j = 0; j < i; j++)
                        if (strcmp(c.resources[j].name, c.resources[i].name) == 0 &&
                            strcmp(c.resources[j].prefix, c.resources[i].prefix) == 0) {
                                r = log_error_errno(EINVAL,
                                                    "%s: configList[%zu].resourceName: \"%s\" "
                                                    "already used by configList[%zu]",
                                                    origin, i, c.resources[i].name, j);
                                goto out;
                        }
        }
        *ret = c;
        c = (struct rdma_shared_config){ 0 };
out:
        rdma_shared_config_done(&c);
        json_decref(root);
        return r;
}

int rdma_shared_config_load(const char *path, struct rdma_shared_config *ret)
{
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r = read_full_file(path, CONFIG_FILE_MAX, &text, &size);
        if (r < 0)
                return log_error_errno(r, "%s: cannot read RDMA shared device config: %m", path);
        return rdma_shared_config_parse(text, path, ret);
}

static bool hex_list_matches(char *const *list, size_t n, unsigned value)
{
        if (n == 0)
                return true;
        for (size_t i = 0; i < n; i++)
                if (strtoul(list[i], NULL, 16) == value)
                        return true;
        return false;
}

static bool str_list_matches(char *const *list, size_t n, const char *value)
{
        return n == 0 || (value && strv_contains(list, n, value));
}

static bool link_type_matches(char *const *list, size_t n, const struct pf_info *pf)
{
        if (n == 0)
                return true;
        enum link_type lt = pf->n_netdevs > 0 ? pf->netdevs[0].link_type : LINK_TYPE_UNKNOWN;
        for (size_t i = 0; i < n; i++) {
                bool eth = strcasecmp(list[i], "ether") == 0 || strcasecmp(list[i], "eth") == 0;
                if ((eth && lt == LINK_TYPE_ETH) || (!eth && lt == LINK_TYPE_IB))
                        return true;
        }
        return false;
}

/* The upstream whole-card plugin requires rdma_cm, umad and uverbs of a card and skips one
 * that lacks any (a pod given a missing device path does not start). */
static bool rdma_device_usable(const struct rdma_device *rd)
{
        bool uverbs = false, umad = false, rdma_cm = false;
        for (size_t i = 0; i < rd->n_char_devices; i++) {
                const char *c = rd->char_devices[i];
                const char *base = strrchr(c, '/') ? strrchr(c, '/') + 1 : c;
                uverbs |= strncmp(base, "uverbs", 6) == 0;
                umad |= strncmp(base, "umad", 4) == 0;
                rdma_cm |= strcmp(base, "rdma_cm") == 0;
        }
        return uverbs && umad && rdma_cm;
}

bool rdma_shared_pf_matches(const struct rdma_shared_selectors *sel, const struct pf_info *pf)
{
        bool usable = false;
        for (size_t i = 0; i < pf->n_rdma; i++)
                usable |= rdma_device_usable(&pf->rdma[i]);
        if (!usable)
                return false;
        bool ifname = sel->n_if_names == 0;
        for (size_t i = 0; i < pf->n_netdevs && !ifname; i++)
                ifname = strv_contains(sel->if_names, sel->n_if_names, pf->netdevs[i].name);
        return ifname && hex_list_matches(sel->vendors, sel->n_vendors, pf->vendor) &&
               hex_list_matches(sel->device_ids, sel->n_device_ids, pf->device) &&
               str_list_matches(sel->drivers, sel->n_drivers, pf->driver) &&
               link_type_matches(sel->link_types, sel->n_link_types, pf);
}

static int add_card(struct dp_pool *pool, const struct pf_info *pf)
{
        for (size_t i = 0; i < pf->n_rdma; i++)
                for (size_t j = 0; j < pf->rdma[i].n_char_devices; j++) {
                        const char *c = pf->rdma[i].char_devices[j];
                        char path[128];
                        if (c[0] == '/')
                                snprintf(path, sizeof(path), "%s", c);
                        else
                                snprintf(path, sizeof(path), "/dev/infiniband/%s", c);
                        if (strv_contains(pool->shared_char_devices, pool->n_shared_char_devices,
                                          path))
                                continue;
                        int r = strv_push_dup(&pool->shared_char_devices,
                                              &pool->n_shared_char_devices, path);
                        if (r < 0)
                                return r;
                }
        return 0;
}

static int build_pool(const struct rdma_shared_resource *res, const struct inventory *inv,
                      struct dp_pool *pool)
{
        *pool = (struct dp_pool){ .kind = DP_POOL_RDMA_SHARED, .is_rdma = true };
        int r = dp_pool_set_names(pool, res->prefix, res->name);
        if (r < 0)
                return r;
        size_t cards = 0;
        for (size_t i = 0; i < inv->n_pfs; i++) {
                if (!rdma_shared_pf_matches(&res->selectors, &inv->pfs[i]))
                        continue;
                r = add_card(pool, &inv->pfs[i]);
                if (r < 0)
                        return r;
                cards++;
        }
        if (cards == 0) {
                log_ctx_msg(LOG_NOTICE, 0, &(const struct log_ctx){ .resource = pool->resource },
                            "no RDMA card matches the selectors; advertising no devices");
                return 0;
        }
        pool->devices = calloc(res->hca_max ?: 1, sizeof(*pool->devices));
        if (!pool->devices)
                return -ENOMEM;
        for (int i = 0; i < res->hca_max; i++) {
                pool->devices[i] =
                    (struct dp_device){ .healthy = true, .numa_node = -1, .iommu_group = -1 };
                snprintf(pool->devices[i].id, sizeof(pool->devices[i].id), "%d", i);
        }
        pool->n_devices = (size_t)res->hca_max;
        return 0;
}

int dp_pools_from_rdma_shared(const struct rdma_shared_config *c, const struct inventory *inv,
                              struct dp_pool_set *ret)
{
        struct dp_pool_set set = { .pools = calloc(c->n_resources ?: 1, sizeof(struct dp_pool)) };
        if (!set.pools)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_resources; i++) {
                set.n_pools = i + 1;
                int r = build_pool(&c->resources[i], inv, &set.pools[i]);
                if (r < 0) {
                        dp_pool_set_done(&set);
                        return r;
                }
        }
        *ret = set;
        return 0;
}
