/* SPDX-License-Identifier: Apache-2.0 */
/* What a SriovNetwork / SriovIBNetwork needs next to become its NetworkAttachmentDefinition:
 * ownership, finalizer, namespace moves and the Ready condition, decided without I/O.
 *
 * Pure: the caller (lib/kube/networks.c) says what it knows of each NAD the decision looks at
 * (a full object, absent, unreadable, or not known yet) and gets back exactly one action to
 * carry out, after which it decides again. The rules that keep foreign objects safe live here:
 * - a NAD is ours only when it carries our owner-ref annotation; a NAD we render also carries
 *   the label NAD_LABEL_RENDERED_BY, so the controller lists and watches only its own NADs;
 * - a NAD that is not known yet is read (NAD_ACTION_READ) before anything is decided about it,
 *   and one that could not be read is never written: the network reports it (Ready=False,
 *   NetworkAttachmentDefinitionUnreadable);
 * - a NAD of another owner or without an owner annotation is never written nor deleted: the
 *   network reports it (Ready=False, NetworkAttachmentDefinitionInvalid);
 * - our NAD without the label (rendered by an earlier version) gets the label only, by a merge
 *   patch guarded by its resourceVersion: its spec and annotations are not rewritten;
 * - every update and delete names the resourceVersion the decision was made on, so a NAD that
 *   changed in between is not overwritten (409, read again). */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "nad/render.h"

#define NAD_LABEL_RENDERED_BY       "sriovnetwork.openshift.io/rendered-by"
#define NAD_LABEL_RENDERED_BY_VALUE "sriov-agent"
#define NAD_LABEL_SELECTOR          NAD_LABEL_RENDERED_BY "=" NAD_LABEL_RENDERED_BY_VALUE
#define NAD_NETWORK_FINALIZER       "netattdef.finalizers.sriovnetwork.openshift.io"
#define NAD_NETWORK_LAST_NS         "operator.sriovnetwork.openshift.io/last-network-namespace"

#define NAD_REASON_READY      "NetworkReady"
#define NAD_REASON_INVALID    "NetworkAttachmentDefinitionInvalid"
#define NAD_REASON_NS_MISSING "NamespaceNotFound"
#define NAD_REASON_UNREADABLE "NetworkAttachmentDefinitionUnreadable"

enum nad_ownership {
        NAD_OURS,           /* our owner-ref annotation and our label */
        NAD_OURS_UNLABELED, /* our owner-ref annotation, not (yet) our label */
        NAD_OTHER_OWNER,    /* another object's owner-ref annotation */
        NAD_NO_OWNER,       /* no owner-ref annotation: made by hand or by another tool */
};
enum nad_ownership nad_ownership(json_t *nad, const char *owner);

enum nad_seen {
        NAD_SEEN_UNKNOWN,    /* not read yet (or only a stub without annotations): read it */
        NAD_SEEN_ABSENT,     /* read: 404 */
        NAD_SEEN_PRESENT,    /* read in full: object */
        NAD_SEEN_UNREADABLE, /* the read failed: error says why */
};

struct nad_view {
        enum nad_seen seen;
        json_t *object;    /* PRESENT: the whole object (borrowed) */
        const char *error; /* UNREADABLE */
};

struct nad_decide_input {
        enum nad_network_kind kind;
        json_t *network;             /* as the API returns it */
        const char *resource_prefix; /* NULL = "openshift.io" */
        const char *now;             /* RFC 3339: a new condition's lastTransitionTime */
        /* What is known of the NAD ns/name. */
        struct nad_view (*lookup)(const char *ns, const char *name, void *userdata);
        bool (*namespace_exists)(const char *ns, void *userdata);
        void *userdata;
};

enum nad_action_type {
        NAD_ACTION_NONE,           /* nothing to write */
        NAD_ACTION_READ,           /* GET the NAD namespace_/name, then decide again */
        NAD_ACTION_CREATE,         /* POST body (a NAD) into namespace_ */
        NAD_ACTION_UPDATE,         /* PUT body (with the resourceVersion read) to the NAD */
        NAD_ACTION_LABEL,          /* merge PATCH body (our label, resourceVersion) on the NAD */
        NAD_ACTION_DELETE,         /* DELETE the NAD with body (DeleteOptions, preconditions) */
        NAD_ACTION_NETWORK_PATCH,  /* merge PATCH body on the network (metadata only) */
        NAD_ACTION_NETWORK_STATUS, /* merge PATCH body on the network's /status */
};

struct nad_action {
        enum nad_action_type type;
        char *namespace_, *name; /* the NAD (READ, CREATE, UPDATE, LABEL, DELETE) */
        json_t *body;
        /* A line for the log (syslog level), when set. outcome: it states where the network
         * stands (its condition), to be logged only when it changed. */
        int level;
        char *message;
        bool outcome;
        /* NETWORK_STATUS: the Event {type, reason, message} to post on the network once the
         * write succeeded (a change of the Ready condition); NULL for none. */
        json_t *event;
};

void nad_action_clear(struct nad_action *a);

/* Decides the network's next step into *out (cleared first). 0, or -ENOMEM (out cleared). */
int nad_decide(const struct nad_decide_input *in, struct nad_action *out);
