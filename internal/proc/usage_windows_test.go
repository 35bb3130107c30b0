package proc

import "golang.org/x/sys/windows"

func init() {
	// Wine's ntdll exports wine_get_version; Windows' does not.
	underWine = windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
