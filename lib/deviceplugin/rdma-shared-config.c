/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/rdma-shared-config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "deviceplugin/health.h"
#include "util/array.h"
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
        strv_free_n(c->warnings, c->n_warnings);
        *c = (struct rdma_shared_config){ 0 };
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

/* What the parse found wrong (one error) and what it ignored (warnings). */
struct parse {
        const char *origin;
        char *error;
        struct rdma_shared_config *c;
};

static void parse_done(struct parse *p)
{
        free(p->error);
        p->error = NULL;
}

static char *format_message(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static char *format_message(const char *fmt, va_list ap)
{
        char *msg = NULL;
        return vasprintf(&msg, fmt, ap) < 0 ? NULL : msg;
}

static int fail(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parse *p, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = format_message(fmt, ap);
        va_end(ap);
        if (!msg)
                return -ENOMEM;
        free(p->error);
        if (asprintf(&p->error, "%s: %s", p->origin, msg) < 0)
                p->error = NULL;
        return -EINVAL;
}

static int warn(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int warn(struct parse *p, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = format_message(fmt, ap);
        va_end(ap);
        if (!msg)
                return -ENOMEM;
        return strv_push_dup(&p->c->warnings, &p->c->n_warnings, msg);
}

/* Upstream decodes with Go's encoding/json: unknown keys are ignored (we warn), null is the
 * zero value, a value of the wrong type is an error. */
static int warn_unknown_keys(struct parse *p, json_t *obj, const char *where,
                             const char *const *known)
{
        const char *key;
        json_t *v;
        json_object_foreach(obj, key, v)
        {
                bool ok = false;
                for (size_t i = 0; known[i] && !ok; i++)
                        ok = strcmp(key, known[i]) == 0;
                if (!ok) {
                        int r =
                            warn(p, "%s: %s: unknown key \"%s\" ignored", p->origin, where, key);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int parse_string_list(struct parse *p, json_t *arr, size_t item, const char *field,
                             char ***list, size_t *n)
{
        if (!arr || json_is_null(arr))
                return 0;
        if (!json_is_array(arr))
                return fail(p, "configList[%zu].%s: must be a list of strings", item, field);
        size_t i;
        json_t *v;
        json_array_foreach(arr, i, v)
        {
                if (!json_is_string(v))
                        return fail(p, "configList[%zu].%s[%zu]: not a string", item, field, i);
                int r = strv_push_dup(list, n, json_string_value(v));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_selectors(struct parse *p, json_t *obj, size_t item,
                           struct rdma_shared_selectors *s)
{
        if (!obj || json_is_null(obj))
                return 0;
        if (!json_is_object(obj))
                return fail(p, "configList[%zu].selectors: must be an object", item);
        static const char *const known[] = { "vendors", "deviceIDs", "drivers",
                                             "ifNames", "linkTypes", NULL };
        char where[64];
        snprintf(where, sizeof(where), "configList[%zu].selectors", item);
        int r = warn_unknown_keys(p, obj, where, known);
        /* parsed in this order, so the first error reported is the same one */
        const struct {
                const char *key;
                char ***list;
                size_t *n;
        } lists[] = {
                { "vendors", &s->vendors, &s->n_vendors },
                { "deviceIDs", &s->device_ids, &s->n_device_ids },
                { "drivers", &s->drivers, &s->n_drivers },
                { "ifNames", &s->if_names, &s->n_if_names },
                { "linkTypes", &s->link_types, &s->n_link_types },
        };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(lists); i++) {
                char field[32];
                snprintf(field, sizeof(field), "selectors.%s", lists[i].key);
                r = parse_string_list(p, json_object_get(obj, lists[i].key), item, field,
                                      lists[i].list, lists[i].n);
        }
        return r;
}

static bool selectors_empty(const struct rdma_shared_selectors *s)
{
        return s->n_vendors == 0 && s->n_device_ids == 0 && s->n_drivers == 0 &&
               s->n_if_names == 0 && s->n_link_types == 0;
}

/* Optional string: absent or null is "". */
static int get_string(struct parse *p, json_t *obj, const char *key, size_t item, const char **ret)
{
        json_t *v = json_object_get(obj, key);
        *ret = "";
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return fail(p, "configList[%zu].%s: not a string", item, key);
        *ret = json_string_value(v);
        return 0;
}

static int parse_resource(struct parse *p, json_t *obj, size_t item,
                          struct rdma_shared_resource *res)
{
        if (!json_is_object(obj))
                return fail(p, "configList[%zu]: must be an object", item);
        static const char *const known[] = { "resourceName", "resourcePrefix", "rdmaHcaMax",
                                             "devices",      "selectors",      NULL };
        char where[48];
        snprintf(where, sizeof(where), "configList[%zu]", item);
        int r = warn_unknown_keys(p, obj, where, known);
        if (r < 0)
                return r;
        const char *name, *prefix;
        if ((r = get_string(p, obj, "resourceName", item, &name)) < 0 ||
            (r = get_string(p, obj, "resourcePrefix", item, &prefix)) < 0)
                return r;
        if (!is_resource_name(name))
                return fail(p,
                            "configList[%zu].resourceName: \"%s\" must match ^[a-zA-Z0-9_]+$ "
                            "(at most %d characters)",
                            item, name, RESOURCE_NAME_MAX - 1);
        if (prefix[0] == 0)
                prefix = RDMA_SHARED_PREFIX_DEFAULT; /* upstream: "" means the default */
        struct dp_pool probe = { 0 };
        if (dp_pool_set_names(&probe, prefix, name) < 0)
                return fail(p,
                            "configList[%zu].resourcePrefix: \"%s\" is not a valid resource "
                            "prefix (a DNS subdomain)",
                            item, prefix);
        snprintf(res->name, sizeof(res->name), "%s", name);
        snprintf(res->prefix, sizeof(res->prefix), "%s", prefix);

        json_t *max = json_object_get(obj, "rdmaHcaMax");
        if (max && !json_is_null(max) && !json_is_integer(max))
                return fail(p, "configList[%zu].rdmaHcaMax: not an integer", item);
        json_int_t m = json_is_integer(max) ? json_integer_value(max) : 0;
        if (m < 0)
                return fail(p, "configList[%zu].rdmaHcaMax: %lld is negative", item, (long long)m);
        if (m > RDMA_SHARED_HCA_MAX_LIMIT)
                return fail(p,
                            "configList[%zu].rdmaHcaMax: %lld is more IDs than one device list "
                            "to the kubelet carries here (at most %d)",
                            item, (long long)m, RDMA_SHARED_HCA_MAX_LIMIT);
        res->hca_max = (int)m;

        char **devices = NULL;
        size_t n_devices = 0;
        r = parse_string_list(p, json_object_get(obj, "devices"), item, "devices", &devices,
                              &n_devices);
        if (r >= 0)
                r = parse_selectors(p, json_object_get(obj, "selectors"), item, &res->selectors);
        if (r >= 0 && selectors_empty(&res->selectors) && n_devices == 0)
                r = fail(p,
                         "configList[%zu] (%s): neither \"selectors\" nor the deprecated "
                         "\"devices\" selects anything; an empty selector would share every "
                         "RDMA card of the node, so (as upstream) it is refused",
                         item, name);
        if (r >= 0 && !selectors_empty(&res->selectors) && n_devices > 0)
                r = fail(p,
                         "configList[%zu] (%s): both \"selectors\" and the deprecated \"devices\" "
                         "are given; use \"selectors\"",
                         item, name);
        if (r >= 0 && n_devices > 0) {
                /* The deprecated list is the ifNames selector. */
                res->selectors.if_names = devices;
                res->selectors.n_if_names = n_devices;
                devices = NULL;
                n_devices = 0;
                r = warn(p,
                         "%s: configList[%zu] (%s): \"devices\" is deprecated, use "
                         "\"selectors\": {\"ifNames\": [...]}",
                         p->origin, item, name);
        }
        strv_free_n(devices, n_devices);
        return r;
}

static int parse_config(struct parse *p, const char *text, struct rdma_shared_config *c)
{
        json_error_t jerr;
        json_auto_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        int r;
        if (!root)
                return fail(p, "line %d, column %d: not valid JSON: %s", jerr.line, jerr.column,
                            jerr.text);
        if (!json_is_object(root))
                return fail(p, "the top level must be an object");
        static const char *const known[] = { "periodicUpdateInterval", "configList", NULL };
        r = warn_unknown_keys(p, root, "top level", known);
        if (r < 0)
                return r;
        json_t *interval = json_object_get(root, "periodicUpdateInterval");
        if (interval && !json_is_null(interval)) { /* null: the default, as upstream */
                if (!json_is_integer(interval))
                        return fail(p, "periodicUpdateInterval: not an integer (seconds)");
                json_int_t v = json_integer_value(interval);
                if (v < 0 || v > INT32_MAX) {
                        return fail(
                            p,
                            "periodicUpdateInterval: %lld must be >= 0 (seconds; 0 disables "
                            "periodic updates)",
                            (long long)v);
                }
                c->periodic_update_sec = (int)v;
        }
        json_t *list = json_object_get(root, "configList");
        if (list && !json_is_null(list) && !json_is_array(list))
                return fail(p, "configList: must be a list");
        if (!list || json_array_size(list) == 0)
                return fail(p, "configList: no resources configuration found");
        c->resources = calloc(json_array_size(list), sizeof(*c->resources));
        if (!c->resources)
                return -ENOMEM;
        size_t i;
        json_t *item;
        json_array_foreach(list, i, item)
        {
                c->n_resources = i + 1;
                r = parse_resource(p, item, i, &c->resources[i]);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < i; j++)
                        if (strcmp(c->resources[j].name, c->resources[i].name) == 0) {
                                /* Unique by name alone, as upstream: the socket is <name>.sock. */
                                return fail(p,
                                            "configList[%zu].resourceName: \"%s\" already used by "
                                            "configList[%zu] (names must be unique even under "
                                            "different prefixes)",
                                            i, c->resources[i].name, j);
                        }
        }
        return 0;
}

int rdma_shared_config_parse(const char *text, const char *origin, struct rdma_shared_config *ret,
                             char **ret_error)
{
        _cleanup_(rdma_shared_config_done) struct rdma_shared_config c = {
                .periodic_update_sec = RDMA_SHARED_UPDATE_DEFAULT
        };
        _cleanup_(parse_done) struct parse p = { .origin = origin, .c = &c };
        int r = parse_config(&p, text, &c);
        if (r < 0) {
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                if (ret_error) {
                        *ret_error = TAKE_PTR(p.error);
                        if (!*ret_error)
                                *ret_error = strdup(strerror(-r));
                }
                return r;
        }
        *ret = c;
        c = (struct rdma_shared_config){ 0 };
        return 0;
}

int rdma_shared_config_load(const char *path, struct rdma_shared_config *ret, char **ret_error)
{
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r = read_full_file(path, CONFIG_FILE_MAX, &text, &size);
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "%s: cannot read: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        return rdma_shared_config_parse(text, path, ret, ret_error);
}

/* Upstream compares exact strings: PCI IDs as ghw gives them (4 lower-case hex digits, no
 * 0x), drivers and interface names as they are. */
static bool id_list_matches(char *const *list, size_t n, unsigned value)
{
        if (n == 0)
                return true;
        char id[8];
        snprintf(id, sizeof(id), "%04x", value);
        return strv_contains(list, n, id);
}

static bool str_list_matches(char *const *list, size_t n, const char *value)
{
        return n == 0 || (value && strv_contains(list, n, value));
}

/* A network function as the upstream plugin sees it: PF, VF or neither. */
struct candidate {
        const char *pci_address;
        int numa_node;
        uint16_t vendor, device;
        const char *driver;
        const struct netdev_info *netdevs;
        size_t n_netdevs;
        const struct rdma_device *rdma;
        size_t n_rdma;
};

/* Link types are netlink's names ("ether", "infiniband"); any other value selects nothing. */
static bool link_type_matches(char *const *list, size_t n, const struct candidate *c)
{
        if (n == 0)
                return true;
        enum link_type lt = c->n_netdevs > 0 ? c->netdevs[0].link_type : LINK_TYPE_UNKNOWN;
        const char *name = lt == LINK_TYPE_ETH ? "ether" : lt == LINK_TYPE_IB ? "infiniband" : NULL;
        return name && strv_contains(list, n, name);
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

static bool candidate_matches(const struct rdma_shared_selectors *sel, const struct candidate *c)
{
        bool usable = false;
        for (size_t i = 0; i < c->n_rdma; i++)
                usable |= rdma_device_usable(&c->rdma[i]);
        if (!usable || !c->driver[0])
                return false;
        /* ifName: the function's first netdev, as upstream */
        bool ifname =
            sel->n_if_names == 0 ||
            (c->n_netdevs > 0 && strv_contains(sel->if_names, sel->n_if_names, c->netdevs[0].name));
        return ifname && id_list_matches(sel->vendors, sel->n_vendors, c->vendor) &&
               id_list_matches(sel->device_ids, sel->n_device_ids, c->device) &&
               str_list_matches(sel->drivers, sel->n_drivers, c->driver) &&
               link_type_matches(sel->link_types, sel->n_link_types, c);
}

static struct candidate pf_candidate(const struct pf_info *pf)
{
        return (struct candidate){ .pci_address = pf->pci_address,
                                   .numa_node = pf->numa_node,
                                   .vendor = pf->vendor,
                                   .device = pf->device,
                                   .driver = pf->driver,
                                   .netdevs = pf->netdevs,
                                   .n_netdevs = pf->n_netdevs,
                                   .rdma = pf->rdma,
                                   .n_rdma = pf->n_rdma };
}

bool rdma_shared_pf_matches(const struct rdma_shared_selectors *sel, const struct pf_info *pf)
{
        const struct candidate c = pf_candidate(pf);
        return candidate_matches(sel, &c);
}

/* The card on its own, for DRA: its usable RDMA devices' char devices (rdma_cm apart, as for a
 * VF). */
static int add_card_device(struct dp_pool *pool, const struct candidate *c, bool healthy)
{
        if (GROW_ARRAY(pool->cards, pool->cap_cards, pool->n_cards + 1) < 0)
                return -ENOMEM;
        struct dp_device *d = &pool->cards[pool->n_cards];
        *d = (struct dp_device){ .healthy = healthy, .numa_node = c->numa_node, .iommu_group = -1 };
        snprintf(d->id, sizeof(d->id), "%s", c->pci_address);
        pool->n_cards++;
        for (size_t i = 0; i < c->n_rdma; i++) {
                if (!rdma_device_usable(&c->rdma[i]))
                        continue;
                if (!d->rdma_device[0])
                        snprintf(d->rdma_device, sizeof(d->rdma_device), "%s", c->rdma[i].name);
                for (size_t j = 0; j < c->rdma[i].n_char_devices; j++) {
                        const char *dev = c->rdma[i].char_devices[j];
                        char path[128];
                        snprintf(path, sizeof(path), "%s%s",
                                 dev[0] == '/' ? "" : "/dev/infiniband/", dev);
                        if (strcmp(path, "/dev/infiniband/rdma_cm") == 0) {
                                d->rdma_cm = true;
                                continue;
                        }
                        if (!strv_contains(d->char_devices, d->n_char_devices, path) &&
                            strv_push_dup(&d->char_devices, &d->n_char_devices, path) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

static int add_card(struct dp_pool *pool, const struct candidate *c)
{
        for (size_t i = 0; i < c->n_rdma; i++)
                for (size_t j = 0; j < c->rdma[i].n_char_devices; j++) {
                        const char *dev = c->rdma[i].char_devices[j];
                        char path[128];
                        if (dev[0] == '/')
                                snprintf(path, sizeof(path), "%s", dev);
                        else
                                snprintf(path, sizeof(path), "/dev/infiniband/%s", dev);
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

/* Counts the matching functions and those of them that are up (deviceplugin/health.h). */
struct card_count {
        size_t cards, up;
        const struct dp_health_options *health;
};

static int consider(struct dp_pool *pool, const struct rdma_shared_resource *res,
                    const struct candidate *c, struct card_count *n)
{
        if (!candidate_matches(&res->selectors, c))
                return 0;
        n->cards++;
        bool up = !dp_function_down_reason(c->driver, c->netdevs, c->n_netdevs, c->rdma, c->n_rdma,
                                           n->health);
        if (up)
                n->up++;
        int r = add_card_device(pool, c, up);
        return r < 0 ? r : add_card(pool, c);
}

static int build_pool(const struct rdma_shared_resource *res, const struct inventory *inv,
                      const struct dp_health_options *health, struct dp_pool *pool)
{
        *pool = (struct dp_pool){ .kind = DP_POOL_RDMA_SHARED, .is_rdma = true };
        int r = dp_pool_set_names(pool, res->prefix, res->name);
        if (r < 0)
                return r;
        /* Every network function with RDMA, as upstream: PFs, their VFs, and functions that
         * are not SR-IOV at all (SR-IOV off in firmware, a VF passed through to a VM). */
        struct card_count cards = { .health = health };
        for (size_t i = 0; r >= 0 && i < inv->n_pfs; i++) {
                const struct pf_info *pf = &inv->pfs[i];
                const struct candidate c = pf_candidate(pf);
                r = consider(pool, res, &c, &cards);
                for (size_t j = 0; r >= 0 && j < pf->n_vfs; j++) {
                        const struct vf_info *vf = &pf->vfs[j];
                        const struct candidate v = { .pci_address = vf->pci_address,
                                                     .numa_node = vf->numa_node,
                                                     .vendor = vf->vendor,
                                                     .device = vf->device,
                                                     .driver = vf->driver,
                                                     .netdevs = vf->netdevs,
                                                     .n_netdevs = vf->n_netdevs,
                                                     .rdma = vf->rdma,
                                                     .n_rdma = vf->n_rdma };
                        r = consider(pool, res, &v, &cards);
                }
        }
        for (size_t i = 0; r >= 0 && i < inv->n_rdma_nics; i++) {
                const struct candidate c = pf_candidate(&inv->rdma_nics[i]);
                r = consider(pool, res, &c, &cards);
        }
        if (r < 0)
                return r;
        if (cards.cards == 0) {
                log_ctx_msg(LOG_NOTICE, 0, &(const struct log_ctx){ .resource = pool->resource },
                            "no RDMA card matches the selectors; advertising no devices");
                return 0;
        }
        pool->devices = calloc(res->hca_max ?: 1, sizeof(*pool->devices));
        if (!pool->devices)
                return -ENOMEM;
        /* The IDs are shares of every matching card: usable while one of them is up. */
        if (cards.up == 0)
                log_ctx_msg(LOG_DEBUG, 0, &(const struct log_ctx){ .resource = pool->resource },
                            "every matching RDMA card is down; its IDs are Unhealthy");
        for (int i = 0; i < res->hca_max; i++) {
                pool->devices[i] = (struct dp_device){ .healthy = cards.up > 0,
                                                       .numa_node = -1,
                                                       .iommu_group = -1 };
                snprintf(pool->devices[i].id, sizeof(pool->devices[i].id), "%d", i);
        }
        pool->n_devices = (size_t)res->hca_max;
        return 0;
}

int dp_pools_from_rdma_shared(const struct rdma_shared_config *c, const struct inventory *inv,
                              struct dp_pool_set *ret)
{
        return dp_pools_from_rdma_shared_health(c, inv, NULL, ret);
}

int dp_pools_from_rdma_shared_health(const struct rdma_shared_config *c,
                                     const struct inventory *inv,
                                     const struct dp_health_options *health,
                                     struct dp_pool_set *ret)
{
        struct dp_pool_set set = { .pools = calloc(c->n_resources ?: 1, sizeof(struct dp_pool)) };
        if (!set.pools)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_resources; i++) {
                set.n_pools = i + 1;
                int r = build_pool(&c->resources[i], inv, health, &set.pools[i]);
                if (r < 0) {
                        dp_pool_set_done(&set);
                        return r;
                }
        }
        *ret = set;
        return 0;
}
