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

int cni_dra_owner_check(const char *agent_dir, const char *device_id, const struct cni_pod_ref *pod,
                        struct cni_error *e)
{
        char device[64], dir[PATH_MAX], path[PATH_MAX], refused[512] = "";
        size_t i = 0;
        /* the record names the VF by its DRA device name ("0000-3b-00-2") */
        for (; i < sizeof(device) - 1 && device_id[i]; i++)
                device[i] = device_id[i] == ':' || device_id[i] == '.' ? '-' : device_id[i];
        device[i] = '\0';
        if (path_printf(dir, sizeof(dir), "%s/dra", agent_dir) < 0)
                return 0;
        DIR *d = opendir(dir);
        if (!d)
                return 0;
        int verdict = 0;
        for (struct dirent *de; verdict <= 0 && (de = readdir(d));) {
                size_t n = strlen(de->d_name);
                if (de->d_name[0] == '.' || n <= 5 || strcmp(de->d_name + n - 5, ".json") != 0 ||
                    path_printf(path, sizeof(path), "%s/%s", dir, de->d_name) < 0)
                        continue;
                _cleanup_free_ char *text = NULL;
                size_t len;
                if (read_full_file(path, RECORD_MAX, &text, &len) < 0)
                        continue;
                json_auto_t *record = json_loadb(text, len, 0, NULL);
                if (!record || !lists_device(record, device))
                        continue;
                if (!json_object_get(record, "reservedFor")) {
                        fprintf(stderr,
                                "sriov: deviceID %s is prepared for the DRA claim %.*s, whose "
                                "record predates the claim's pods in it: not checked against "
                                "them\n",
                                device_id, (int)(n - 5), de->d_name);
                        verdict = 1;
                } else if (reserves(record, pod))
                        verdict = 1;
                else if (!*refused)
                        snprintf(refused, sizeof(refused), "%s/%s",
                                 json_string_value(json_object_get(record, "namespace")) ?: "?",
                                 json_string_value(json_object_get(record, "name")) ?: "?");
                if (verdict <= 0)
                        verdict = -1;
        }
        closedir(d);
        if (verdict >= 0)
                return verdict;
        if (!pod)
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EACCES,
                                "deviceID %s refused: it is prepared for the DRA ResourceClaim "
                                "%s, and CNI_ARGS names no pod (K8S_POD_NAMESPACE, "
                                "K8S_POD_NAME) to check against the pods it is reserved for",
                                device_id, refused);
        return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EACCES,
                        "deviceID %s refused: it is prepared for the DRA ResourceClaim %s, which "
                        "is not reserved for pod %s/%s",
                        device_id, refused, pod->namespace_, pod->name);
}
