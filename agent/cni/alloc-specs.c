/* SPDX-License-Identifier: Apache-2.0 */
#include "alloc-specs.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "deviceplugin.pb-c.h"
#include "dra-owner.h"
#include "util/base64.h"
#include "util/fileio.h"
#include "util/macro.h"

/* The kubelet's checkpoint grows with the node's pods: a few KiB each */
#define CHECKPOINT_MAX (16 * 1024 * 1024)

/* K8S_POD_UID from CNI_ARGS ("K=V;K=V"), into buf; false when absent or too long. */
static bool pod_uid(const char *args, char *buf, size_t size)
{
        static const char key[] = "K8S_POD_UID=";
        for (const char *p = args; p && *p;) {
                const char *end = strchr(p, ';');
                size_t n = end ? (size_t)(end - p) : strlen(p);
                if (n > sizeof(key) - 1 && strncmp(p, key, sizeof(key) - 1) == 0 &&
                    n - (sizeof(key) - 1) < size) {
                        memcpy(buf, p + sizeof(key) - 1, n - (sizeof(key) - 1));
                        buf[n - (sizeof(key) - 1)] = '\0';
                        return buf[0] != '\0';
                }
                p = end ? end + 1 : p + n;
        }
        return false;
}

/* Whether the entry's DeviceIDs ({"<numa>": [ids]}, or [ids] before NUMA) holds pci; *count:
 * how many devices it holds. */
static bool entry_holds(json_t *ids, const char *pci, size_t *count)
{
        bool found = false;
        *count = 0;
        json_t *lists[64];
        size_t n = 0;
        if (json_is_array(ids)) {
                lists[n++] = ids;
        } else if (json_is_object(ids)) {
                const char *k;
                json_t *v;
                json_object_foreach(ids, k, v) if (n < ELEMENTSOF(lists) && json_is_array(v))
                    lists[n++] = v;
        }
        for (size_t i = 0; i < n; i++) {
                size_t j;
                json_t *id;
                json_array_foreach(lists[i], j, id)
                {
                        (*count)++;
                        if (json_is_string(id) && strcmp(json_string_value(id), pci) == 0)
                                found = true;
                }
        }
        return found;
}

static void set_path(char *dst, size_t size, const char *path)
{
        if (path && strncmp(path, "/dev/infiniband/", 16) == 0 && strlen(path) < size)
                snprintf(dst, size, "%s", path);
}

/* "/dev/infiniband/<kind><digits>" */
static bool is_kind(const char *path, const char *kind)
{
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        size_t n = strlen(kind);
        return strncmp(base, kind, n) == 0 && base[n] >= '0' && base[n] <= '9' &&
               strspn(base + n, "0123456789") == strlen(base + n);
}

/* host, a device node handed to the pod, into ret's slot of its kind (the first of each). */
static void take_char_device(struct host_rdma_char_devices *ret, const char *host)
{
        if (is_kind(host, "uverbs") && !ret->uverbs[0])
                set_path(ret->uverbs, sizeof(ret->uverbs), host);
        else if (is_kind(host, "umad") && !ret->umad[0])
                set_path(ret->umad, sizeof(ret->umad), host);
        else if (is_kind(host, "issm") && !ret->issm[0])
                set_path(ret->issm, sizeof(ret->issm), host);
}

/* The VF's RDMA paths from the answer: its PCIDEVICE_*_INFO entry, else (alone is it) the
 * device specs. true when at least one was found. */
static bool from_answer(const V1beta1__ContainerAllocateResponse *resp, const char *pci, bool alone,
                        struct host_rdma_char_devices *ret)
{
        for (size_t i = 0; i < resp->n_envs; i++) {
                const char *key = resp->envs[i]->key, *value = resp->envs[i]->value;
                size_t n = key ? strlen(key) : 0;
                if (n < 5 || strcmp(key + n - 5, "_INFO") != 0 || !value)
                        continue;
                json_auto_t *info = json_loads(value, 0, NULL);
                json_t *rdma = json_object_get(json_object_get(info, pci), "rdma");
                if (!json_is_object(rdma))
                        continue;
                set_path(ret->uverbs, sizeof(ret->uverbs),
                         json_string_value(json_object_get(rdma, "uverbs")));
                set_path(ret->umad, sizeof(ret->umad),
                         json_string_value(json_object_get(rdma, "umad")));
                set_path(ret->issm, sizeof(ret->issm),
                         json_string_value(json_object_get(rdma, "issm")));
                if (ret->uverbs[0] || ret->umad[0] || ret->issm[0])
                        return true;
        }
        if (!alone)
                return false;
        for (size_t i = 0; i < resp->n_devices; i++) {
                const char *host = resp->devices[i]->host_path;
                if (!host)
                        continue;
                take_char_device(ret, host);
        }
        return ret->uverbs[0] || ret->umad[0] || ret->issm[0];
}

