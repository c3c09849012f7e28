// Command image builds the operator's container image without a container
// engine: a static lockstep binary on an empty base, run as user 65532, with no
// shell. It writes an OCI image layout as a tarball that `docker load`,
// `podman load`, `skopeo copy oci-archive:` and `crane push` accept.
//
//	go run ./hack/image -repo . -o lockstep.tar
//
// The image is named after the chart's default (image.repository and the
// chart's appVersion) unless -image says otherwise.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
)

func main() {
	var o options
	flag.StringVar(&o.repo, "repo", "../..", "Root of the lockstep repository.")
	flag.StringVar(&o.image, "image", "", "Image reference (repository:tag); defaults to the chart's default image.")
	flag.StringVar(&o.out, "o", "lockstep.tar", "Output tarball.")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "GOARCH of the binary and the image.")
	flag.Parse()
	ref, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (%s)\n", o.out, ref)
}
