/* SPDX-License-Identifier: Apache-2.0 */
/* Loading the persisted applied state from --state-dir: one <pci-address>.json per PF.
 *
 * Every read and write of a record is here (agent/, not lib/plan: lib/plan stays pure). A missing
 * directory is an empty state. Only files named
 * "<pci-address>.json" are records; anything else (notes.json, dot-files, temporary files of
 * an interrupted write) is ignored. A record that cannot be read, is not valid JSON, does not
 * parse, or whose pciAddress differs from its file name freezes that one PF (ret->bad, with a
 * message naming the file): silently dropping it would make the agent forget a PF it owns,
 * and failing the whole load would take every other PF's pools down with it. */
#pragma once

#include "plan/applied.h"

/* 0, or a negative errno with *error (free()) when the directory itself cannot be listed. */
int applied_state_load_dir(const char *dir, struct applied_state *ret, char **error);

/* File name of a PF's record: "<pci>.json". -EINVAL for a bad PCI address. */
int applied_record_filename(const char *pci, char *buf, size_t size);

/* Writes one PF's record to <state_dir>/<pci>.json (write_file_atomic), unless the file
 * already says exactly that. 0, or a negative errno (logged, naming the PF and file). */
int applied_record_save(const char *state_dir, const struct applied_pf *pf);
/* Deletes a released PF's record; a failure other than ENOENT is logged as a warning. */
void applied_record_remove(const char *state_dir, const char *pci);
