// Command oac-oracle runs the official Olares chart checker on one chart folder and prints its
// verdict as one JSON object on stdout:
//
//	{"chart": "...", "accepted": false, "errors": ["..."], "oac": "v0.0.0-..."}
//
// It calls oac.Lint with no options, exactly as the Olares app service does before an install
// (beclab/Olares framework/app-service, installHandlerHelper.lintChart, from 1.12.6 / PR #3221),
// so "accepted" is what that installer's linter would say. The folder's own name matters to
// oac (chartfolder.CheckLayout, CheckSameVersion): name it after the app.
//
// Exit status: 0 when a verdict was printed (accepted or not), 2 on usage errors.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"

	oac "github.com/beclab/Olares/framework/oac"
)

const oacModule = "github.com/beclab/Olares/framework/oac"

type verdict struct {
	Chart    string   `json:"chart"`
	Accepted bool     `json:"accepted"`
	Errors   []string `json:"errors"`
	OAC      string   `json:"oac"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: oac-oracle CHART_FOLDER")
		os.Exit(2)
	}
	chart := os.Args[1]
	v := verdict{Chart: chart, Errors: []string{}, OAC: oacVersion()}
	if err := oac.Lint(chart); err != nil {
		v.Errors = flatten(err)
	} else {
		v.Accepted = true
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// flatten lists the errors joined by errors.Join (oac joins per-mode resource errors) one by
// one, so the caller can compare them with its own findings.
func flatten(err error) []string {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range joined.Unwrap() {
			out = append(out, flatten(e)...)
		}
		if len(out) > 0 {
			return out
		}
	}
	return []string{err.Error()}
}

func oacVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == oacModule {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "unknown"
}
