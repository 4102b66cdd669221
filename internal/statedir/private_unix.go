//go:build unix

package statedir

import "syscall"

// noFollow makes an open of a symbolic link fail instead of following it.
const noFollow = syscall.O_NOFOLLOW

// permBits says the permission bits are what decides who may read a file, so tightening them means something.
const permBits = true
