/* SPDX-License-Identifier: Apache-2.0 */
#include "model/desired-json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

static int set_opt_int(json_t *obj, const char *key, int v)
{
        return v ? json_object_set_new(obj, key, json_integer(v)) : 0;
}

static int set_opt_string(json_t *obj, const char *key, const char *v)
{
        return v && *v ? json_object_set_new(obj, key, json_string(v)) : 0;
}

/* Keys are added in the spec's order so dumps with JSON_PRESERVE_ORDER read like the CRD. */
static json_t *group_to_json(const struct vf_group *g)
{
        char range[32];
        json_auto_t *o = json_object();
        int r;

        if (!o)
                return NULL;
        snprintf(range, sizeof(range), "%d-%d", g->vf_start, g->vf_end);
        r = json_object_set_new(o, "resourceName", json_string(g->resource_name));
        r |= json_object_set_new(o, "deviceType",
                                 json_string(device_type_to_string(g->device_type)));
        r |= json_object_set_new(o, "vfRange", json_string(range));
        r |= json_object_set_new(o, "policyName", json_string(g->policy_name));
        r |= set_opt_int(o, "mtu", g->mtu);
        r |= json_object_set_new(o, "isRdma", json_boolean(g->is_rdma));
        r |= set_opt_string(o, "vdpaType", g->vdpa_type);
        return r ? NULL : TAKE_PTR(o);
}

