// Package job is the Windows job object that holds a session: made kill
// on close, with contain's handle the only one (New), so that the
// session ends when contain does, however it ends; COMMAND put into it
// before any instruction of it runs (Start); its limits (committed
// memory, processes alive at once, a CPU rate cap) and its accounting;
// and its completion port, whose one reader hands each message on to
// whoever asked for it (the processes that join, the limits' messages).
//
// With --allow-daemons the job permits breakaway, which Windows then
// grants to any process of it: the breakaway watch (WatchBreakaway)
// holds --allow-daemons to its word, sparing only the processes marked
// as daemons and putting back into the job, or terminating, the rest.
//
// Other systems have no job object: the package is empty there.
package job
