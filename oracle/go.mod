// The official chart checker (oac, beclab/Olares framework/oac) as a test oracle: see main.go.
// The app service of Olares 1.12.7 pins oac at commit 217f8c798b53; the newest pin read from
// beclab/Olares framework/app-service/go.mod is the one below. `make oracle` resolves it
// through the Go module proxy; to check against the 1.12.7 pin instead, run
// `go get github.com/beclab/Olares/framework/oac@217f8c798b53` here first.
module github.com/olares-pack/oracle

go 1.24

require github.com/beclab/Olares/framework/oac v0.0.0-20261008082607-2467f23e523b
