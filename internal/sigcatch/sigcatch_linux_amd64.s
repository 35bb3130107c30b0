#include "textflag.h"

// handler(sig int32 in DI, info, ctx): write(writeFD, &sig, 1). The kernel
// restores every register at rt_sigreturn; the byte goes below the stack
// pointer's red zone.
TEXT ·handler(SB),NOSPLIT|NOFRAME,$0-0
	SUBQ	$256, SP
	MOVB	DI, 0(SP)
	MOVQ	·writeFD(SB), DI
	MOVQ	SP, SI
	MOVQ	$1, DX
	MOVQ	$1, AX // SYS_write
	SYSCALL
	ADDQ	$256, SP
	RET

TEXT ·restorer(SB),NOSPLIT|NOFRAME,$0-0
	MOVQ	$15, AX // SYS_rt_sigreturn
	SYSCALL
	INT	$3

TEXT ·handlerPC(SB),NOSPLIT,$0-8
	LEAQ	·handler(SB), AX
	MOVQ	AX, ret+0(FP)
	RET

TEXT ·restorerPC(SB),NOSPLIT,$0-8
	LEAQ	·restorer(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
