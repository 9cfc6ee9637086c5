/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/applied.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/desired-json.h"
#include "util/array.h"
#include "util/names.h"

void applied_pf_done(struct applied_pf *pf)
{
        desired_interface_done(&pf->applied);
        *pf = (struct applied_pf){ 0 };
}

void applied_state_done(struct applied_state *state)
{
        for (size_t i = 0; i < state->n_pfs; i++)
                applied_pf_done(&state->pfs[i]);
        free(state->pfs);
        free(state->bad);
        *state = (struct applied_state){ 0 };
}

const struct applied_pf *applied_state_find(const struct applied_state *state, const char *pci)
{
        for (size_t i = 0; state && i < state->n_pfs; i++)
                if (strcasecmp(state->pfs[i].pci_address, pci) == 0)
                        return &state->pfs[i];
        return NULL;
}

struct applied_bad_record *applied_state_find_bad(const struct applied_state *state,
                                                  const char *pci)
{
        for (size_t i = 0; state && i < state->n_bad; i++)
                if (strcasecmp(state->bad[i].pci_address, pci) == 0)
                        return &state->bad[i];
        return NULL;
}

int applied_state_take(struct applied_state *state, struct applied_pf *pf)
{
        if (GROW_ARRAY(state->pfs, state->cap_pfs, state->n_pfs + 1) < 0)
                return -ENOMEM;
        state->pfs[state->n_pfs++] = *pf;
        *pf = (struct applied_pf){ 0 };
        return 0;
}

int applied_pf_copy(const struct applied_pf *src, struct applied_pf *ret)
{
        *ret = *src;
        ret->applied.groups = NULL;
        if (src->applied.n_groups > 0) {
                ret->applied.groups = calloc(src->applied.n_groups, sizeof(struct vf_group));
                if (!ret->applied.groups)
                        return -ENOMEM;
                memcpy(ret->applied.groups, src->applied.groups,
                       src->applied.n_groups * sizeof(struct vf_group));
        }
        return 0;
}

int applied_pf_to_json(const struct applied_pf *pf, json_t **ret)
{
        json_t *iface;

        if (desired_interface_to_json(&pf->applied, &iface) < 0)
                return -ENOMEM;
        *ret = json_pack("{s:s, s:i, s:i, s:s, s:o}", "pciAddress", pf->pci_address, "originalMtu",
                         pf->original_mtu, "originalNumVfs", pf->original_num_vfs,
                         "originalESwitchMode", pf->original_eswitch_mode, "interface", iface);
        return *ret ? 0 : -ENOMEM;
}

static int fail(char **error, const char *msg)
{
        *error = strdup(msg);
        return *error ? -EINVAL : -ENOMEM;
}

int applied_pf_from_json(const json_t *obj, struct applied_pf *ret, char **error)
{
        struct applied_pf pf = { 0 };
        const json_t *v;
        const char *s;
        int r;

        *error = NULL;
        if (!json_is_object(obj))
                return fail(error, "applied state: expected an object");
        s = json_string_value(json_object_get(obj, "pciAddress"));
        if (!s || !pci_address_is_valid(s))
                return fail(error, "applied state: pciAddress missing or not a PCI address");
        snprintf(pf.pci_address, sizeof(pf.pci_address), "%s", s);
        v = json_object_get(obj, "originalMtu");
        if (v &&
            (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 65535))
                return fail(error, "applied state: originalMtu is not an MTU");
        pf.original_mtu = v ? (int)json_integer_value(v) : 0;
        v = json_object_get(obj, "originalNumVfs");
        if (v &&
            (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 65535))
                return fail(error, "applied state: originalNumVfs is not a VF count");
        pf.original_num_vfs = v ? (int)json_integer_value(v) : 0;
        v = json_object_get(obj, "originalESwitchMode");
        s = json_string_value(v);
        if (v && (!s || (*s && strcmp(s, "legacy") != 0 && strcmp(s, "switchdev") != 0)))
                return fail(error, "applied state: originalESwitchMode is not legacy/switchdev");
        snprintf(pf.original_eswitch_mode, sizeof(pf.original_eswitch_mode), "%s", s ? s : "");
        r = desired_interface_from_json(json_object_get(obj, "interface"), &pf.applied, error);
        if (r < 0)
                return r;
        if (strcasecmp(pf.applied.pci_address, pf.pci_address) != 0) {
                applied_pf_done(&pf);
                return fail(error, "applied state: interface.pciAddress differs from pciAddress");
        }
        *ret = pf;
        return 0;
}
