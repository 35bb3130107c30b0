#include "go_asm.h"
#include "textflag.h"

// Spawn's clone and its child (spawn_linux_amd64.go says what they do
// and why).

#define SYS_rt_sigaction 13
#define SYS_ioctl 16
#define SYS_getpid 39
#define SYS_execve 59
#define SYS_kill 62
#define SYS_getppid 110
#define SYS_prctl 157
#define SYS_nanosleep 35
#define SYS_fcntl 72
#define SYS_rt_sigpending 127
#define SYS_setpgid 109
#define SYS_setsid 112
#define SYS_rt_sigprocmask 14
#define SYS_exit_group 231
#define SYS_dup3 292
#define SYS_execveat 322
#define SYS_clone3 435

// func clone(a *spawnArgs) (pid, errno uintptr)
//
// An assembly function is never preempted: the mask is set, the clone
// made and the mask restored on one thread, with no Go code between.
TEXT ·clone(SB),NOSPLIT,$0-24
	MOVQ	a+0(FP), R12 // &a.clone is a
	MOVQ	$2, DI // SIG_SETMASK
	LEAQ	spawnArgs_all(R12), SI
	LEAQ	spawnArgs_mask(R12), DX
	MOVQ	$8, R10
	MOVQ	$SYS_rt_sigprocmask, AX
	SYSCALL
	TESTQ	AX, AX
	JNE	failed
	MOVQ	R12, DI
	MOVQ	$88, SI // CLONE_ARGS_SIZE_VER2 (a kernel before 5.7 takes it with cgroup 0)
	MOVQ	$SYS_clone3, AX
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	MOVQ	AX, R13
	MOVQ	$2, DI // SIG_SETMASK
	LEAQ	spawnArgs_mask(R12), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$SYS_rt_sigprocmask, AX
	SYSCALL
	MOVQ	R13, AX
	CMPQ	AX, $0
	JLT	failed
	MOVQ	AX, pid+8(FP)
	MOVQ	$0, errno+16(FP)
	RET
failed:
	NEGQ	AX
	MOVQ	$0, pid+8(FP)
	MOVQ	AX, errno+16(FP)
	RET

// The child, on the stack at the end of a's mapping, a in R12. It writes
// nothing but a.errno, and never returns: it executes the program or
// exits 127.
child:
	// A test's pause, to send it signals (spawnDelay).
	CMPQ	(spawnArgs_delay+8)(R12), $0
	JEQ	group
	LEAQ	spawnArgs_delay(R12), DI
	XORQ	SI, SI
	MOVQ	$SYS_nanosleep, AX
	SYSCALL
group:
	// Its own session, or process group, first: a signal sent to
	// contain's group from now on is not its.
	CMPQ	spawnArgs_setsid(R12), $0
	JEQ	pgrp
	MOVQ	$SYS_setsid, AX
	SYSCALL
	TESTQ	AX, AX
	JMI	die
	JMP	pending
pgrp:
	XORQ	DI, DI
	XORQ	SI, SI
	MOVQ	$SYS_setpgid, AX
	SYSCALL
	TESTQ	AX, AX
	JMI	die
pending:
	// The signals that came before it had its own session or group were
	// sent to contain's (a terminal's ^C or ^Z), which takes them itself:
	// dropped here, by ignoring each for a moment, not taken with the
	// default action once unblocked. Nothing but contain knows its group
	// yet.
	LEAQ	spawnArgs_pending(R12), DI
	MOVQ	$8, SI
	MOVQ	$SYS_rt_sigpending, AX
	SYSCALL
	TESTQ	AX, AX
	JNE	foreground
	MOVQ	$1, BX
drop:
	CMPQ	BX, $65
	JGE	foreground
	MOVQ	spawnArgs_pending(R12), AX
	LEAQ	-1(BX), CX
	SHRQ	CX, AX
	ANDQ	$1, AX
	JEQ	nextsig
	MOVQ	BX, DI
	LEAQ	spawnArgs_ign(R12), SI
	LEAQ	spawnArgs_old(R12), DX
	MOVQ	$8, R10
	MOVQ	$SYS_rt_sigaction, AX
	SYSCALL
	TESTQ	AX, AX
	JNE	nextsig // SIGKILL, SIGSTOP
	MOVQ	BX, DI
	LEAQ	spawnArgs_old(R12), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$SYS_rt_sigaction, AX
	SYSCALL
