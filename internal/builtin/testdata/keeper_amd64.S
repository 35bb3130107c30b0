# The shim's keeper for linux/amd64: contain builds a static ELF from this
# code (internal/builtin) and runs it from a memfd, for a user without a
# cgroup. It is the shim while contain lives, in a few system calls and
# no runtime: a child subreaper that starts COMMAND and tells contain
# what it reaps, as `contain __shim` does. Should contain die (or poll
# fail here once COMMAND runs), it executes `contain __shim keeper BASE`,
# which carries on from what it wrote to its journal and closes the
# session.
#
# Its descriptors start at BASE, a 32-bit number contain appends to this
# code (fdbase), above every descriptor contain inherited, which COMMAND
# inherits in turn: BASE is the brief, a memfd that contain wrote (see
# shim.Brief), mapped here at 0x10000000 once contain says to start:
# pointers to COMMAND's path, argv and envp, to /bin/sh's and its argv (a
# script without #!), COMMAND's Pdeathsig and whether it takes the
# terminal. BASE+1 is the pipe of the records to contain, BASE+2 a pipe
# whose only write end contain holds (one byte: start COMMAND; its end:
# contain's), BASE+3 the journal (the records of COMMAND's start and end
# again), BASE+4 contain's binary, BASE+5 this program. argv is
# `contain-shim __shim keeper BASE`.
#
# A record is 16 bytes: kind, then three 32-bit values. Kinds: 1 COMMAND
# started (PID), 2 it could not be (errno), 3 it stopped (status), 4 it
# ended (status, 1 when other processes are left), 5 another process
# ended (PID, status).
#
# Registers kept: r15 the initial stack, r14 the signalfd, r13 the
# terminal (-1: none), r12 COMMAND's PID (0 once it ended), rbx this
# process's PID, rbp the brief.
#
# Assemble: as --64 -o k.o keeper_amd64.S && objcopy -O binary -j .text k.o k.bin
	.text
	.globl _start
_start:
	mov	%rsp, %r15
	sub	$512, %rsp
	mov	$157, %eax		# prctl(PR_SET_NAME, "contain-shim")
	mov	$15, %edi
	lea	comm(%rip), %rsi
	syscall
	mov	$3, %eax		# close(BASE+5): this program
	mov	fdbase(%rip), %edi
	add	$5, %edi
	syscall
	movq	$-1, (%rsp)		# block every signal; the mask before, at 8(%rsp)
	mov	$14, %eax		# rt_sigprocmask(SIG_BLOCK, &all, &old, 8)
	xor	%edi, %edi
	mov	%rsp, %rsi
	lea	8(%rsp), %rdx
	mov	$8, %r10d
	syscall
	test	%rax, %rax
	jnz	fail
	mov	$157, %eax		# prctl(PR_SET_CHILD_SUBREAPER, 1)
	mov	$36, %edi
	mov	$1, %esi
	syscall
	test	%rax, %rax
	jnz	fail
	movq	$0x10000, (%rsp)	# signalfd4(-1, {SIGCHLD}, 8, SFD_CLOEXEC)
	mov	$289, %eax
	mov	$-1, %rdi
	mov	%rsp, %rsi
	mov	$8, %edx
	mov	$0x80000, %r10d
	syscall
	test	%rax, %rax
	js	fail
	mov	%rax, %r14
	mov	$39, %eax		# getpid
	syscall
	mov	%rax, %rbx
word:
	xor	%eax, %eax		# read(BASE+2, buf, 1): contain's word to start
	mov	fdbase(%rip), %edi
	add	$2, %edi
	mov	%rsp, %rsi
	mov	$1, %edx
	syscall
	cmp	$-4, %rax
	je	word
	cmp	$1, %rax
	jne	quit			# contain ended first: nothing was started
	mov	$5, %eax		# fstat(BASE, &st): the brief's size
	mov	fdbase(%rip), %edi
	lea	64(%rsp), %rsi
	syscall
	test	%rax, %rax
	jnz	fail
	mov	$9, %eax		# mmap(0x10000000, size, RW, MAP_PRIVATE|MAP_FIXED, BASE, 0)
	mov	$0x10000000, %edi
	mov	112(%rsp), %rsi		# st_size
	mov	$3, %edx
	mov	$0x12, %r10d
	mov	fdbase(%rip), %r8d
	xor	%r9d, %r9d
	syscall
	cmp	$0x10000000, %rax
	jne	fail
	mov	%rax, %rbp
	mov	8(%rsp), %rax		# the mask before, for COMMAND
	mov	%rax, 56(%rbp)
	mov	$-1, %r13
	testl	$1, 44(%rbp)		# the terminal's foreground for COMMAND?
	jz	1f
	mov	$257, %eax		# openat(AT_FDCWD, "/dev/tty", O_RDONLY|O_NOCTTY|O_CLOEXEC)
	mov	$-100, %rdi
	lea	tty(%rip), %rsi
	mov	$0x80100, %edx
	xor	%r10d, %r10d
	syscall
	test	%rax, %rax
	js	1f
	mov	%rax, %r13
