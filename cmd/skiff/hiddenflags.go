package main

import (
	"flag"
	"fmt"
	"slices"
)

// hideFlags makes fs's usage leave out the named flags (settings for tests, not for operators);
// they still parse.
func hideFlags(fs *flag.FlagSet, names ...string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
		shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		shown.SetOutput(fs.Output())
		fs.VisitAll(func(f *flag.Flag) {
			if !slices.Contains(names, f.Name) {
				shown.Var(f.Value, f.Name, f.Usage)
			}
		})
		shown.PrintDefaults()
	}
}
