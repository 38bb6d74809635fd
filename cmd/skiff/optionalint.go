package main

import "strconv"

// optionalInt64 is an integer flag whose absence is distinguishable from 0 (nil until set), shown
// with the default the configuration applies when it stays unset.
type optionalInt64 struct {
	p   **int64
	def int64
}

func (o optionalInt64) String() string {
	if o.p == nil || *o.p == nil {
		return strconv.FormatInt(o.def, 10)
	}
	return strconv.FormatInt(**o.p, 10)
}

func (o optionalInt64) Set(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return err
	}
	*o.p = &n
	return nil
}
