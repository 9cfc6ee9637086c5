/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/ib-guids.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "util/array.h"

#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

void ib_guid_pool_done(struct ib_guid_pool *pool)
{
        for (size_t i = 0; i < pool->n_entries; i++)
                free(pool->entries[i].guids);
        free(pool->entries);
        *pool = (struct ib_guid_pool){ 0 };
}

int ib_guid_parse(const char *s, uint64_t *ret)
{
        if (!s)
                return -EINVAL;
        size_t len = strlen(s);
        /* 8 octets with ':' or '-' (Go's net.ParseMAC, as upstream), or 4 groups of 4 digits
         * with ':' (sysfs node_guid) */
        const bool octets = len == 23 && (s[2] == ':' || s[2] == '-');
        const bool groups = len == 19 && s[4] == ':';
        if (!octets && !groups)
                return -EINVAL;
        const size_t step = octets ? 3 : 5, digits = octets ? 2 : 4;
        uint64_t v = 0;
        for (size_t i = 0; i < len; i++) {
                if ((i + 1) % step == 0) {
                        if (s[i] != (octets ? s[2] : ':'))
                                return -EINVAL;
                        continue;
                }
                int d = hex_digit_value(s[i]);
                if (d < 0 || (i % step) >= digits)
                        return -EINVAL;
                v = v << 4 | (uint64_t)d;
        }
        *ret = v;
        return 0;
}

void ib_guid_format(uint64_t guid, char buf[IB_GUID_TEXT_MAX])
{
        snprintf(buf, IB_GUID_TEXT_MAX, "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x",
                 (unsigned)(guid >> 56) & 0xff, (unsigned)(guid >> 48) & 0xff,
                 (unsigned)(guid >> 40) & 0xff, (unsigned)(guid >> 32) & 0xff,
                 (unsigned)(guid >> 24) & 0xff, (unsigned)(guid >> 16) & 0xff,
                 (unsigned)(guid >> 8) & 0xff, (unsigned)guid & 0xff);
}

bool ib_guid_is_valid(uint64_t guid)
{
        return guid != 0 && guid != UINT64_MAX;
}

__attribute__((format(printf, 4, 5))) static int fail(char *error, size_t size, size_t index,
                                                      const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char what[256];
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        snprintf(error, size, "IB GUID pool entry %zu: %s", index, what);
        return -EINVAL;
}

/* Zero and all-ones are the values a VF nobody gave a GUID shows, and it cannot join the fabric
 * with them: refused in the file rather than handed out (the whole file, as any other error). */
#define INVALID_WHY "not a valid GUID (all zeros or all ones)"

