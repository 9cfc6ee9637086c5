/* SPDX-License-Identifier: Apache-2.0 */
#include "cni/pool.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "util/fileio.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

#define RECORD_MAX (1024 * 1024)

/* "first-last" or "n" */
static bool range_contains(const char *range, int index)
{
        char first[16], last[16];
        const char *dash = strchr(range, '-');
        size_t n = dash ? (size_t)(dash - range) : strlen(range);
        if (n == 0 || n >= sizeof(first) || (dash && strlen(dash + 1) >= sizeof(last)))
                return false;
        memcpy(first, range, n);
        first[n] = '\0';
        snprintf(last, sizeof(last), "%s", dash ? dash + 1 : first);
        int a, b;
        return parse_int(first, &a) == 0 && parse_int(last, &b) == 0 && a <= index && index <= b;
}

int cni_pool_lookup_text(const char *path, const char *text, size_t len, const char *pf_pci,
                         int vf_index, char *resource, size_t size, struct cni_error *e)
{
        json_error_t jerr;
        json_auto_t *o = json_loadb(text, len, 0, &jerr);
        json_t *iface = json_object_get(o, "interface");
        json_t *groups = json_object_get(iface, "vfGroups");
        if (!json_is_object(o) || (groups && !json_is_array(groups)))
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                "the sriov-agent record %s of PF %s cannot be read (%s): "
                                "cannot tell whether VF %d is in one of its pools",
                                path, pf_pci, json_is_object(o) ? "vfGroups" : jerr.text, vf_index);
        size_t i;
        json_t *g;
        json_array_foreach(groups, i, g)
        {
                json_t *range = json_object_get(g, "vfRange"),
                       *name = json_object_get(g, "resourceName");
                if (json_is_string(range) && json_is_string(name) &&
                    range_contains(json_string_value(range), vf_index)) {
                        snprintf(resource, size, "%s", json_string_value(name));
                        return 0;
                }
        }
        return cni_fail(e, CNI_ERR_INVALID_CONFIG, -ESRCH,
                        "VF %d of PF %s is in none of the pools the sriov-agent on this node "
                        "manages (%s)",
                        vf_index, pf_pci, path);
}

int cni_pool_lookup(const char *agent_dir, const char *pf_pci, int vf_index, char *resource,
                    size_t size, struct cni_error *e)
{
        char path[PATH_MAX];
        if (!pci_address_is_valid(pf_pci))
                return cni_fail(e, CNI_ERR_GENERIC, -EINVAL, "PF address \"%s\" is not valid",
                                pf_pci);
        int r = path_printf(path, sizeof(path), "%s/%s.json", agent_dir, pf_pci);
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r, "agent state directory too long");
        _cleanup_free_ char *text = NULL;
        size_t len;
        r = read_full_file(path, RECORD_MAX, &text, &len);
        if (r == -ENOENT)
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -ENOENT,
                                "VF %d of PF %s is in none of the pools the sriov-agent on this "
                                "node manages (it manages no VF of that PF: no %s)",
                                vf_index, pf_pci, path);
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                "the sriov-agent record %s cannot be read: %s", path, strerror(-r));
        return cni_pool_lookup_text(path, text, len, pf_pci, vf_index, resource, size, e);
}