1:	mov	$58, %eax		# vfork
	syscall
	test	%rax, %rax
	jz	child
	js	forkfailed
	mov	%rax, %r12
	test	%r13, %r13		# the terminal is COMMAND's now
	js	2f
	mov	$3, %eax
	mov	%r13, %rdi
	syscall
2:	mov	48(%rbp), %eax		# the child's errno, where execve failed
	test	%eax, %eax
	jnz	execfailed
	movq	$0, 24(%rsp)
	movl	$1, 16(%rsp)		# started PID
	mov	%r12d, 20(%rsp)
	call	emit
	jmp	loop
forkfailed:
	neg	%eax
	jmp	refused
execfailed:
	mov	%eax, 40(%rsp)
	mov	$61, %eax		# wait4(pid, NULL, 0, NULL)
	mov	%r12, %rdi
	xor	%esi, %esi
	xor	%edx, %edx
	xor	%r10d, %r10d
	syscall
	mov	40(%rsp), %eax
refused:
	movq	$0, 24(%rsp)
	movl	$2, 16(%rsp)		# could not start: errno
	mov	%eax, 20(%rsp)
	call	emit
	jmp	quit

child:					# shares this memory until it executes
	mov	fdbase(%rip), %edi	# close BASE to BASE+4: contain's, not COMMAND's
	lea	5(%rdi), %ecx
	mov	%ecx, 52(%rbp)
3:	mov	$3, %eax
	syscall
	inc	%edi
	cmp	52(%rbp), %edi
	jne	3b
	mov	$109, %eax		# setpgid(0, 0)
	xor	%edi, %edi
	xor	%esi, %esi
	syscall
	test	%rax, %rax
	jnz	childfail
	test	%r13, %r13
	js	4f
	mov	$39, %eax		# getpid
	syscall
	mov	%eax, 52(%rbp)
	mov	$16, %eax		# ioctl(tty, TIOCSPGRP, &pgid)
	mov	%r13, %rdi
	mov	$0x5410, %esi
	lea	52(%rbp), %rdx
	syscall
	test	%rax, %rax
	jnz	childfail
4:	mov	40(%rbp), %esi		# prctl(PR_SET_PDEATHSIG, sig)
	test	%esi, %esi
	jz	5f
	mov	$157, %eax
	mov	$1, %edi
	syscall
	test	%rax, %rax
	jnz	childfail
	mov	$110, %eax		# getppid: the keeper died already?
	syscall
	cmp	%rax, %rbx
	je	5f
	mov	$39, %eax		# then kill(getpid(), sig)
	syscall
	mov	%rax, %rdi
	mov	40(%rbp), %esi
	mov	$62, %eax
	syscall
5:	mov	$14, %eax		# rt_sigprocmask(SIG_SETMASK, &before, NULL, 8)
	mov	$2, %edi
	lea	56(%rbp), %rsi
	xor	%edx, %edx
	mov	$8, %r10d
	syscall
	mov	$59, %eax		# execve(path, argv, envp)
	mov	0(%rbp), %rdi
	mov	8(%rbp), %rsi
	mov	16(%rbp), %rdx
	syscall
	cmp	$-8, %rax		# ENOEXEC: a script without #!, run by /bin/sh
	jne	childfail
	mov	24(%rbp), %rdi
	test	%rdi, %rdi
	jz	childfail
	mov	$59, %eax
	mov	32(%rbp), %rsi
	mov	16(%rbp), %rdx
	syscall
	mov	$-8, %rax		# no shell that runs: ENOEXEC, as before
childfail:
	neg	%eax
	mov	%eax, 48(%rbp)
	mov	$60, %eax		# exit(127): the child alone
	mov	$127, %edi
	syscall

loop:
	mov	%r14d, (%rsp)		# poll: the signalfd (POLLIN), and BASE+2 (its end only)
	movl	$1, 4(%rsp)
	mov	fdbase(%rip), %eax
	add	$2, %eax
	mov	%eax, 8(%rsp)
	movl	$0, 12(%rsp)
	mov	$7, %eax
	mov	%rsp, %rdi
	mov	$2, %esi
	mov	$-1, %edx
	syscall
	cmp	$-4, %rax
	je	loop
	test	%rax, %rax
	js	handover
	testw	$0x38, 14(%rsp)		# contain's end: POLLHUP, POLLERR, POLLNVAL
	jnz	handover
	testw	$1, 6(%rsp)
	jz	loop
	xor	%eax, %eax		# read(signalfd, buf, 384): SIGCHLD taken
	mov	%r14, %rdi
	lea	128(%rsp), %rsi
	mov	$384, %edx
	syscall
