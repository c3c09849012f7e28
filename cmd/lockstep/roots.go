package main

// The image is built on an empty base with no CA files: without a bundle of
// its own the hub could not verify a member whose apiserver has a publicly
// issued certificate. The fallback bundle is used only when the system has
// no roots.
import _ "golang.org/x/crypto/x509roots/fallback"
