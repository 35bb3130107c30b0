//go:build linux && linkcli

package main

import (
	"os"

	"github.com/urfave/cli/v2"
)

func init() { linkCLI = func() { (&cli.App{}).Run(os.Args) } }
