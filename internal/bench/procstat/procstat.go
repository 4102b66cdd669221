// Package procstat reads what the load tools measure of a process from Linux's /proc: the CPU time it has used and
// its resident memory.
//
// It imports only the standard library.
package procstat

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ClockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ, 100 on every Linux architecture Go runs on.
const ClockTick = 10 * time.Millisecond

// CPU returns the user and system CPU time that process pid has used so far, all its threads included.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields are counted after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * ClockTick, nil
}

// Memory is a process's resident memory, in bytes.
type Memory struct {
	RSS, Peak int64 // VmRSS and VmHWM
	// Anon and File split RSS: anonymous memory (the heap, stacks, written data) and pages of mapped files (the
	// binary's code and read-only data, shared libraries), which are shared and reclaimable but count in RSS.
	Anon, File int64 // RssAnon and RssFile
}

// ReadMemory returns process pid's resident memory, from /proc/PID/status.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	for line := range strings.Lines(string(b)) {
		key, val, ok := strings.Cut(line, ":")
		var field *int64
		switch key {
		case "VmRSS":
			field = &m.RSS
		case "VmHWM":
			field = &m.Peak
		case "RssAnon":
			field = &m.Anon
		case "RssFile":
			field = &m.File
		}
		if !ok || field == nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, key, err)
		}
		*field = kb << 10
	}
	if m.Peak == 0 {
		return Memory{}, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
	}
	return m, nil
}

// Section is one allocated section of a process's executable and how much of it is resident.
type Section struct {
	Name     string
	Size     int64 // bytes in the file's address range
	Resident int64 // bytes of the pages it spans that are present in memory (whole pages: the first and last may be shared)
}

// pageSize is the page size /proc/PID/pagemap counts in, on every architecture the tools run on.
const pageSize = 4096

// Sections returns the allocated sections of process pid's executable, in address order, with the bytes of each
// that are resident, read from /proc/PID/pagemap (one entry per page; bit 63 is "present"). The executable must not
// be position-independent: Go's default on Linux/amd64 and arm64 is not.
func Sections(pid int) ([]Section, error) {
	f, err := elf.Open(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		return nil, fmt.Errorf("/proc/%d/exe is position-independent: section addresses are not where it is mapped", pid)
	}
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, err
	}
	defer pm.Close()
	var out []Section
	entries := make([]byte, 8*256)
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Addr == 0 || s.Size == 0 {
			continue
		}
		sec := Section{Name: s.Name, Size: int64(s.Size)}
		first, last := s.Addr/pageSize, (s.Addr+s.Size-1)/pageSize
		for page := first; page <= last; {
			n := min(last-page+1, uint64(len(entries)/8))
			if _, err := pm.ReadAt(entries[:n*8], int64(page*8)); err != nil {
				return nil, fmt.Errorf("/proc/%d/pagemap: %w", pid, err)
			}
			for i := range n {
				if binary.LittleEndian.Uint64(entries[i*8:])>>63 == 1 {
					sec.Resident += pageSize
				}
			}
			page += n
		}
		out = append(out, sec)
	}
	return out, nil
}