static int parse_entry(json_t *item, size_t index, struct ib_guid_pool_entry *e, char *error,
                       size_t error_size)
{
        if (!json_is_object(item))
                return fail(error, error_size, index, "not an object");
        const char *key;
        json_t *value;
        json_object_foreach(item, key, value)
        {
                if (strcmp(key, "pciAddress") != 0 && strcmp(key, "pfGuid") != 0 &&
                    strcmp(key, "guids") != 0 && strcmp(key, "guidsRange") != 0)
                        return fail(error, error_size, index, "unknown field \"%s\"", key);
        }
        json_t *pci = json_object_get(item, "pciAddress"), *pf = json_object_get(item, "pfGuid");
        json_t *guids = json_object_get(item, "guids"),
               *range = json_object_get(item, "guidsRange");
        const char *pci_s = json_string_value(pci), *pf_s = json_string_value(pf);
        if ((pci && !pci_s) || (pf && !pf_s))
                return fail(error, error_size, index, "pciAddress and pfGuid are strings");
        if (pci_s && *pci_s && pf_s && *pf_s)
                return fail(error, error_size, index,
                            "either pciAddress or pfGuid names the PF, both given");
        if (!(pci_s && *pci_s) && !(pf_s && *pf_s))
                return fail(error, error_size, index,
                            "either pciAddress or pfGuid names the PF, none given");
        if (pci_s && *pci_s) {
                if (!pci_address_is_valid(pci_s))
                        return fail(error, error_size, index,
                                    "pciAddress \"%s\" is not a PCI "
                                    "address",
                                    pci_s);
                snprintf(e->pci_address, sizeof(e->pci_address), "%s", pci_s);
        } else if (ib_guid_parse(pf_s, &e->pf_guid) < 0) {
                return fail(error, error_size, index, "pfGuid \"%s\" is not a GUID", pf_s);
        } else if (!ib_guid_is_valid(e->pf_guid)) {
                /* no PF has it: the entry would name whichever PF reports no GUID */
                return fail(error, error_size, index, "pfGuid \"%s\" is " INVALID_WHY, pf_s);
        }

        size_t n = json_array_size(guids);
        const char *start = json_string_value(json_object_get(range, "start"));
        const char *end = json_string_value(json_object_get(range, "end"));
        if (guids && !json_is_array(guids))
                return fail(error, error_size, index, "guids is a list of GUIDs");
        if (n == 0 && (!range || ((!start || !*start) && (!end || !*end))))
                return fail(error, error_size, index,
                            "either guids or guidsRange must be given, got none");
        if (n > 0 && range)
                return fail(error, error_size, index,
                            "either guids or guidsRange must be given, got both");
        if (n > 0) {
                e->guids = calloc(n, sizeof(*e->guids));
                if (!e->guids)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++) {
                        const char *g = json_string_value(json_array_get(guids, i));
                        if (ib_guid_parse(g, &e->guids[i]) < 0)
                                return fail(error, error_size, index, "guids: \"%s\" is not a GUID",
                                            g ? g : "(not text)");
                        if (!ib_guid_is_valid(e->guids[i]))
                                return fail(error, error_size, index,
                                            "guids[%zu]: \"%s\" is " INVALID_WHY, i, g);
                        e->n_guids++;
                }
                return 0;
        }
        if (!start || !*start || !end || !*end)
                return fail(error, error_size, index,
                            "guidsRange needs both start and end, got one");
        if (ib_guid_parse(start, &e->range_start) < 0)
                return fail(error, error_size, index, "guidsRange.start \"%s\" is not a GUID",
                            start);
        if (ib_guid_parse(end, &e->range_end) < 0)
                return fail(error, error_size, index, "guidsRange.end \"%s\" is not a GUID", end);
        /* the GUIDs between are then valid too */
        if (!ib_guid_is_valid(e->range_start))
                return fail(error, error_size, index, "guidsRange.start \"%s\" is " INVALID_WHY,
                            start);
        if (!ib_guid_is_valid(e->range_end))
                return fail(error, error_size, index, "guidsRange.end \"%s\" is " INVALID_WHY, end);
        if (e->range_end < e->range_start)
                return fail(error, error_size, index, "guidsRange ends before it starts");
        e->has_range = true;
        return 0;
}

int ib_guid_pool_parse(const char *text, size_t size, struct ib_guid_pool *ret, char *error,
                       size_t error_size)
{
        json_error_t jerr;
        *ret = (struct ib_guid_pool){ 0 };
        json_auto_t *root = json_loadb(text, size, JSON_REJECT_DUPLICATES, &jerr);
        if (!root) {
                snprintf(error, error_size, "IB GUID pool: line %d: %s", jerr.line, jerr.text);
                return -EINVAL;
        }
        if (!json_is_array(root)) {
                snprintf(error, error_size, "IB GUID pool: a JSON list of PFs is expected");
                return -EINVAL;
        }
        struct ib_guid_pool pool = { 0 };
        size_t n = json_array_size(root);
        pool.entries = calloc(n ? n : 1, sizeof(*pool.entries));
        if (!pool.entries)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int r =
                    parse_entry(json_array_get(root, i), i, &pool.entries[i], error, error_size);
                pool.n_entries = i + 1; /* the entry's guids are freed with the pool */
                if (r < 0) {
                        ib_guid_pool_done(&pool);
                        return r;
                }
        }
        *ret = pool;
        return 0;
}

/* The PF's GUID as a pool entry's pfGuid names it: its RDMA device's node GUID, or the port
 * GUID in the last 8 octets of its InfiniBand hardware address. */
static bool pf_has_guid(const struct pf_info *pf, uint64_t guid)
{
        uint64_t g;
        for (size_t i = 0; i < pf->n_rdma; i++)
                if (ib_guid_parse(pf->rdma[i].node_guid, &g) == 0 && g == guid)
                        return true;
        for (size_t i = 0; i < pf->n_netdevs; i++) {
                const char *mac = pf->netdevs[i].mac;
                size_t len = strlen(mac);
                if (len >= 23 && ib_guid_parse(mac + len - 23, &g) == 0 && g == guid)
                        return true;
        }
        return false;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t size)
{
        const unsigned char *p = data;
        for (size_t i = 0; i < size; i++) {
                h ^= p[i];
                h *= 0x100000001b3ULL;
        }
        return h;
}