int cni_alloc_rdma_devices(const char *checkpoint, const char *args, const char *pci,
                           struct host_rdma_char_devices *ret, char *source, size_t source_size)
{
        *ret = (struct host_rdma_char_devices){ 0 };
        source[0] = '\0';
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_full_file(checkpoint, CHECKPOINT_MAX, &text, &len);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        json_auto_t *root = json_loadb(text, len, 0, NULL);
        json_t *entries = json_object_get(json_object_get(root, "Data"), "PodDeviceEntries");
        if (!json_is_array(entries))
                return 0;
        char uid[128];
        const bool by_uid = pod_uid(args, uid, sizeof(uid));
        json_t *match = NULL;
        size_t n_match = 0, count = 0, i;
        json_t *e;
        json_array_foreach(entries, i, e)
        {
                size_t c;
                const char *entry_uid = json_string_value(json_object_get(e, "PodUID"));
                if (!entry_uid || !entry_holds(json_object_get(e, "DeviceIDs"), pci, &c) ||
                    (by_uid && strcmp(entry_uid, uid) != 0))
                        continue;
                /* another container of the same pod is the same answer's pod: first one */
                if (match &&
                    strcmp(json_string_value(json_object_get(match, "PodUID")), entry_uid) == 0)
                        continue;
                if (!match) {
                        match = e;
                        count = c;
                }
                n_match++;
        }
        /* several pods' entries and no UID to choose: a stale one cannot be told apart */
        if (!match || n_match != 1)
                return 0;
        const char *b64 = json_string_value(json_object_get(match, "AllocResp"));
        size_t n = 0;
        char *bytes = NULL;
        if (!b64 || base64_decode(b64, &bytes, &n) < 0)
                return 0;
        V1beta1__ContainerAllocateResponse *resp =
            v1beta1__container_allocate_response__unpack(NULL, n, (const uint8_t *)bytes);
        free(bytes);
        if (!resp)
                return 0;
        bool found = from_answer(resp, pci, count == 1, ret);
        v1beta1__container_allocate_response__free_unpacked(resp, NULL);
        if (!found) {
                *ret = (struct host_rdma_char_devices){ 0 };
                return 0;
        }
        snprintf(source, source_size, "the kubelet's allocation for pod %s (container \"%s\", %s)",
                 json_string_value(json_object_get(match, "PodUID")),
                 json_string_value(json_object_get(match, "ContainerName")) ?: "?",
                 json_string_value(json_object_get(match, "ResourceName")) ?: "?");
        return 1;
}

/* The CDI device name ("<claim uid>-<device>") the record gives its device `device`, from
 * its devices[].cdi ("<driver>/vf=<name>"); NULL when the record does not list it. */
static const char *record_cdi_name(json_t *record, const char *device)
{
        size_t i;
        json_t *d;
        json_array_foreach(json_object_get(record, "devices"), i, d)
        {
                const char *name = json_string_value(json_object_get(d, "device"));
                const char *cdi = json_string_value(json_object_get(d, "cdi"));
                if (!name || strcmp(name, device) != 0)
                        continue;
                const char *eq = cdi ? strchr(cdi, '=') : NULL;
                return eq && eq[1] ? eq + 1 : NULL;
        }
        return NULL;
}

/* The RDMA char devices among the deviceNodes of the record's CDI device `name`: the host
 * paths, whose device numbers the runtime gives the container. */
static bool from_cdi(json_t *record, const char *name, struct host_rdma_char_devices *ret)
{
        size_t i;
        json_t *d;
        json_array_foreach(json_object_get(json_object_get(record, "cdi"), "devices"), i, d)
        {
                const char *n = json_string_value(json_object_get(d, "name"));
                if (!n || strcmp(n, name) != 0)
                        continue;
                size_t j;
                json_t *node;
                json_array_foreach(
                    json_object_get(json_object_get(d, "containerEdits"), "deviceNodes"), j, node)
                {
                        const char *host = json_string_value(json_object_get(node, "hostPath"))
                                               ?: json_string_value(json_object_get(node, "path"));
                        if (!host)
                                continue;
                        take_char_device(ret, host);
                }
                break;
        }
        return ret->uverbs[0] || ret->umad[0] || ret->issm[0];
}

struct handed_walk {
        struct host_rdma_char_devices *ret;
        char *source;
        size_t source_size;
        int n_listing;
};

static int take_handed(json_t *record, const char *device, const char *claim_file, void *userdata)
{
        struct handed_walk *w = userdata;
        /* two claims' records listing one VF: one is stale, and which cannot be told */
        if (++w->n_listing > 1)
                return 1;
        const char *name = record_cdi_name(record, device);
        if (name && from_cdi(record, name, w->ret))
                snprintf(w->source, w->source_size, "the DRA ResourceClaim %s/%s (CDI device %s)",
                         json_string_value(json_object_get(record, "namespace")) ?: "?",
                         json_string_value(json_object_get(record, "name")) ?: "?", name);
        return 0;
}

int cni_dra_rdma_devices(const char *agent_dir, const char *pci, struct host_rdma_char_devices *ret,
                         char *source, size_t source_size)
{
        *ret = (struct host_rdma_char_devices){ 0 };
        source[0] = '\0';
        struct handed_walk w = { .ret = ret, .source = source, .source_size = source_size };
        int r = cni_dra_for_each_record(agent_dir, pci, take_handed, &w);
        if (r < 0 || w.n_listing != 1 || !source[0]) {
                *ret = (struct host_rdma_char_devices){ 0 };
                source[0] = '\0';
                return r < 0 ? r : 0;
        }
        return 1;
}
