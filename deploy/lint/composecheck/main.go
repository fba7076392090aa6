// composecheck loads a Compose file the way `docker compose config` does, with
// the Compose Specification's reference loader (compose-go): it interpolates
// variables, merges anchors and extends, validates the result against the
// Compose JSON schema and the loader's own checks (unknown keys, services that
// network_mode or depends_on name, secrets and volumes that are declared), and
// prints the normalised project. Any problem exits 1 with the loader's message.
//
// Usage: composecheck FILE [--quiet]
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: composecheck FILE [--quiet]")
		os.Exit(2)
	}
	quiet := len(os.Args) > 2 && os.Args[2] == "--quiet"
	opts, err := cli.NewProjectOptions([]string{os.Args[1]},
		cli.WithOsEnv, cli.WithDotEnv, cli.WithConsistency(true), cli.WithResolvedPaths(true))
	if err != nil {
		fmt.Fprintf(os.Stderr, "composecheck: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "composecheck: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	if quiet {
		return
	}
	out, err := project.MarshalYAML()
	if err != nil {
		fmt.Fprintf(os.Stderr, "composecheck: %v\n", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