int desired_interface_to_json(const struct desired_interface *iface, json_t **ret)
{
        json_auto_t *groups = json_array(), *o = json_object();
        int r;

        if (!groups || !o)
                return -ENOMEM;
        for (size_t i = 0; i < iface->n_groups; i++)
                if (json_array_append_new(groups, group_to_json(&iface->groups[i])) < 0)
                        return -ENOMEM;
        r = json_object_set_new(o, "pciAddress", json_string(iface->pci_address));
        r |= set_opt_string(o, "name", iface->name);
        r |= json_object_set_new(o, "numVfs", json_integer(iface->num_vfs));
        r |= set_opt_int(o, "mtu", iface->mtu);
        r |= set_opt_string(o, "linkType", link_type_to_string(iface->link_type));
        r |= set_opt_string(o, "eSwitchMode", eswitch_mode_to_string(iface->eswitch_mode));
        r |= json_object_set_new(o, "externallyManaged", json_boolean(iface->externally_managed));
        r |= json_object_set_new(o, "vfGroups", TAKE_PTR(groups));
        if (r)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

int desired_state_to_json(const struct desired_state *state, json_t **ret)
{
        json_auto_t *arr = json_array();

        if (!arr)
                return -ENOMEM;
        for (size_t i = 0; i < state->n_interfaces; i++) {
                json_t *o;
                if (desired_interface_to_json(&state->interfaces[i], &o) < 0 ||
                    json_array_append_new(arr, o) < 0)
                        return -ENOMEM;
        }
        /* "o" steals the reference, also when packing fails */
        *ret = json_pack("{s:o}", "interfaces", TAKE_PTR(arr));
        return *ret ? 0 : -ENOMEM;
}

static int fail(char **error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(char **error, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(error, fmt, ap);
        va_end(ap);
        if (r < 0) {
                *error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

/* Optional string into a fixed buffer; absent leaves it empty. */
static int get_str(const json_t *o, const char *key, const char *path, char *buf, size_t size,
                   bool required, char **error)
{
        const json_t *v = json_object_get(o, key);

        if (!v || json_is_null(v))
                return required ? fail(error, "%s.%s: missing", path, key) : 0;
        if (!json_is_string(v))
                return fail(error, "%s.%s: expected a string", path, key);
        if (json_string_length(v) >= size || strlen(json_string_value(v)) != json_string_length(v))
                return fail(error, "%s.%s: too long or contains NUL", path, key);
        memcpy(buf, json_string_value(v), json_string_length(v) + 1);
        return 0;
}

static int get_int(const json_t *o, const char *key, const char *path, int max, int *ret,
                   char **error)
{
        const json_t *v = json_object_get(o, key);

        *ret = 0;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_integer(v))
                return fail(error, "%s.%s: expected an integer", path, key);
        if (json_integer_value(v) < 0 || json_integer_value(v) > max)
                return fail(error, "%s.%s: %" JSON_INTEGER_FORMAT " outside 0..%d", path, key,
                            json_integer_value(v), max);
        *ret = (int)json_integer_value(v);
        return 0;
}

static int get_bool(const json_t *o, const char *key, const char *path, bool *ret, char **error)
{
        const json_t *v = json_object_get(o, key);

        *ret = false;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_boolean(v))
                return fail(error, "%s.%s: expected a boolean", path, key);
        *ret = json_is_true(v);
        return 0;
}

/* "START-END": parse_int() rather than sscanf("%d"), which is undefined on overflow. */
static int parse_range(const char *s, int *start, int *end)
{
        const char *dash = strchr(s, '-');
        char first[16];

        if (strspn(s, "0123456789-") != strlen(s) || !dash || dash == s ||
            (size_t)(dash - s) >= sizeof(first))
                return -EINVAL;
        memcpy(first, s, (size_t)(dash - s));
        first[dash - s] = '\0';
        if (parse_int(first, start) < 0 || parse_int(dash + 1, end) < 0)
                return -EINVAL;
        return *start >= 0 && *end >= *start ? 0 : -EINVAL;
}

static int group_from_json(const json_t *o, const char *path, struct vf_group *g, char **error)
{
        char type[16] = "", range[32] = "";
        int r;

        *g = (struct vf_group){ 0 };
        if (!json_is_object(o))
                return fail(error, "%s: expected an object", path);
        r = get_str(o, "resourceName", path, g->resource_name, sizeof(g->resource_name), true,
                    error);
        if (r < 0)
                return r;
        if (!resource_name_is_valid(g->resource_name))
                return fail(error, "%s.resourceName: \"%s\" is not a valid resource name", path,
                            g->resource_name);
        if ((r = get_str(o, "deviceType", path, type, sizeof(type), false, error)) < 0 ||
            (r = get_str(o, "vfRange", path, range, sizeof(range), true, error)) < 0 ||
            (r = get_str(o, "policyName", path, g->policy_name, sizeof(g->policy_name), false,
                         error)) < 0 ||
            (r = get_str(o, "vdpaType", path, g->vdpa_type, sizeof(g->vdpa_type), false, error)) <
                0 ||
            (r = get_int(o, "mtu", path, 65535, &g->mtu, error)) < 0 ||
            (r = get_bool(o, "isRdma", path, &g->is_rdma, error)) < 0)
                return r;
        if (*type && device_type_from_string(type, &g->device_type) < 0)
                return fail(error, "%s.deviceType: \"%s\" is not netdevice or vfio-pci", path,
                            type);
        if (parse_range(range, &g->vf_start, &g->vf_end) < 0)
                return fail(error, "%s.vfRange: \"%s\" is not \"first-last\"", path, range);
        return 0;
}

static int parse_link_type(const char *s, enum link_type *ret)
{
        if (!*s)
                *ret = LINK_TYPE_UNKNOWN;
        else if (strcasecmp(s, "eth") == 0)
                *ret = LINK_TYPE_ETH;
        else if (strcasecmp(s, "ib") == 0)
                *ret = LINK_TYPE_IB;
        else
                return -EINVAL;
        return 0;
}

static int parse_eswitch(const char *s, enum eswitch_mode *ret)
{
        if (!*s)
                *ret = ESWITCH_MODE_UNSET;
        else if (strcmp(s, "legacy") == 0)
                *ret = ESWITCH_MODE_LEGACY;
        else if (strcmp(s, "switchdev") == 0)
                *ret = ESWITCH_MODE_SWITCHDEV;
        else
                return -EINVAL;
        return 0;
}

static int interface_fields(const json_t *o, const char *path, struct desired_interface *d,
                            char **error)
{
        char link[8] = "", esw[16] = "";
        int r;

        if ((r = get_str(o, "pciAddress", path, d->pci_address, sizeof(d->pci_address), true,
                         error)) < 0)
                return r;
        if (!pci_address_is_valid(d->pci_address))
                return fail(error, "%s.pciAddress: \"%s\" is not a PCI address", path,
                            d->pci_address);
        if ((r = get_str(o, "name", path, d->name, sizeof(d->name), false, error)) < 0)
                return r;
        if (*d->name && !ifname_is_valid(d->name))
                return fail(error, "%s.name: \"%s\" is not an interface name", path, d->name);
        if ((r = get_int(o, "numVfs", path, 65535, &d->num_vfs, error)) < 0 ||
            (r = get_int(o, "mtu", path, 65535, &d->mtu, error)) < 0 ||
            (r = get_bool(o, "externallyManaged", path, &d->externally_managed, error)) < 0 ||
            (r = get_str(o, "linkType", path, link, sizeof(link), false, error)) < 0 ||
            (r = get_str(o, "eSwitchMode", path, esw, sizeof(esw), false, error)) < 0)
                return r;
        if (parse_link_type(link, &d->link_type) < 0)
                return fail(error, "%s.linkType: \"%s\" is not eth or ib", path, link);
        if (parse_eswitch(esw, &d->eswitch_mode) < 0)
                return fail(error, "%s.eSwitchMode: \"%s\" is not legacy or switchdev", path, esw);
        return 0;
}

static int interface_from_json_at(const json_t *o, const char *path, struct desired_interface *ret,
                                  char **error)
{
        struct desired_interface d = { 0 };
        const json_t *groups, *g;
        size_t i;
        int r;

        *error = NULL;
        if (!json_is_object(o))
                return fail(error, "%s: expected an object", path);
        r = interface_fields(o, path, &d, error);
        if (r < 0)
                return r;
        groups = json_object_get(o, "vfGroups");
        if (groups && !json_is_null(groups)) {
                if (!json_is_array(groups))
                        return fail(error, "%s.vfGroups: expected a list", path);
                d.groups = calloc(json_array_size(groups) + 1, sizeof(*d.groups));
                if (!d.groups)
                        return -ENOMEM;
                json_array_foreach(groups, i, g)
                {
                        char sub[128];
                        snprintf(sub, sizeof(sub), "%s.vfGroups[%zu]", path, i);
                        r = group_from_json(g, sub, &d.groups[d.n_groups], error);
                        if (r < 0) {
                                desired_interface_done(&d);
                                return r;
                        }
                        d.n_groups++;
                }
        }
        *ret = d;
        return 0;
}

int desired_interface_from_json(const json_t *obj, struct desired_interface *ret, char **error)
{
        return interface_from_json_at(obj, "interface", ret, error);
}

int desired_state_from_json(const json_t *obj, struct desired_state *ret, char **error)
{
        struct desired_state s = { 0 };
        const json_t *arr, *o;
        size_t i;

        *error = NULL;
        if (!json_is_object(obj))
                return fail(error, "spec: expected an object");
        arr = json_object_get(obj, "interfaces");
        if (!arr || json_is_null(arr)) {
                *ret = s;
                return 0;
        }
        if (!json_is_array(arr))
                return fail(error, "spec.interfaces: expected a list");
        s.interfaces = calloc(json_array_size(arr) + 1, sizeof(*s.interfaces));
        if (!s.interfaces)
                return -ENOMEM;
        json_array_foreach(arr, i, o)
        {
                char path[64];
                int r;
                snprintf(path, sizeof(path), "spec.interfaces[%zu]", i);
                r = interface_from_json_at(o, path, &s.interfaces[s.n_interfaces], error);
                if (r < 0) {
                        desired_state_done(&s);
                        return r;
                }
                s.n_interfaces++;
        }
        *ret = s;
        return 0;
}
