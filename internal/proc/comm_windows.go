package proc

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// CommOf is pid's image name (notepad.exe), read now from a snapshot of
// the processes; "?" when it cannot be read.
func CommOf(pid int) string {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return "?"
	}
	defer windows.CloseHandle(snap)
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		if int(e.ProcessID) == pid {
			return windows.UTF16ToString(e.ExeFile[:])
		}
	}
	return "?"
}

// ParentsOf maps every process to its parent, from one snapshot of the
// system's processes (Windows keeps a process's parent PID after the
// parent ended: a caller checks the parent is one it knows).
func ParentsOf() (map[int]int, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(snap)
	out := map[int]int{}
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		out[int(e.ProcessID)] = int(e.ParentProcessID)
	}
	return out, nil
}