reap:
	mov	$61, %eax		# wait4(-1, &status, WNOHANG|WUNTRACED, NULL)
	mov	$-1, %rdi
	lea	32(%rsp), %rsi
	mov	$3, %edx
	xor	%r10d, %r10d
	syscall
	cmp	$-4, %rax
	je	reap
	cmp	$-10, %rax		# ECHILD: nothing of the session is left
	je	quit
	test	%rax, %rax
	jle	loop			# none ended (or an error: poll again)
	mov	32(%rsp), %ecx
	movq	$0, 24(%rsp)
	cmp	$0x7f, %cl		# stopped
	jne	ended
	cmp	%rax, %r12
	jne	reap
	movl	$3, 16(%rsp)		# COMMAND stopped: status
	mov	%ecx, 20(%rsp)
	call	emit
	jmp	reap
ended:
	cmp	%rax, %r12
	je	commandended
	movl	$5, 16(%rsp)		# another process ended: PID, status
	mov	%eax, 20(%rsp)
	mov	%ecx, 24(%rsp)
	call	emit
	jmp	reap
commandended:
	xor	%r12d, %r12d
	mov	%ecx, 40(%rsp)		# COMMAND's status, told once the others that ended are
more:
	mov	$61, %eax		# wait4(-1, &status, WNOHANG, NULL)
	mov	$-1, %rdi
	lea	32(%rsp), %rsi
	mov	$1, %edx
	xor	%r10d, %r10d
	syscall
	cmp	$-4, %rax
	je	more
	test	%rax, %rax
	jle	told
	movq	$0, 24(%rsp)
	movl	$5, 16(%rsp)
	mov	%eax, 20(%rsp)
	mov	32(%rsp), %ecx
	mov	%ecx, 24(%rsp)
	call	emit
	jmp	more
told:
	movq	$0, 24(%rsp)
	movl	$4, 16(%rsp)		# COMMAND ended: status, more
	mov	40(%rsp), %ecx
	mov	%ecx, 20(%rsp)
	xor	%ecx, %ecx
	test	%rax, %rax
	setz	%cl			# 0: children are left; -ECHILD: none
	mov	%ecx, 24(%rsp)
	mov	%rax, 48(%rsp)
	call	emit
	cmpq	$0, 48(%rsp)
	je	loop
	jmp	quit

handover:				# contain is gone: contain __shim keeper BASE carries on
	movq	$1, 64(%rsp)		# struct kernel_sigaction: SIG_IGN
	movq	$0, 72(%rsp)
	movq	$0, 80(%rsp)
	movq	$0, 88(%rsp)
	mov	$1, %r12d		# every signal but KILL, CHLD and STOP ignored, so
6:	cmp	$9, %r12d		# that none pending (blocked here) ends what follows
	je	7f
	cmp	$17, %r12d
	je	7f
	cmp	$19, %r12d
	je	7f
	mov	$13, %eax		# rt_sigaction(sig, &ign, NULL, 8)
	mov	%r12d, %edi
	lea	64(%rsp), %rsi
	xor	%edx, %edx
	mov	$8, %r10d
	syscall
7:	inc	%r12d
	cmp	$65, %r12d
	jne	6b
	mov	$14, %eax		# rt_sigprocmask(SIG_SETMASK, &before, NULL, 8)
	mov	$2, %edi
	lea	56(%rbp), %rsi
	xor	%edx, %edx
	mov	$8, %r10d
	syscall
	mov	$322, %eax		# execveat(BASE+4, "", argv, envp, AT_EMPTY_PATH)
	mov	fdbase(%rip), %edi
	add	$4, %edi
	lea	empty(%rip), %rsi
	lea	8(%r15), %rdx
	mov	(%r15), %rcx
	lea	16(%r15,%rcx,8), %r10
	mov	$0x1000, %r8d
	syscall
fail:
	mov	$231, %eax		# exit_group(125)
	mov	$125, %edi
	syscall
quit:
	mov	$231, %eax		# exit_group(0)
	xor	%edi, %edi
	syscall

emit:					# write the record at 16(%rsp) (the caller's) to BASE+1,
	mov	$1, %eax		# and a start or an end to the journal, BASE+3
	mov	fdbase(%rip), %edi
	add	$1, %edi
	lea	24(%rsp), %rsi
	mov	$16, %edx
	syscall
	mov	24(%rsp), %eax
	cmp	$1, %eax
	je	8f
	cmp	$4, %eax
	jne	9f
8:	mov	$1, %eax
	mov	fdbase(%rip), %edi
	add	$3, %edi
	lea	24(%rsp), %rsi
	mov	$16, %edx
	syscall
9:	ret

comm:
	.asciz	"contain-shim"
tty:
	.asciz	"/dev/tty"
empty:
	.byte	0
	.balign	4
fdbase:
