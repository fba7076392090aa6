// Package cli is the command line the Go clients of the client matrix share (see
// tests/clients/README.md): COMMAND BOOTSTRAP TOPIC ARG...
package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Args is one parsed command line.
type Args struct {
	Prog, Command, Topic string
	Bootstrap            []string
	Rest                 []string
}

// Parse reads os.Args, exiting with a usage line when they are too few.
func Parse(prog string) Args {
	if len(os.Args) < 5 {
		Fail(prog, "usage: %s create|produce|consume BOOTSTRAP TOPIC ARG...", prog)
	}
	return Args{Prog: prog, Command: os.Args[1], Bootstrap: strings.Split(os.Args[2], ","),
		Topic: os.Args[3], Rest: os.Args[4:]}
}

// Int is the i-th argument after the topic as a number.
func (a Args) Int(i int) int {
	if i >= len(a.Rest) {
		Fail(a.Prog, "%s: missing argument %d", a.Command, i+1)
	}
	n, err := strconv.Atoi(a.Rest[i])
	if err != nil {
		Fail(a.Prog, "%s: %v", a.Command, err)
	}
	return n
}

// Fail prints a sentence on stderr and exits 1.
func Fail(prog, format string, args ...any) {
	fmt.Fprintf(os.Stderr, prog+": "+format+"\n", args...)
	os.Exit(1)
}
