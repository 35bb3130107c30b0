package run

// For the tests of package run_test, which may import runcmd.
var (
	DetachArgv    = detachArgv
	RunValueFlags = runValueFlags
	RunBoolFlags  = runBoolFlags
)
