// Package safefile owns how ipustack writes an output file (packages,
// objects, linked ELFs, profiles, reports, .npy outputs): the bytes go to
// a temporary file beside the target, are synced, and the temporary file
// is renamed over the target only when every write, sync and close
// succeeded, so a failed write leaves the previous file untouched.
//
// The rename is only done over a regular file or a new name. A symlink is
// written through: its target (resolved) is what gets replaced, and the
// link stays a link. A device node, FIFO or socket is written directly
// (renaming over /dev/full would replace the node with a regular file and
// report success). A directory is refused.
package safefile
