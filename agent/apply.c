/* SPDX-License-Identifier: Apache-2.0 */
#include "apply.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cni/state.h"
#include "host/driver-bind.h"
#include "host/netlink-link.h"
#include "host/sriov-numvfs.h"
#include "util/array.h"
#include "util/log.h"
#include "util/macro.h"

static struct apply_pf_result *report_pf(struct apply_report *r, const char *pf)
{
        if (r->n_pfs > 0 && strcmp(r->pfs[r->n_pfs - 1].pf, pf) == 0)
                return &r->pfs[r->n_pfs - 1];
        if (GROW_ARRAY(r->pfs, r->cap_pfs, r->n_pfs + 1) < 0)
                return NULL;
        struct apply_pf_result *p = &r->pfs[r->n_pfs++];
        *p = (struct apply_pf_result){ 0 };
        snprintf(p->pf, sizeof(p->pf), "%s", pf);
        return p;
}

/* The VF's netdev name from the inventory the plan was built on, or NULL. */
static const char *vf_netdev(const struct inventory *inv, const struct action *a)
{
        const struct pf_info *pf = inventory_find_pf(inv, a->pf);
        const struct vf_info *vf = pf ? pf_find_vf(pf, a->vf_index) : NULL;
        return vf ? vf_netdev_name(vf) : NULL;
}

static const char *error_hint(const struct action *a, int error)
{
        switch (a->kind) {
        case ACTION_SET_NUM_VFS:
        case ACTION_RESET_PF:
                return host_numvfs_error_hint(error);
        case ACTION_BIND_DRIVER:
        case ACTION_SET_VF_GUID:
                return host_bind_error_hint(error);
        default:
                return NULL;
        }
}

/* A VF-count change writes 0 first when the PF already has VFs: a signal between "write 0"
 * and "write N" would leave the PF with no VFs at all. SIGTERM/SIGINT (also the parent-death
 * signal of the apply process) stay pending until the final count is written. */
struct signal_hold {
        sigset_t saved;
        bool held;
};

static void release_signals(void *userdata)
{
        struct signal_hold *h = userdata;

        if (h->held)
                sigprocmask(SIG_SETMASK, &h->saved, NULL);
        h->held = false;
}

static int set_num_vfs_unsignalled(const struct apply_options *opts, const char *pf, int n)
{
        struct signal_hold hold = { 0 };
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        hold.held = sigprocmask(SIG_BLOCK, &mask, &hold.saved) == 0;
        const struct numvfs_options numvfs = {
                .sysfs_root = opts->sysfs_root,
                .timeout_ms = opts->vf_timeout_ms,
                .final_count_written = release_signals,
                .userdata = &hold,
        };
        int r = host_set_num_vfs(&numvfs, pf, n);
        release_signals(&hold); /* also when it failed before writing */
        return r;
}

/* The CNI plugin's node-wide lock around VF re-binds and RDMA moves: a re-bind frees the VF's
 * RDMA device's uverbs/umad/issm minors and mlx5_N name and takes the lowest free ones again,
 * so one running beside a pod's ADD can swap them between pods. Waited for up to a minute, as
 * the plugin waits; a lock file that cannot be opened at all (the records' directory mounted
 * read-only before any plugin made the file) is logged and the change made without it. */
#define MOVE_LOCK_TIMEOUT_MS (60 * 1000)

static int take_move_lock(const struct apply_options *opts, const struct action *a, int *ret_fd)
{
        const char *dir = opts->cni_state_dir ?: CNI_STATE_DIR_DEFAULT;
        int fd = cni_move_lock(dir, MOVE_LOCK_TIMEOUT_MS);
        *ret_fd = fd;
        if (fd == -ETIMEDOUT)
                return log_ctx_msg(LOG_ERR, fd,
                                   &(const struct log_ctx){ .pf = a->pf, .vf = a->vf_address },
                                   "the CNI plugin's lock %s/pci/vf_lock/" CNI_MOVE_LOCK_NAME
                                   ".lock is held for more than %d s",
                                   dir, MOVE_LOCK_TIMEOUT_MS / 1000);
        /* read-only and without the file: no ADD ever moved or re-bound anything here */
        if (fd < 0)
                log_ctx_msg(fd == -EROFS ? LOG_DEBUG : LOG_WARNING, fd,
                            &(const struct log_ctx){ .pf = a->pf, .vf = a->vf_address },
                            "cannot take the CNI plugin's lock in %s/pci/vf_lock: re-binding "
                            "without it",
                            dir);
        return 0;
}

/* Under the lock: whether a CNI attachment holds the VF now. The plan was made before this
 * apply, and a pod's ADD may have taken the VF since (its allocation record is written before
 * it sets the pod's GUID or moves anything): re-binding it or overwriting its GUID would break
 * the pod. Such an action is left for the next plan, which sees the attachment. 1 (logged)
 * when held, else 0; a record that cannot be read is logged and counts as none, as a lock that
 * cannot be taken does. */
