package procstat

import (
	"os"
	"testing"
)

func TestSelf(t *testing.T) {
	pid := os.Getpid()
	for range 1_000_000 { // use some CPU, so that it shows
		_ = make([]byte, 64)
	}
	if cpu, err := CPU(pid); err != nil || cpu < 0 {
		t.Errorf("CPU = %v, %v", cpu, err)
	}
	m, err := ReadMemory(pid)
	if err != nil || m.RSS <= 0 || m.RSS > m.Peak {
		t.Errorf("ReadMemory = %+v, %v; want 0 < RSS <= Peak", m, err)
	}
	// One read of /proc/PID/status: RSS is RssAnon + RssFile + RssShmem, and a Go test binary has some of the first two.
	if m.Anon <= 0 || m.File <= 0 || m.Anon+m.File > m.RSS {
		t.Errorf("ReadMemory = %+v; want Anon > 0, File > 0 and Anon + File <= RSS", m)
	}
	secs, err := Sections(pid)
	if err != nil {
		t.Fatalf("Sections: %v", err)
	}
	var text *Section
	for i := range secs {
		if secs[i].Name == ".text" {
			text = &secs[i]
		}
		if secs[i].Resident < 0 || secs[i].Resident > secs[i].Size+2*pageSize {
			t.Errorf("section %+v: resident outside [0, size] (counted in whole pages: up to two more)", secs[i])
		}
	}
	// This very function runs from .text: some of it is resident.
	if text == nil || text.Resident <= 0 {
		t.Errorf("Sections = %+v; want a resident .text", secs)
	}
	if _, err := CPU(-1); err == nil {
		t.Error("CPU of no process: no error")
	}
}
