/* SPDX-License-Identifier: Apache-2.0 */
#include "dra-owner.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/fileio.h"
#include "util/macro.h"
#include "util/parse.h"

#define RECORD_MAX (1024 * 1024)

static bool lists_device(json_t *record, const char *device)
{
        size_t i;
        json_t *d;
        json_array_foreach(json_object_get(record, "devices"), i, d)
        {
                const char *name = json_string_value(json_object_get(d, "device"));
                if (name && strcmp(name, device) == 0)
                        return true;
        }
        return false;
}

static bool reserves(json_t *record, const struct cni_pod_ref *pod)
{
        const char *ns = json_string_value(json_object_get(record, "namespace"));
        if (!pod || !ns || strcmp(ns, pod->namespace_) != 0)
                return false;
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(record, "reservedFor"), i, p)
        {
                const char *name = json_string_value(json_object_get(p, "name"));
                if (name && strcmp(name, pod->name) == 0)
                        return true;
        }
        return false;
}

int cni_dra_for_each_record(const char *agent_dir, const char *device_id, cni_dra_record_fn fn,
                            void *userdata)
{
        char device[64], dir[PATH_MAX], path[PATH_MAX];
        size_t i = 0;
        /* the record names the VF by its DRA device name ("0000-3b-00-2") */
        for (; i < sizeof(device) - 1 && device_id[i]; i++)
                device[i] = device_id[i] == ':' || device_id[i] == '.' ? '-' : device_id[i];
        device[i] = '\0';
        if (!agent_dir || path_printf(dir, sizeof(dir), "%s/dra", agent_dir) < 0)
                return 0;
        DIR *d = opendir(dir);
        if (!d)
                return 0;
        int r = 0;
        for (struct dirent *de; r == 0 && (de = readdir(d));) {
                size_t n = strlen(de->d_name);
                if (de->d_name[0] == '.' || n <= 5 || strcmp(de->d_name + n - 5, ".json") != 0 ||
                    path_printf(path, sizeof(path), "%s/%s", dir, de->d_name) < 0)
                        continue;
                _cleanup_free_ char *text = NULL;
                size_t len;
                int k = read_full_file(path, RECORD_MAX, &text, &len);
                if (k == -ENOMEM)
                        r = k;
                if (k < 0)
                        continue;
                json_auto_t *record = json_loadb(text, len, 0, NULL);
                if (!record || !lists_device(record, device))
                        continue;
                char claim_file[NAME_MAX + 1];
                snprintf(claim_file, sizeof(claim_file), "%.*s", (int)(n - 5), de->d_name);
                r = fn(record, device, claim_file, userdata);
        }
        closedir(d);
        return r;
}

struct owner_verdict {
        const char *device_id;
        const struct cni_pod_ref *pod;
        bool listed;
        char refused[512]; /* the first claim that lists the VF but not for pod */
};

static int judge_record(json_t *record, const char *device, const char *claim_file, void *userdata)
{
        struct owner_verdict *v = userdata;
        v->listed = true;
        if (!json_object_get(record, "reservedFor")) {
                fprintf(stderr,
                        "sriov: deviceID %s is prepared for the DRA claim %s, whose record "
                        "predates the claim's pods in it: not checked against them\n",
                        v->device_id, claim_file);
                return 1;
        }
        if (reserves(record, v->pod))
                return 1;
        if (!v->refused[0])
                snprintf(v->refused, sizeof(v->refused), "%s/%s",
                         json_string_value(json_object_get(record, "namespace")) ?: "?",
                         json_string_value(json_object_get(record, "name")) ?: "?");
        return 0;
}

int cni_dra_owner_check(const char *agent_dir, const char *device_id, const struct cni_pod_ref *pod,
                        struct cni_error *e)
{
        struct owner_verdict v = { .device_id = device_id, .pod = pod };
        int r = cni_dra_for_each_record(agent_dir, device_id, judge_record, &v);
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "deviceID %s: cannot read the DRA claim records", device_id);
        if (r > 0 || !v.listed)
                return r;
        if (!pod)
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EACCES,
                                "deviceID %s refused: it is prepared for the DRA ResourceClaim "
                                "%s, and CNI_ARGS names no pod (K8S_POD_NAMESPACE, "
                                "K8S_POD_NAME) to check against the pods it is reserved for",
                                device_id, v.refused);
        return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EACCES,
                        "deviceID %s refused: it is prepared for the DRA ResourceClaim %s, which "
                        "is not reserved for pod %s/%s",
                        device_id, v.refused, pod->namespace_, pod->name);
}
