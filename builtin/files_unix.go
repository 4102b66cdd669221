//go:build unix

package builtin

import "syscall"

// oDirectory makes an open fail on anything but a directory, without opening it.
const oDirectory = syscall.O_DIRECTORY
