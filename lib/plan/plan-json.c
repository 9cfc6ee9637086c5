/* SPDX-License-Identifier: Apache-2.0 */
/* Actions as JSON and as one-line text, for `sriov-agent plan` and the journal. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plan/ib-guids.h"
#include "plan/plan.h"
#include "util/macro.h"

int action_to_json(const struct action *a, json_t **ret)
{
        json_auto_t *o = json_pack("{s:s, s:s, s:s, s:s}", "action", action_kind_to_string(a->kind),
                                   "pf", a->pf, "pfName", a->pf_name, "reason", a->reason);
        int r = 0;

        if (!o)
                return -ENOMEM;
        if (a->vf_index >= 0) {
                r |= json_object_set_new(o, "vf", json_integer(a->vf_index));
                if (a->vf_address[0])
                        r |= json_object_set_new(o, "vfAddress", json_string(a->vf_address));
        }
        switch (a->kind) {
        case ACTION_SET_NUM_VFS:
        case ACTION_SET_PF_MTU:
        case ACTION_SET_VF_MTU:
        case ACTION_RESET_PF:
        case ACTION_RESTORE_PF_MTU:
                r |= json_object_set_new(o, "value", json_integer(a->value));
                break;
        case ACTION_BIND_DRIVER:
                r |=
                    json_object_set_new(o, "driver", json_string(a->text[0] ? a->text : "default"));
                break;
        case ACTION_SET_ESWITCH_MODE:
                r |= json_object_set_new(o, "mode", json_string(a->text));
                break;
        case ACTION_SET_VF_GUID: {
                char guid[IB_GUID_TEXT_MAX];
                ib_guid_format(a->guid, guid);
                r |= json_object_set_new(o, "guid", json_string(guid));
                break;
        }
        default:
                break;
        }
        if (r)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

int plan_actions_to_json(const struct plan *p, json_t **ret)
{
        json_auto_t *arr = json_array();

        if (!arr)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_actions; i++) {
                json_t *o;
                if (action_to_json(&p->actions[i], &o) < 0 || json_array_append_new(arr, o) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(arr);
        return 0;
}

void action_value_format(const struct action *a, char *buf, size_t size)
{
        if (a->kind == ACTION_BIND_DRIVER)
                snprintf(buf, size, " -> %s", a->text[0] ? a->text : "default driver");
        else if (a->kind == ACTION_SET_ESWITCH_MODE)
                snprintf(buf, size, " -> %s", a->text);
        else if (a->kind == ACTION_SET_VF_GUID) {
                char guid[IB_GUID_TEXT_MAX];
                ib_guid_format(a->guid, guid);
                snprintf(buf, size, " -> %s", guid);
        } else if (a->kind != ACTION_PF_LINK_UP)
                snprintf(buf, size, " -> %d", a->value);
        else if (size > 0)
                buf[0] = '\0';
}

void action_format(const struct action *a, char *buf, size_t size)
{
        char target[64] = "", value[80];

        if (a->vf_index >= 0)
                snprintf(target, sizeof(target), " vf %d%s%s", a->vf_index,
                         a->vf_address[0] ? " " : "", a->vf_address);
        action_value_format(a, value, sizeof(value));
        snprintf(buf, size, "%-16s %s%s%s%s%s%s (%s)", action_kind_to_string(a->kind), a->pf,
                 a->pf_name[0] ? " (" : "", a->pf_name, a->pf_name[0] ? ")" : "", target, value,
                 a->reason);
}
