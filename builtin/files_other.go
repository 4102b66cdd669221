//go:build !unix

package builtin

// oDirectory is zero where open has no flag to refuse what is not a directory (Windows): list_dir checks first, and
// a file opened there holds no lock that closing it would drop.
const oDirectory = 0
