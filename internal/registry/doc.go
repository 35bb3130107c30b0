// Package registry is the file in which contain run keeps what it saw of
// its session, so that contain reap finds the session's processes after
// contain died: COMMAND, each member and each daemon it spared, by PID and
// start time, one appended line each (Registry, OpenRegistry; the format
// is on Registry). contain run writes it and removes it at a clean end;
// reap reads every registry of the user (Read, File), tells whether the
// run that wrote one still runs (Alive), and removes those that name
// nothing any more (PruneRegistries).
//
// Where it is kept is checked as strictly as what is in it
// (dirs_unix.go): a per-user directory, 0700, never a link, another
// user's or one that others may write; a fallback of contain's own when
// /tmp/contain-UID is refused. A registry of another PID namespace is
// never read.
//
// Linux and macOS share one implementation (_unix.go); Windows has none
// (registry_none.go): a job object ends every process of the session
// however contain ends.
//
// It writes and reads the file only: what reap does with a registry
// (following its processes' children, the checks before a signal, the
// processes it could not tell) is internal/reap's.
package registry
