package runlog

import "time"

// SetLateGrace sets how long r's followers wait for the nested runs of a run ended (30s otherwise).
func SetLateGrace(r *Recorder, d time.Duration) { r.lateGrace = d }
