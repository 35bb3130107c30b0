// An assembly file, empty, so that sysctl_darwin.go may declare a function
// without a body (it is x/sys's, through go:linkname).
