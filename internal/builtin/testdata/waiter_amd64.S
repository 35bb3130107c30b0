# The crash guard's waiter for linux/amd64: contain builds a static ELF
# from this code (internal/builtin) and runs it from a memfd. It waits,
# in a few system calls and no runtime, until contain has died, then
# executes contain __guard in its place.
#
# On entry (execve): fd 3 is the read end of a pipe whose only write end
# contain holds; fd 4 holds contain's orders; fd 5 is contain's binary,
# open; fd 6 is this program, which it closes; argv is the guard's own
# (contain-guard __guard PID fd:4). contain appends to this code the
# numbers of the signals to ignore, one byte each, then a 0.
#
# Assemble: as --64 -o w.o waiter_amd64.S && objcopy -O binary -j .text w.o w.bin
	.text
	.globl _start
_start:
	mov	%rsp, %r12		# argc, then argv, then envp
	sub	$32, %rsp		# struct kernel_sigaction: SIG_IGN, no flags
	movq	$1, (%rsp)
	movq	$0, 8(%rsp)
	movq	$0, 16(%rsp)
	movq	$0, 24(%rsp)
	lea	signals(%rip), %rbx
ignore:
	movzbl	(%rbx), %edi
	test	%edi, %edi
	jz	name
	mov	$13, %eax		# rt_sigaction(sig, &act, NULL, 8)
	mov	%rsp, %rsi
	xor	%edx, %edx
	mov	$8, %r10d
	syscall
	inc	%rbx
	jmp	ignore
name:
	mov	$157, %eax		# prctl(PR_SET_NAME, "contain-guard")
	mov	$15, %edi
	lea	comm(%rip), %rsi
	syscall
	mov	$3, %eax		# close(6)
	mov	$6, %edi
	syscall
wait:
	movl	$3, (%rsp)		# struct pollfd: fd 3, no events: POLLHUP only,
	movl	$0, 4(%rsp)		# whatever the pipe holds
	mov	$7, %eax		# poll(&pfd, 1, -1)
	mov	%rsp, %rdi
	mov	$1, %esi
	mov	$-1, %edx
	syscall
	cmp	$-4, %rax		# EINTR: again
	je	wait
	test	%rax, %rax		# another error: the guard waits itself
	js	guard
	testw	$0x38, 6(%rsp)		# POLLHUP, POLLERR or POLLNVAL
	jz	wait
guard:
	mov	$322, %eax		# execveat(5, "", argv, envp, AT_EMPTY_PATH)
	mov	$5, %edi
	lea	empty(%rip), %rsi
	lea	8(%r12), %rdx
	mov	(%r12), %rcx
	lea	16(%r12,%rcx,8), %r10
	mov	$0x1000, %r8d
	syscall
	mov	$231, %eax		# exit_group(127)
	mov	$127, %edi
	syscall
comm:
	.asciz	"contain-guard"
empty:
	.byte	0
signals:
