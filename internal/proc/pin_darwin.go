package proc

// ExitedPins tells, for each pin, whether its process has ended.
func ExitedPins(pins []Pin) []bool { return Darwin.exitedPins(pins) }
