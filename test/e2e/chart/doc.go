// Package chart installs, upgrades and uninstalls the Helm chart for real on a
// throw-away local cluster. The code is behind the e2e build tag; this file has
// none so that tools run without it still see a package.
package chart
