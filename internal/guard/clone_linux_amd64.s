#include "go_asm.h"
#include "textflag.h"

// The cloned waiter (clone_linux_amd64.go says what it does and why).

#define SYS_poll 7
#define SYS_rt_sigaction 13
#define SYS_rt_sigprocmask 14
#define SYS_clone 56
#define SYS_setsid 112
#define SYS_prctl 157
#define SYS_exit_group 231
#define SYS_dup3 292
#define SYS_execveat 322
#define SYS_clone3 435
#define SYS_close_range 436

// func cloneGuard(args uintptr) (pid, errno uintptr)
TEXT ·cloneGuard(SB),NOSPLIT,$0-24
	MOVQ	args+0(FP), R12 // &cloneArgs.clone is &cloneArgs
	MOVQ	R12, DI
	MOVQ	$64, SI // CLONE_ARGS_SIZE_VER0
	MOVQ	$SYS_clone3, AX
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	JLT	failed
	MOVQ	AX, pid+8(FP)
	MOVQ	$0, errno+16(FP)
	RET
failed:
	NEGQ	AX
	MOVQ	$0, pid+8(FP)
	MOVQ	AX, errno+16(FP)
	RET

// The child, on its own stack, args in R12; it never returns. Only its
// stack and the args are written.
child:
	// Each descriptor into place (contain made every source a copy above
	// 5), then every other one closed.
	XORQ	BX, BX
place:
	MOVQ	cloneArgs_fds(R12)(BX*8), DI
	MOVQ	BX, SI
	XORQ	DX, DX
	MOVQ	$SYS_dup3, AX
	SYSCALL
	TESTQ	AX, AX
	JMI	die
	INCQ	BX
	CMPQ	BX, $6
	JLT	place
	MOVQ	$6, DI
	MOVL	$-1, SI // ~0U
	XORQ	DX, DX
	MOVQ	$SYS_close_range, AX
	SYSCALL
	TESTQ	AX, AX
	JNE	die
	MOVQ	$SYS_setsid, AX
	SYSCALL

	// Its handlers are the default (CLONE_CLEAR_SIGHAND); all but the
	// forwarded signals unblocked.
	MOVQ	$2, DI // SIG_SETMASK
	LEAQ	cloneArgs_fatal(R12), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$SYS_rt_sigprocmask, AX
	SYSCALL
	MOVQ	$15, DI // PR_SET_NAME
	LEAQ	cloneArgs_name(R12), SI
	MOVQ	$SYS_prctl, AX
	SYSCALL
	MOVL	$1, cloneArgs_status(R12) // waiting

	// Wait for the pipe's end: contain gone (or poll failing).
wait:
	LEAQ	cloneArgs_pfd(R12), DI
	MOVQ	$1, SI
	MOVQ	$-1, DX
	MOVQ	$SYS_poll, AX
	SYSCALL
	CMPQ	AX, $-4 // EINTR
	JEQ	wait
	CMPQ	AX, $1
	JNE	exec
	MOVWQZX	(cloneArgs_pfd+6)(R12), AX // revents
	TESTQ	$0x38, AX // POLLERR | POLLHUP | POLLNVAL
	JEQ	wait
exec:
	// The forwarded signals ignored, which drops any pending, then
	// unblocked, as contain __guard expects them.
	MOVQ	$1, BX
ignore:
	MOVQ	cloneArgs_fatal(R12), AX
	LEAQ	-1(BX), CX
	SHRQ	CX, AX
	ANDQ	$1, AX
	JEQ	next
	MOVQ	BX, DI
	LEAQ	cloneArgs_ign(R12), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$SYS_rt_sigaction, AX
	SYSCALL
next:
	INCQ	BX
	CMPQ	BX, $65
	JLT	ignore
	MOVQ	$2, DI // SIG_SETMASK
	LEAQ	cloneArgs_none(R12), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	MOVQ	$SYS_rt_sigprocmask, AX
	SYSCALL
	MOVQ	$5, DI
	LEAQ	cloneArgs_empty(R12), SI
	MOVQ	cloneArgs_argv(R12), DX
	MOVQ	cloneArgs_envp(R12), R10
	MOVQ	$0x1000, R8 // AT_EMPTY_PATH
	MOVQ	$SYS_execveat, AX
	SYSCALL
die:
	MOVL	$2, cloneArgs_status(R12)
	MOVQ	$127, DI
	MOVQ	$SYS_exit_group, AX
	SYSCALL
	JMP	die