static uint64_t derive(const struct pf_info *pf, int vf_index)
{
        uint64_t h = 0xcbf29ce484222325ULL, g;
        if (pf->n_rdma > 0 && ib_guid_parse(pf->rdma[0].node_guid, &g) == 0 && ib_guid_is_valid(g))
                h = fnv1a(h, &g, sizeof(g));
        else {
                h = fnv1a(h, pf->pci_address, strlen(pf->pci_address));
                if (pf->n_netdevs > 0)
                        h = fnv1a(h, pf->netdevs[0].mac, strlen(pf->netdevs[0].mac));
        }
        const uint32_t vf = (uint32_t)vf_index;
        h = fnv1a(h, &vf, sizeof(vf));
        /* first octet 02: locally administered; the rest can then be neither 0 nor all-ones */
        return (h & 0x00ffffffffffffffULL) | 0x0200000000000000ULL;
}

int ib_guid_for_vf(const struct ib_guid_pool *pool, const struct pf_info *pf, int vf_index,
                   uint64_t *ret, char *error, size_t error_size)
{
        for (size_t i = 0; pool && i < pool->n_entries; i++) {
                const struct ib_guid_pool_entry *e = &pool->entries[i];
                if (e->pci_address[0] ? strcmp(e->pci_address, pf->pci_address) != 0
                                      : !pf_has_guid(pf, e->pf_guid))
                        continue;
                if (e->n_guids > 0 && vf_index >= 0 && (size_t)vf_index < e->n_guids) {
                        *ret = e->guids[vf_index];
                        return 0;
                }
                if (e->has_range && vf_index >= 0 &&
                    (uint64_t)vf_index <= e->range_end - e->range_start) {
                        *ret = e->range_start + (uint64_t)vf_index;
                        return 0;
                }
                snprintf(error, error_size,
                         "the IB GUID pool has no GUID for VF %d of PF %s (entry %zu)", vf_index,
                         pf->pci_address, i);
                return -ENOENT;
        }
        *ret = derive(pf, vf_index);
        return 0;
}

void ib_guid_attachments_done(struct ib_guid_attachments *set)
{
        free(set->items);
        *set = (struct ib_guid_attachments){ 0 };
}

int ib_guid_attachments_add(struct ib_guid_attachments *set, const char *vf_pci, uint64_t guid,
                            const char *name)
{
        if (!vf_pci || !*vf_pci || strlen(vf_pci) >= PCI_ADDR_MAX || !ib_guid_is_valid(guid))
                return -EINVAL;
        struct ib_guid_attachment *a = NULL;
        for (size_t i = 0; !a && i < set->n_items; i++)
                if (strcasecmp(set->items[i].vf_pci, vf_pci) == 0)
                        a = &set->items[i];
        if (!a) {
                if (GROW_ARRAY(set->items, set->cap_items, set->n_items + 1) < 0)
                        return -ENOMEM;
                a = &set->items[set->n_items++];
        }
        *a = (struct ib_guid_attachment){ .guid = guid };
        snprintf(a->vf_pci, sizeof(a->vf_pci), "%s", vf_pci);
        snprintf(a->name, sizeof(a->name), "%s", name ? name : "");
        return 0;
}

const struct ib_guid_attachment *ib_guid_attachment_of_vf(const struct ib_guid_attachments *set,
                                                          const char *vf_pci)
{
        for (size_t i = 0; set && vf_pci && i < set->n_items; i++)
                if (strcasecmp(set->items[i].vf_pci, vf_pci) == 0)
                        return &set->items[i];
        return NULL;
}

const struct ib_guid_attachment *ib_guid_attachment_holding(const struct ib_guid_attachments *set,
                                                            uint64_t guid, const char *vf_pci)
{
        for (size_t i = 0; set && i < set->n_items; i++)
                if (set->items[i].guid == guid &&
                    (!vf_pci || strcasecmp(set->items[i].vf_pci, vf_pci) != 0))
                        return &set->items[i];
        return NULL;
}
