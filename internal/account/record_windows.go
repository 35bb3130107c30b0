package account

import "golang.org/x/sys/windows"

// recorderOS: Windows adds nothing to the Recorder; the job accounts for
// its processes.
type recorderOS struct{}

// Ref is the handle the Recorder holds on a process until the report is
// made: it keeps the PID from being reused, and tells the exit code.
type Ref = windows.Handle

// New is the account of a run: nil, which records nothing, unless
// collect.
func New(collect bool) *Recorder {
	if !collect {
		return nil
	}
	return &Recorder{}
}
