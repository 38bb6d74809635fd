package main

import "strings"

// commaList is a string-slice flag as kube-apiserver's --requestheader-* flags take them: values
// separated by commas, and the flag repeatable.
type commaList struct{ p *[]string }

func (l commaList) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l commaList) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*l.p = append(*l.p, item)
		}
	}
	return nil
}