static int held_by_attachment(const struct apply_options *opts, const struct action *a)
{
        const char *dir = opts->cni_state_dir ?: CNI_STATE_DIR_DEFAULT;
        const struct log_ctx ctx = { .pf = a->pf,
                                     .vf = a->vf_address,
                                     .action = action_kind_to_string(a->kind) };
        char holder[4096], name[256] = "";
        struct cni_cache rec;

        int r = cni_pci_holder(dir, a->vf_address, holder, sizeof(holder));
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                log_ctx_msg(LOG_WARNING, r, &ctx,
                            "cannot read the CNI plugin's allocation record of VF %s in %s/pci: "
                            "changing it as planned",
                            a->vf_address, dir);
                return 0;
        }
        if (cni_cache_find_latest(dir, a->vf_address, name, sizeof(name), &rec) < 0)
                snprintf(name, sizeof(name), "?");
        log_ctx_msg(LOG_NOTICE, 0, &ctx,
                    "%s on PF %s VF %d (%s) left alone: the CNI attachment %s (network namespace "
                    "%s) took the VF after the plan was made; the next reconcile plans again",
                    action_kind_to_string(a->kind), a->pf, a->vf_index, a->vf_address, name,
                    holder);
        return 1;
}

/* What apply_action() returns besides 0 (done) and a negative errno. */
enum {
        ACTION_DEFERRED = 1, /* its VF does not exist yet */
        ACTION_HELD = 2,     /* a CNI attachment took its VF after the plan was made */
};

/* Runs one action: 0 done, ACTION_DEFERRED, ACTION_HELD, or a negative errno. */
static int apply_action(const struct apply_options *opts, const struct action *a,
                        const struct inventory *observed)
{
        const struct bind_options bind = { .sysfs_root = opts->sysfs_root };
        const char *ifname;

        switch (a->kind) {
        case ACTION_SET_NUM_VFS:
        case ACTION_RESET_PF:
                return set_num_vfs_unsignalled(opts, a->pf, a->value);
        case ACTION_SET_PF_MTU:
        case ACTION_RESTORE_PF_MTU:
                if (!a->pf_name[0])
                        return -ENODEV;
                return host_netlink_set_mtu(a->pf_name, a->value);
        case ACTION_PF_LINK_UP:
                if (!a->pf_name[0])
                        return -ENODEV;
                return host_netlink_set_up(a->pf_name);
        case ACTION_BIND_DRIVER: {
                if (!a->vf_address[0])
                        return ACTION_DEFERRED;
                _cleanup_close_ int lock = -1;
                int r = take_move_lock(opts, a, &lock);
                if (r < 0)
                        return r;
                if (held_by_attachment(opts, a))
                        return ACTION_HELD;
                return host_bind_vf_driver(&bind, a->vf_address, a->text[0] ? a->text : NULL);
        }
        case ACTION_SET_VF_MTU:
                ifname = vf_netdev(observed, a);
                if (!a->vf_address[0] || !ifname)
                        return ACTION_DEFERRED;
                return host_netlink_set_mtu(ifname, a->value);
        case ACTION_SET_VF_GUID: {
                if (!a->vf_address[0] || !a->pf_name[0])
                        return ACTION_DEFERRED;
                _cleanup_close_ int lock = -1;
                int r = take_move_lock(opts, a, &lock);
                if (r < 0)
                        return r;
                if (held_by_attachment(opts, a))
                        return ACTION_HELD;
                r = host_netlink_set_vf_guids(NULL, a->pf_name, 0, a->vf_index, a->guid, a->guid);
                /* the VF's RDMA device reads its GUIDs when its driver probes it */
                return r < 0 ? r : host_rebind_vf_driver(&bind, a->vf_address);
        }
        case ACTION_SET_ESWITCH_MODE:
                /* devlink eswitch changes need switchdev-capable hardware and are refused by
                 * the policy layer on nodes without it; nothing reaches here on supported
                 * setups. */
                return -EOPNOTSUPP;
        default:
                return -EINVAL;
        }
}

int apply_plan(const struct apply_options *opts, const struct plan *plan,
               const struct inventory *observed, struct apply_report *ret)
{
        struct apply_report r = { 0 };

        for (size_t i = 0; i < plan->n_actions; i++) {
                const struct action *a = &plan->actions[i];
                struct apply_pf_result *pf = report_pf(&r, a->pf);
                char line[256];

                if (!pf) {
                        apply_report_done(&r);
                        return -ENOMEM;
                }
                if (pf->error != 0) {
                        r.n_skipped++;
                        continue;
                }
                action_format(a, line, sizeof(line));
                const struct log_ctx ctx = {
                        .pf = a->pf,
                        .vf = a->vf_address[0] ? a->vf_address : NULL,
                        .action = action_kind_to_string(a->kind),
                };
                int rr = apply_action(opts, a, observed);
                if (rr == ACTION_DEFERRED)
                        log_ctx_msg(LOG_DEBUG, 0, &ctx, "deferred until the VF exists: %s", line);
                /* logged by apply_action(); no failure: the PF's other actions go on */
                if (rr == ACTION_DEFERRED || rr == ACTION_HELD) {
                        r.n_skipped++;
                        continue;
                }
                if (rr < 0) {
                        const char *hint = error_hint(a, rr);
                        pf->error = rr;
                        pf->failed_kind = a->kind;
                        snprintf(pf->message, sizeof(pf->message), "PF %s: %s: %s%s%s", a->pf, line,
                                 strerror(-rr), hint ? ": " : "", hint ? hint : "");
                        log_ctx_msg(LOG_ERR, 0, &ctx, "%s", pf->message);
                        continue;
                }
                log_ctx_msg(LOG_NOTICE, 0, &ctx, "%s", line);
                pf->n_done++;
                r.n_done++;
                if (a->kind == ACTION_SET_NUM_VFS || a->kind == ACTION_RESET_PF)
                        r.changed_vf_count = true;
        }
        *ret = r;
        return 0;
}
