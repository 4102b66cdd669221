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
	if _, err := CPU(-1); err == nil {
		t.Error("CPU of no process: no error")
	}
}
