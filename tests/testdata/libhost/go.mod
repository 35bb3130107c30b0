module example.com/libhost

go 1.26.8

require github.com/contain-cli/contain v0.0.0

require (
	github.com/godbus/dbus/v5 v5.2.4 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/contain-cli/contain => ../../..
