package job

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// The job's messages that contain reads from its completion port
// (JOB_OBJECT_MSG_*, which x/sys does not declare).
const (
	// MsgProcessLimit (JOB_OBJECT_MSG_ACTIVE_PROCESS_LIMIT): a process
	// start was refused by the limit on processes (Limit).
	MsgProcessLimit = 3
	// msgNewProcess: a process joined the job; the overlapped value is
	// its PID.
	msgNewProcess = 6
	// MsgMemoryLimit (JOB_OBJECT_MSG_JOB_MEMORY_LIMIT): an allocation was
	// refused by the memory limit (Limit); the overlapped value is the PID.
	MsgMemoryLimit = 10
)

// The completion keys of the job's port: the job's own messages, and the
// packets contain posts to it.
const (
	jobKey      = 1
	portStopKey = 2 // readPort returns
	portFlush   = 3 // every message before it has been handed on
)

// listen associates a completion port with the job, once, and starts
// readPort on it. A job has one port: every reader of its messages goes
// through this one.
func (j *Job) listen() error {
	j.portOnce.Do(func() {
		port, err := windows.CreateIoCompletionPort(windows.InvalidHandle, 0, 0, 1)
		if err != nil {
			j.portErr = err
			return
		}
		assoc := struct {
			CompletionKey  uintptr
			CompletionPort windows.Handle
		}{jobKey, port}
		if _, err := windows.SetInformationJobObject(j.h, windows.JobObjectAssociateCompletionPortInformation,
			uintptr(unsafe.Pointer(&assoc)), uint32(unsafe.Sizeof(assoc))); err != nil {
			windows.CloseHandle(port)
			j.portErr = err
			return
		}
		j.port, j.portDone = port, make(chan struct{})
		go j.readPort()
	})
	return j.portErr
}

// readPort hands on the job's messages until the stop packet.
func (j *Job) readPort() {
	defer close(j.portDone)
	for {
		var msg uint32
		var key, value uintptr
		ok, _, _ := procGetQueuedCompletionStatus.Call(uintptr(j.port), uintptr(unsafe.Pointer(&msg)),
			uintptr(unsafe.Pointer(&key)), uintptr(unsafe.Pointer(&value)), windows.INFINITE)
		if ok == 0 && value == 0 {
			return // the port is gone
		}
		j.mu.Lock()
		switch {
		case key == portStopKey:
			j.mu.Unlock()
			return
		case key == portFlush:
			j.fwd = 0
			close(j.flushed)
		case msg == msgNewProcess:
			if j.onNew != nil {
				j.onNew(int(value))
			}
		case msg == MsgMemoryLimit || msg == MsgProcessLimit:
			if j.fwd != 0 {
				procPostQueuedCompletionStatus.Call(uintptr(j.fwd), uintptr(msg), key, value)
			}
		}
		j.mu.Unlock()
	}
}

// post puts a packet of contain's own on the job's port.
func (j *Job) post(key uintptr) {
	procPostQueuedCompletionStatus.Call(uintptr(j.port), 0, key, 0)
}

// watchNew has f called with the PID of each process that joins the job
// from now on, from the port's reader, as soon as the job says so.
func (j *Job) watchNew(f func(pid int)) error {
	if err := j.listen(); err != nil {
		return err
	}
	j.mu.Lock()
	j.onNew = f
	j.mu.Unlock()
	return nil
}

// Notifications returns a new completion port to which the job's
// messages on its limits (MsgMemoryLimit, MsgProcessLimit) are handed on
// (key 1): Windows promises delivery only for notification limits, so
// should a memory-limit message be lost, the failed allocation is
// COMMAND's to handle, and the run ends as COMMAND does. Its reader
// stops reading it after Unforward, and closes it.
func (j *Job) Notifications() (windows.Handle, error) {
	if err := j.listen(); err != nil {
		return 0, err
	}
	fwd, err := windows.CreateIoCompletionPort(windows.InvalidHandle, 0, 0, 1)
	if err != nil {
		return 0, err
	}
	j.mu.Lock()
	j.fwd = fwd
	j.mu.Unlock()
	return fwd, nil
}

// Unforward hands on every limit message the job posted so far, then no
// more: the port Notifications returned may then be closed.
func (j *Job) Unforward() {
	j.mu.Lock()
	if j.fwd == 0 || j.flushed != nil {
		j.mu.Unlock()
		return
	}
	j.flushed = make(chan struct{})
	j.mu.Unlock()
	j.post(portFlush)
	select {
	case <-j.flushed:
	case <-j.portDone:
	}
}
