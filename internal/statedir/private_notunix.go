//go:build !unix

package statedir

// noFollow is zero where open has no flag to refuse a symbolic link (Windows): open follows one, and the
// SameFile check against os.Lstat after it refuses what was reached through a link.
const noFollow = 0

// permBits is false on Windows, where access is decided by the file's ACL: os.Stat reports 0666 for any writable
// file, and Chmod sets only the read-only attribute, so there are no group and others' bits to take off.
const permBits = false