nextsig:
	INCQ	BX
	JMP	drop
foreground:
	// Only then the terminal's foreground for its new group
	// (Spec.Foreground): a ^C typed from then on is COMMAND's alone, and
	// must reach it.
	CMPQ	spawnArgs_ctty(R12), $0
	JLT	moves
	MOVQ	$SYS_getpid, AX
	SYSCALL
	MOVQ	AX, spawnArgs_pgrp(R12)
	MOVQ	spawnArgs_ctty(R12), DI
	MOVQ	$0x5410, SI // TIOCSPGRP
	LEAQ	spawnArgs_pgrp(R12), DX
	MOVQ	$SYS_ioctl, AX
	SYSCALL
	TESTQ	AX, AX
	JMI	die
	// A test's pause there (spawnDelayForeground).
	CMPQ	(spawnArgs_delayfg+8)(R12), $0
	JEQ	moves
	LEAQ	spawnArgs_delayfg(R12), DI
	XORQ	SI, SI
	MOVQ	$SYS_nanosleep, AX
	SYSCALL
moves:
	// Each descriptor to its number (Spawn moved every source that is
	// another's destination out of the way); one already there loses
	// close-on-exec.
	XORQ	BX, BX
move:
	CMPQ	BX, spawnArgs_nmoves(R12)
	JGE	restore
	MOVQ	spawnArgs_src(R12)(BX*8), DI
	MOVQ	spawnArgs_dst(R12)(BX*8), SI
	CMPQ	DI, SI
	JEQ	same
	XORQ	DX, DX
	MOVQ	$SYS_dup3, AX
	SYSCALL
	TESTQ	AX, AX
	JMI	die
	INCQ	BX
	JMP	move
same:
	MOVQ	$2, SI // F_SETFD
	XORQ	DX, DX
	MOVQ	$SYS_fcntl, AX
	SYSCALL
	TESTQ	AX, AX
	JMI	die
	INCQ	BX
	JMP	move
restore:
	// Pdeathsig, and the signal itself if the parent is gone already (it
	// stays pending until the mask is restored).
	CMPQ	spawnArgs_pdeathsig(R12), $0
	JEQ	unmask
	MOVQ	$1, DI // PR_SET_PDEATHSIG
	MOVQ	spawnArgs_pdeathsig(R12), SI
	MOVQ	$SYS_prctl, AX
	SYSCALL
	TESTQ	AX, AX
	JMI	die
	MOVQ	$SYS_getppid, AX
	SYSCALL
	CMPQ	AX, spawnArgs_ppid(R12)
	JEQ	unmask
	MOVQ	$SYS_getpid, AX
	SYSCALL
	MOVQ	AX, DI
	MOVQ	spawnArgs_pdeathsig(R12), SI
	MOVQ	$SYS_kill, AX
	SYSCALL
	TESTQ	AX, AX
	JMI	die
unmask:
	// The mask the cloning thread had before Spawn blocked every signal.
	MOVQ	$2, DI // SIG_SETMASK
	LEAQ	spawnArgs_mask(R12), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$SYS_rt_sigprocmask, AX
	SYSCALL
	MOVQ	spawnArgs_path(R12), DI
	TESTQ	DI, DI
	JEQ	byfd
	MOVQ	spawnArgs_argv(R12), SI
	MOVQ	spawnArgs_envp(R12), DX
	MOVQ	$SYS_execve, AX
	SYSCALL
	JMP	die
byfd:
	MOVQ	spawnArgs_prog(R12), DI
	LEAQ	spawnArgs_empty(R12), SI
	MOVQ	spawnArgs_argv(R12), DX
	MOVQ	spawnArgs_envp(R12), R10
	MOVQ	$0x1000, R8 // AT_EMPTY_PATH
	MOVQ	$SYS_execveat, AX
	SYSCALL
die:
	NEGQ	AX
	MOVQ	AX, spawnArgs_errno(R12)
	MOVQ	$127, DI
	MOVQ	$SYS_exit_group, AX
	SYSCALL
	JMP	die
