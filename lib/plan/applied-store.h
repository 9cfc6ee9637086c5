/* Loading the persisted applied state from --state-dir: one <pci-address>.json per PF.
 *
 * The only file of lib/plan that does I/O (reading; the agent writes records with
 * write_file_atomic()). A missing directory is an empty state. A record that is not valid JSON,
 * does not parse, or whose file name differs from its pciAddress is an error naming the file:
 * silently ignoring it would make the agent forget a PF it owns. Files not named *.json are
 * ignored (temporary files of an interrupted atomic write). */
#pragma once

#include "plan/applied.h"

/* 0, -EINVAL with *error (free()), or another negative errno. */
int applied_state_load_dir(const char *dir, struct applied_state *ret, char **error);

/* File name of a PF's record: "<pci>.json". -EINVAL for a bad PCI address. */
int applied_record_filename(const char *pci, char *buf, size_t size);
